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

"""The simulator and the all-in-one record the same run the same way.

For every scenario ``iotguard-sim`` ships:

* uncapped (``none``): the real all-in-one (API, controller, agents over
  the ``fake://`` transport, SQLite), cut to a few windows, records
  exactly what the simulator's loop records for the same scenario (and
  capped too on ``paper-4vm``, end to end);
* capped (``guarantee``): the simulator's run is replayed through the
  all-in-one's side: each cap and release the simulator's loop planned
  goes, at the same instant, through the agent's cap code
  (:class:`~iotguard.agent.manager.AgentManager` on the ``simulated``
  driver over the world, under a lock as in the all-in-one),
  and the windows are recorded as :meth:`AllInOne.window` records them.
  Both runs must agree series by series, the caps in force included.
"""

import threading
from unittest import mock

import fixtures
import numpy as np

from iotguard.agent import manager
from iotguard.agent.virt import simulated
from iotguard.cmd import allinone
from iotguard.engine import plan as plan_mod
from iotguard import policy as policy_mod
from iotguard.sim import loop
from iotguard.sim import scenario as scenario_mod
from iotguard.sim import world as world_mod
from iotguard.tests import base
from iotguard.tests.unit.agent import fakes

SERIES = ('times', 'work', 'kbs', 'latency_ms', 'demand', 'slots',
          'capacity', 'queue', 'response_ms', 'cap_kbs', 'floor',
          'floor_kbs', 'weight')
#: Windows of the uncapped all-in-one runs and of the capped replays.
UNCAPPED_S = 30.0
CAPPED_S = 100.0


def planned_changes(sc, policy):
    """The simulator's run and its planned changes by instant."""
    changes = {}
    real = plan_mod.plan

    def plan(snapshot, decisions, in_force, now, *args):
        todo = real(snapshot, decisions, in_force, now, *args)
        changes[now] = [(c.decision.disk_id, c.limits)
                        for c in todo.changes]
        return todo

    with mock.patch.object(loop.plan_mod, 'plan', plan):
        run = loop.run(sc, policy_mod.load(
            policy, **sc.policies.get(policy, {})), 0)
    return run, changes


class OneRecorderTest(base.TestCase):

    def assertSameRun(self, want, got, name):
        self.assertEqual(want.names, got.names, name)
        self.assertEqual(want.scenario.duration_s, got.scenario.duration_s)
        for field in SERIES:
            np.testing.assert_allclose(
                getattr(want, field), getattr(got, field), rtol=1e-12,
                atol=1e-12, err_msg='%s: %s' % (name, field))

    def all_in_one(self, name, policy, duration_s):
        """The real all-in-one's run and the simulator's of the same."""
        # it would send the test runner's logs to its file
        self.useFixture(fixtures.MockPatch('oslo_log.log.setup'))
        tmp = self.useFixture(fixtures.TempDir()).path
        aio = allinone.AllInOne(allinone.Options(
            scenario=name, policy=policy, duration_s=duration_s, port=0,
            speed=1e9), tmp)
        try:
            aio.start()
            got = aio.run()
        finally:
            aio.stop()
        self.assertEqual(0, aio.late_windows, name)
        sc = aio.scenario
        want = loop.run(sc, policy_mod.load(
            policy, **sc.policies.get(policy, {})), 0)
        return want, got

    def test_uncapped_every_scenario(self):
        for name in scenario_mod.names():
            want, got = self.all_in_one(name, 'none', UNCAPPED_S)
            self.assertSameRun(want, got, name)
            self.assertTrue(np.isnan(got.cap_kbs).all(), name)

    def test_capped_paper_4vm_end_to_end(self):
        # The real controller and agents decide and cap as the simulator
        # does (paper-4vm: no two disks alike, so the order the controller
        # lists them in cannot break a tie differently).
        want, got = self.all_in_one('paper-4vm', 'guarantee', 150.0)
        self.assertSameRun(want, got, 'paper-4vm')
        self.assertEqual([(a.time, a.disk, a.action) for a in want.actions],
                         [(round(a.time, 3), a.disk, a.action)
                          for a in got.actions])
        self.assertIn('cap', [a.action for a in got.actions])

    def replay(self, sc, changes):
        """The all-in-one's side of a run whose caps are ``changes``."""
        world = world_mod.World(sc, seed=0)
        lock = threading.RLock()
        agents = {}
        for host in sorted({world.disk_info(d)['host']
                            for d in world.disk_ids()}):
            conf = allinone.make_conf(host)
            driver = simulated.SimulatedDriver(
                conf, world=world, clock=lambda: world.now, lock=lock)
            agents[host] = manager.AgentManager(
                conf, driver, clock=lambda: world.now,
                store=fakes.MemoryStore())
            agents[host].periodic()
        recorder = loop.Recorder(sc, world)
        windows = int(round(sc.duration_s / sc.interval_s))
        for k in range(windows):
            with lock:     # as AllInOne.window
                recorder.begin(k)
                world.step(sc.interval_s)
                recorder.end(k)
            for disk_id, limits in changes.get(world.now, ()):
                info = world.disk_info(disk_id)
                disk = {'instance_uuid': info['instance_uuid'],
                        'dev': info['dev']}
                agent = agents[info['host']]
                if limits is None:
                    agent.release_caps({}, [disk])
                else:
                    agent.apply_caps({}, [dict(
                        disk, limits=limits, lease_expires_at=1e12,
                        decision_id='d%d' % k)])
        return recorder.run(windows)

    def check_capped(self, name):
        sc = allinone.cut(scenario_mod.load(name), CAPPED_S)
        want, changes = planned_changes(sc, 'guarantee')
        # not vacuous: every shipped scenario caps within CAPPED_S
        self.assertIn('cap', [a.action for a in want.actions], name)
        self.assertSameRun(want, self.replay(sc, changes), name)
        self.assertTrue(np.isfinite(want.cap_kbs).any(), name)

    def test_every_scenario_is_checked_capped(self):
        self.assertEqual(
            sorted(scenario_mod.names()),
            sorted(n[len('test_capped_'):].replace('_', '-')
                   for n in dir(self) if n.startswith('test_capped_')
                   and not n.endswith('_end_to_end')))


def _capped_test(name):
    def test(self):
        self.check_capped(name)
    return test


for _name in scenario_mod.names():
    setattr(OneRecorderTest, 'test_capped_' + _name.replace('-', '_'),
            _capped_test(_name))
