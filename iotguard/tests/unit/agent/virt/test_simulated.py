# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

from iotguard.agent import manager
from iotguard.agent import sampler
from iotguard.agent.virt import simulated
from iotguard.sim import scenario
from iotguard.sim import world
from iotguard.tests import base as test_base
from iotguard.tests.unit.agent import fakes
from iotguard.wire import caps

U1 = fakes.UUID_A
U2 = fakes.UUID_B


def info(uuid, dev, host, volume_id=None):
    return {'instance_uuid': uuid, 'name': 'vm-' + dev, 'dev': dev,
            'host': host, 'domain': 'local:' + host, 'project_id': 'p',
            'volume_id': volume_id, 'tier': 'gold'}


class Clock:
    def __init__(self):
        self.now = 50.0

    def __call__(self):
        return self.now


class SimulatedDriverTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(host='h1')
        self.world = fakes.FakeWorld({
            U1 + '/vda': (info(U1, 'vda', 'h1'), {'total_iops_sec': 500}),
            U1 + '/vdb': (info(U1, 'vdb', 'h1', 'vol-9'), {}),
            U2 + '/vda': (info(U2, 'vda', 'h2'), {}),
        })

    def test_shows_only_this_hosts_disks(self):
        d = simulated.SimulatedDriver(self.conf, world=self.world)
        d.start()
        disks = d.list_disks()
        self.assertEqual({(U1, 'vda'), (U1, 'vdb')}, set(disks))
        self.assertEqual('vol-9', disks[(U1, 'vdb')].volume_id)
        self.assertEqual(caps.full({'total_iops_sec': 500}),
                         disks[(U1, 'vda')].static)
        self.assertEqual(set(disks), set(d.get_block_stats().as_dict()))

    def test_external_world_is_not_advanced(self):
        d = simulated.SimulatedDriver(self.conf, world=self.world)
        d.start()
        d.get_block_stats().as_dict()
        self.assertEqual([], self.world.steps)

    def test_own_world_follows_the_clock(self):
        clock = Clock()
        d = simulated.SimulatedDriver(self.conf, clock=clock)
        # As if built from [agent] simulated_scenario.
        d._world = d._owned = self.world
        d.start()
        clock.now += 5.0
        stats = d.get_block_stats().as_dict()
        self.assertEqual([5.0], self.world.steps)
        self.assertEqual(500, stats[(U1, 'vda')]['wr_reqs'])

    def test_iotune_round_trip(self):
        d = simulated.SimulatedDriver(self.conf, world=self.world)
        d.start()
        d.set_iotune(U1, 'vda', {'total_iops_sec': 200})
        self.assertEqual(caps.full({'total_iops_sec': 200}),
                         d.get_iotune(U1, 'vda'))
        disk_id, params = self.world.set_calls[-1]
        self.assertEqual(U1 + '/vda', disk_id)
        self.assertEqual(set(caps.IOTUNE_KEYS), set(params))

    def test_world_read_and_written_under_the_lock(self):
        held = []

        class Lock:
            def __enter__(self):
                held.append(True)

            def __exit__(self, *exc_info):
                held.pop()

        seen = []
        for name in ('counter_array', 'get_iotune', 'set_iotune'):
            def under_lock(*args, _call=getattr(self.world, name),
                           _name=name):
                seen.append((_name, bool(held)))
                return _call(*args)
            setattr(self.world, name, under_lock)
        d = simulated.SimulatedDriver(self.conf, world=self.world,
                                      lock=Lock())
        d.start()
        d.get_block_stats()
        d.set_iotune(U1, 'vda', {'total_iops_sec': 200})
        d.get_iotune(U1, 'vda')
        self.assertEqual([('counter_array', True), ('set_iotune', True),
                          ('get_iotune', True)], seen)

    def test_scenario_required_without_world(self):
        d = simulated.SimulatedDriver(self.conf)
        self.assertRaises(ValueError, d.start)


class RealWorldTest(test_base.TestCase):
    """The driver, manager and sampler over iotguard.sim's real World."""

    def setUp(self):
        super().setUp()
        self.flags(host='h1')
        self.flags(sample_interval=5.0, group='agent')
        data = {
            'name': 'agent-unit', 'duration_s': 600, 'interval_s': 5.0,
            'tick_s': 0.5,
            'domain': {'name': 'pool', 'iops_4k': 2000.0,
                       'bytes_sec': 200.0e6},
            'tiers': [{'name': 'std'}],
            'vms': [
                {'name': 'noisy', 'tier': 'std', 'host': 'h1',
                 'limits': {'total_iops_sec': 5000},
                 'jobs': [{'rw': 'randwrite', 'bs': 4096, 'iodepth': 8}]},
                {'name': 'quiet', 'tier': 'std', 'host': 'h1',
                 'volume_id': 'vol-q',
                 'jobs': [{'rw': 'randread', 'bs': 4096, 'iodepth': 1}]},
                {'name': 'elsewhere', 'tier': 'std', 'host': 'h2',
                 'jobs': [{'rw': 'randread', 'bs': 4096}]},
            ]}
        self.world = world.World(scenario.parse(data), seed=0)
        self.driver = simulated.SimulatedDriver(self.conf, world=self.world)
        self.driver.start()
        self.noisy = (world.instance_uuid('agent-unit', 'noisy'), 'vda')

    def sampler(self, mgr):
        self.api = fakes.FakeControllerAPI()
        return sampler.Sampler(self.conf, self.driver, mgr, self.api,
                               clock=lambda: self.world.now,
                               wall_clock=lambda: 1000.0 + self.world.now)

    def test_cap_shows_in_measured_rate_and_lease_restores(self):
        mgr = manager.AgentManager(self.conf, self.driver,
                                   clock=lambda: 1000.0 + self.world.now,
                                   store=fakes.MemoryStore())
        s = self.sampler(mgr)

        def noisy_iops():
            self.world.step(5.0)
            mgr.periodic()
            batch = s.run_once()
            disks = batch.to_wire()['disks']
            i = list(zip(disks['instance_uuid'], disks['dev'])).index(
                self.noisy)
            return batch, disks['write_iops'][i]

        noisy_iops()
        batch, before = noisy_iops()
        self.assertEqual(2, len(batch.dev))   # not h2's disk
        self.assertGreater(before, 400)
        mgr.apply_caps({}, [{'instance_uuid': self.noisy[0], 'dev': 'vda',
                             'limits': {'total_iops_sec': 100},
                             'lease_expires_at': 1000.0 + self.world.now
                             + 8.0,
                             'decision_id': 'd'}])
        self.assertEqual(100, self.world.get_iotune(
            '%s/%s' % self.noisy)['total_iops_sec'])
        _batch, capped = noisy_iops()
        self.assertLess(capped, 115)
        noisy_iops()                                  # lease lapses here
        self.assertEqual(5000, self.world.get_iotune(
            '%s/%s' % self.noisy)['total_iops_sec'])
        _batch, after = noisy_iops()
        self.assertGreater(after, 400)
