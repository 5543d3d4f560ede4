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

"""The controller and an agent over real RabbitMQ, on a real database.

The agent runs the ``simulated`` driver on a small scenario in real time
(a noisy neighbour with eight 64 KiB writers starts at t = 4 s next to two
rate-limited victims with 600 KiB/s floors). Its samples reach the
controller by the real :class:`ControllerAPI` casts, the controller
decides with the ``guarantee`` policy and casts leased caps back with the
real :class:`AgentAPI`; decisions land in PostgreSQL (SQLite when no
server runs) and notifications on RabbitMQ. Each test has its own
exchange, notification topic, host name and database.

With urgent samples on (``[agent] urgent_samples``) and a round interval
far longer than the test, the noisy neighbour's onset is decided between
two rounds: the victims' samples, marked urgent, make the controller
decide the domain at once.

An agent whose host's clock is 30 s ahead or behind (its service's
clock) is capped all the same: the controller learns the offset from its
samples and sends the leases on its clock.

Forged samples (from the future, the far past, negative rates, unknown
disks) and garbage messages are cast on the same bus first: dropped,
survived, never acted on. Stopping the controller (no second one) leaves
the caps to lapse at their lease: the agent restores the static limits by
itself.
"""

import os
import threading
import time
import uuid

import fixtures
import oslo_messaging
from oslo_messaging import conffixture

from iotguard.agent import service as agent_service
from iotguard.controller import service as controller_service
from iotguard.sim import scenario as scenario_mod
from iotguard.sim import world as world_mod
from iotguard.tests import base
from iotguard.tests.fixtures import database
from iotguard.tests.fixtures import rabbit
from iotguard.wire import batch as batch_mod
from iotguard.wire import rpc
from iotguard.wire import rpcapi

INTERVAL_S = 1.0
SAMPLE_S = 0.5
LEASE_S = 3.0
FLOOR = 614400.0
NOISY_AT = 4.0

SCENARIO = '''
name: %(name)s
duration_s: 120
interval_s: 1
tick_s: 0.02
domain:
  name: %(domain)s
  iops_4k: 300
  bytes_sec: 3400000
  sat_depth: 12
  depth_exponent: 0.2
  share_exponent: 1.5
  noise: 0.05
tiers:
  - name: paper
    min_bytes_sec: 614400
    weight: 1
vms:
  - name: noisy
    role: heavy
    tier: paper
    host: %(host)s
    jobs:
      - rw: randwrite
        bs: 65536
        steps:
          - {at: 0, processes: 0}
          - {at: %(noisy_at)s, processes: 8}
  - name: v1
    role: light
    tier: paper
    host: %(host)s
    jobs:
      - {rw: randwrite, bs: 65536, processes: 1, rate_kbs: 800}
  - name: v2
    role: light
    tier: paper
    host: %(host)s
    jobs:
      - {rw: randwrite, bs: 65536, processes: 1, rate_kbs: 600}
'''


def seed_membership(db, domain, host, scenario_file):
    """What membership would find: the domain, tier and disks."""
    db.domain_create(domain, 'local', iops_4k=300.0, bytes_sec=3400000.0,
                     policy='guarantee')
    db.tier_create({'name': 'paper', 'description': '', 'min_iops': 0.0,
                    'min_bytes_sec': FLOOR, 'max_iops': 0.0,
                    'max_bytes_sec': 0.0, 'weight': 1.0, 'is_public': True})
    world = world_mod.World(scenario_mod.load(scenario_file))
    disks = {}
    for disk_id in world.disk_ids():
        info = world.disk_info(disk_id)
        db.disk_upsert(info['instance_uuid'], info['dev'], host, domain,
                       info['project_id'])
        db.disk_tier_set(info['instance_uuid'], info['dev'], 'paper',
                         'flavor', info['project_id'])
        disks[info['name']] = (info['instance_uuid'], info['dev'])
    return disks


class Listener:
    """Collects iotguard's notifications from RabbitMQ."""

    def __init__(self):
        self.got = []
        self.lock = threading.Lock()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        with self.lock:
            self.got.append((publisher_id, event_type, payload))

    warn = info


class ControllerOverRabbitTest(base.TestCase):

    def setUp(self):
        super().setUp()
        run = rabbit.run_id(self)
        self.host = 'cn-' + run
        self.domain = 'ft-pool-' + run
        backend = ('postgresql' if database.unavailable('postgresql') is None
                   else 'sqlite')
        self.db = self.useFixture(database.Database(backend, self.conf)).db

        path = self.useFixture(fixtures.TempDir()).path
        scenario_file = os.path.join(path, 'noisy.yaml')
        with open(scenario_file, 'w') as f:
            f.write(SCENARIO % {'name': 'noisy-' + run, 'domain': self.domain,
                                'host': self.host, 'noisy_at': NOISY_AT})
        self.flags(host=self.host)
        self.flags(virt_driver='simulated', simulated_scenario=scenario_file,
                   sample_interval=SAMPLE_S, state_file='', group='agent')
        # Fanout exchanges are not per control_exchange: other tests'
        # agents may be heard; do not record their disks here.
        self.flags(decision_interval=INTERVAL_S, lease_seconds=LEASE_S,
                   register_local_disks=False, group='controller')
        # The exchange is read when the transport is made: set it first.
        self.useFixture(conffixture.ConfFixture(self.conf))
        self.conf.set_override('control_exchange', 'iotguard-ctl-' + run)
        self.transport = rpc.get_transport(self.conf, url=rabbit.URL)
        self.addCleanup(self.transport.cleanup)
        self.ntransport = oslo_messaging.get_notification_transport(
            self.conf, url=rabbit.URL)
        self.addCleanup(self.ntransport.cleanup)
        topic = 'iotguard-notifications-' + run
        self.flags(driver=['messagingv2'], topics=[topic],
                   group='oslo_messaging_notifications')
        self.listener = Listener()
        server = oslo_messaging.get_notification_listener(
            self.ntransport, [oslo_messaging.Target(topic=topic)],
            [self.listener], executor='threading')
        server.start()
        self.addCleanup(server.wait)
        self.addCleanup(server.stop)

        self.disks = seed_membership(self.db, self.domain, self.host,
                                     scenario_file)

    def start(self, agent_clock=None):
        self.start_agent(agent_clock)
        self.start_controller()

    def start_agent(self, agent_clock=None):
        self.agent = agent_service.AgentService(
            self.conf, transport=self.transport, clock=agent_clock)
        self.agent.start()
        self.addCleanup(self.agent.stop)

    def start_controller(self):
        self.controller = controller_service.ControllerService(
            self.conf, transport=self.transport,
            notification_transport=self.ntransport, db=self.db)
        self.controller.start()
        self.started = time.monotonic()
        self.addCleanup(self.controller.stop)

    def rate(self, name):
        sample = self.controller.store.latest(*self.disks[name])
        if not sample or not sample['rated']:
            return None
        return sample['read_bytes_sec'] + sample['write_bytes_sec']

    def caps(self):
        return {name: d['cap'] for name in self.disks
                for d in self.db.disk_list(instance_uuid=self.disks[name][0])}

    def forge(self):
        """Bad input over the real bus: must be dropped, never acted on.

        v2 is made to look like a flood (10 MB/s, slow, busy) in samples
        from the future and from the far past; a garbage batch, a sample
        of an unknown disk and batches with a rate out of range or
        negative come along.
        """
        api = rpcapi.ControllerAPI(self.transport)
        cast = api.client.prepare().cast
        now = time.time()
        flood = dict(read_iops=0.0, write_iops=160.0, read_bytes_sec=0.0,
                     write_bytes_sec=10485760.0, read_latency_ms=0.0,
                     write_latency_ms=400.0)

        def v2(timestamp, uuid_=None, **rates):
            return batch_mod.Row(uuid_ or self.disks['v2'][0], 'vda',
                                 timestamp, SAMPLE_S,
                                 rates=dict(flood, **rates))
        cast({}, 'report_samples', host=self.host, samples='garbage')
        # rates out of range, negative: the whole batch dropped
        for bad in (1e16, -1.0):
            wire = batch_mod.Batch.of_rows([v2(now)]).to_wire()
            wire['disks']['write_bytes_sec'] = [bad]
            cast({}, 'report_samples', host=self.host, samples=wire)
        # well formed, but from the future, the far past, an unknown disk
        api.report_samples({}, self.host, batch_mod.Batch.of_rows([
            v2(now + 3600)]))
        api.report_samples({}, self.host, batch_mod.Batch.of_rows([
            v2(now - 3600), v2(now, str(uuid.uuid4()))]))
        api.agent_heartbeat({}, self.host, 'garbage')

    def test_an_urgent_sample_is_decided_long_before_the_round(self):
        # One round at the start (nothing heard yet: it only warms up),
        # the next one a minute later: any cap within the test comes from
        # an urgent decision.
        round_s = 60.0
        self.flags(decision_interval=round_s, lease_seconds=3 * round_s,
                   urgent_interval=1.0, group='controller')
        self.flags(urgent_samples=True, group='agent')
        rounds = []
        real_tick = controller_service.ControllerService.tick

        def tick(service, now=None):
            rounds.append(time.monotonic())
            real_tick(service, now)
        self.useFixture(fixtures.MockPatchObject(
            controller_service.ControllerService, 'tick', tick))
        self.start()
        self.assertTrue(base.wait_for(
            lambda: (self.rate('v1') or FLOOR) < 0.9 * FLOOR, 15),
            'the noisy neighbour never hurt v1')
        hurt = time.monotonic()
        self.assertTrue(base.wait_for(lambda: self.caps()['noisy'], 10),
                        'the noisy neighbour was never capped')
        capped_after = time.monotonic() - hurt
        # The victims' next samples (0.5 s) are urgent, the controller
        # decides at once: a second or two, on a loaded machine a few;
        # the round would have taken a minute.
        self.assertLess(capped_after, 5.0)
        self.assertEqual(1, len(rounds))
        self.assertLess(time.monotonic() - rounds[0], round_s)
        audit = self.db.decision_list(limit=100, domain=self.domain)
        self.assertIn('cap', {row['action'] for row in audit})
        self.assertEqual({self.disks['noisy'][0]},
                         {row['instance_uuid'] for row in audit})
        print('capped %.2f s after v1 fell below its floor, %.1f s after '
              'the only round' % (capped_after,
                                  time.monotonic() - rounds[0]))

    def test_the_watch_sends_a_sample_before_its_interval(self):
        # Samples every 10 s: the first after the onset (t = 4 s) would
        # come at t = 10 s. The agent's watch (reads every 0.25 s) sees the
        # victims' queue fill and sends the sample at once; the round
        # (a minute) never comes within the test. (Without the watch this
        # fails: capped at about 10 s.)
        round_s = 60.0
        self.flags(decision_interval=round_s, lease_seconds=3 * round_s,
                   urgent_interval=1.0, group='controller')
        self.flags(urgent_samples=True, sample_interval=10.0,
                   watch_interval=0.25, group='agent')
        self.start()
        self.assertTrue(base.wait_for(lambda: self.caps()['noisy'], 15),
                        'the noisy neighbour was never capped')
        capped_at = time.monotonic() - self.started
        self.assertLess(capped_at, NOISY_AT + 4.0)
        self.assertIn('cap', {row['action'] for row in self.db.decision_list(
            limit=100, domain=self.domain)})
        print('capped %.2f s after the start (the onset at %.0f s, samples '
              'every 10 s)' % (capped_at, NOISY_AT))

    def test_a_controller_started_into_a_flood_decides_on_its_samples(self):
        # As after a restart (or the broker's return): the noisy neighbour
        # floods, no cap in force. The round at the start hears nothing yet
        # and only warms up; the next is a minute later. The first samples
        # heard resume the disks, one is short of its floor: the domain is
        # decided then (without urgent samples from the agent).
        round_s = 60.0
        self.flags(decision_interval=round_s, lease_seconds=3 * round_s,
                   urgent_interval=1.0, group='controller')
        rounds = []
        real_tick = controller_service.ControllerService.tick

        def tick(service, now=None):
            real_tick(service, now)
            rounds.append(service.last_results)
        self.useFixture(fixtures.MockPatchObject(
            controller_service.ControllerService, 'tick', tick))
        self.start_agent()
        time.sleep(NOISY_AT + 2.0)
        self.start_controller()
        capped = base.wait_for(lambda: self.caps()['noisy'], 5.0)
        after = time.monotonic() - self.started
        if rounds and rounds[0] and rounds[0][0].skipped != 'warming up':
            self.skipTest('a sample came before the first round: it '
                          'decided (%s)' % rounds[0])
        self.assertTrue(capped, 'the noisy neighbour was not capped within '
                        '5 s of the start')
        self.assertEqual(1, len(rounds))
        self.assertIn('cap', {row['action'] for row in self.db.decision_list(
            limit=100, domain=self.domain)})
        print('capped %.2f s after the controller started' % after)

    def test_noisy_neighbour_capped_floors_restored_then_lapse(self):
        self.start()
        self.forge()
        # Before the noise: nothing to do.
        self.assertTrue(base.wait_for(lambda: self.rate('v1'), 5))
        self.assertEqual({'noisy': None, 'v1': None, 'v2': None},
                         self.caps())

        # The noise starts at NOISY_AT: the victims fall below their floor.
        self.assertTrue(base.wait_for(
            lambda: (self.rate('v1') or FLOOR) < 0.9 * FLOOR, 10),
            'the noisy neighbour never hurt v1')
        hurt = time.monotonic()
        capped = base.wait_for(lambda: self.caps()['noisy'], 10)
        self.assertTrue(capped, 'the noisy neighbour was never capped')
        capped_after = time.monotonic() - hurt

        def restored():
            return all((self.rate(v) or 0) >= 0.95 * FLOOR
                       for v in ('v1', 'v2'))
        # The first cap (the noisy disk's fair share of what the domain
        # served) may not be enough: the domain serves less while the
        # noisy disk's backlog drains. The next decision that sees a
        # sample under the cap cuts again (guarantee waits for one: a
        # disk still above its cap is not cut again on that sample), and
        # a sample later the floors show (2.5-3 s after the cap here), a
        # round of slack for a busy host: four intervals in all.
        self.assertTrue(base.wait_for(restored, 4 * INTERVAL_S),
                        'floors not restored within four intervals of '
                        'the cap: v1 %s, v2 %s' % (self.rate('v1'),
                                                   self.rate('v2')))
        restored_after = time.monotonic() - hurt
        caps = self.caps()
        self.assertIsNone(caps['v1'])
        self.assertIsNone(caps['v2'])   # the forged flood was not believed
        self.assertGreaterEqual(self.controller.manager.stats['dropped'], 4)
        self.assertGreater(self.controller.store.rejected, 1)

        # The cap carries a lease, renewed every round, and the audit
        # trail explains it.
        state = rpcapi.AgentAPI(self.transport, timeout=15).get_state(
            {}, self.host)
        held = {(d['instance_uuid'], d['dev']): d for d in state['disks']}
        noisy = held[self.disks['noisy']]
        self.assertIsNotNone(noisy['cap'])
        self.assertGreater(noisy['lease_expires_at'], time.time())
        self.assertLessEqual(noisy['lease_expires_at'],
                             time.time() + LEASE_S + 0.5)
        first_lease = self.caps()['noisy']['lease_expires_at']
        self.assertTrue(base.wait_for(
            lambda: (self.caps()['noisy'] or {}).get(
                'lease_expires_at', first_lease) > first_lease,
            2 * INTERVAL_S), 'the lease was not renewed')
        audit = self.db.decision_list(limit=100, domain=self.domain)
        self.assertTrue(audit)
        for row in audit:
            self.assertEqual(self.disks['noisy'][0], row['instance_uuid'])
            self.assertIn('guarantee:', row['reason'])
            self.assertIn('load', row['numbers'])
            self.assertIn('floor', row['numbers'])
        cap_ids = {str(r['id']) for r in audit if r['action'] == 'cap'}
        self.assertIn(noisy['decision_id'], cap_ids)

        events = base.wait_for(lambda: [
            e for e in list(self.listener.got)
            if e[1] == 'iotguard.cap.apply'], 5)
        self.assertTrue(events, 'no iotguard.cap.apply notification')
        self.assertEqual('iotguard-controller.' + self.host, events[0][0])
        self.assertEqual(self.disks['noisy'][0], events[0][2]['instance_uuid'])

        # No controller any more: the cap lapses at its lease.
        self.controller.stop()
        stopped = time.monotonic()
        world = self.agent.driver.world
        noisy_id = '%s/%s' % self.disks['noisy']

        def lapsed():
            return (not self.agent.manager.caps_count()
                    and world.get_iotune(noisy_id)
                    == world.static_iotune(noisy_id))
        self.assertTrue(base.wait_for(lapsed, LEASE_S + 2 * SAMPLE_S + 0.5),
                        'the cap did not lapse at its lease')
        lapsed_after = time.monotonic() - stopped
        print('capped %.2f s, floors restored %.2f s after v1 fell below '
              'its floor; lapsed %.2f s after the controller stopped'
              % (capped_after, restored_after, lapsed_after))

    def check_skewed(self, skew):
        log = self.useFixture(fixtures.FakeLogger())
        self.start(agent_clock=lambda: time.time() + skew)
        self.assertTrue(base.wait_for(
            lambda: (self.rate('v1') or FLOOR) < 0.9 * FLOOR, 15),
            'the noisy neighbour never hurt v1')
        self.assertTrue(base.wait_for(lambda: self.caps()['noisy'], 10),
                        'the noisy neighbour was never capped')

        def restored():
            return all((self.rate(v) or 0) >= 0.95 * FLOOR
                       for v in ('v1', 'v2'))
        self.assertTrue(base.wait_for(restored, 6 * INTERVAL_S),
                        'floors not restored: v1 %s, v2 %s' % (
                            self.rate('v1'), self.rate('v2')))
        clocks = self.controller.store.clocks
        self.assertAlmostEqual(skew, clocks.offset(self.host), delta=0.5)
        # the agent holds the cap, its lease on its own clock: by the true
        # clock, never longer than a lease from now
        state = rpcapi.AgentAPI(self.transport, timeout=15).get_state(
            {}, self.host)
        held = {(d['instance_uuid'], d['dev']): d for d in state['disks']}
        lease = held[self.disks['noisy']]['lease_expires_at']
        self.assertIsNotNone(lease)
        self.assertGreater(lease - skew, time.time())
        self.assertLessEqual(lease - skew, time.time() + LEASE_S + 0.5)
        # samples of the first batch or two refused, not more
        self.assertLess(self.controller.store.rejected, 4 * len(self.disks))
        said = [x for x in log.output.splitlines()
                if 'The clock of host %s' % self.host in x]
        self.assertEqual(1, len(said), log.output)
        self.assertIn('30.0 s %s' % ('ahead' if skew > 0 else 'behind'),
                      said[0])

    def test_a_host_30_s_ahead(self):
        self.check_skewed(30.0)

    def test_a_host_30_s_behind(self):
        self.check_skewed(-30.0)
