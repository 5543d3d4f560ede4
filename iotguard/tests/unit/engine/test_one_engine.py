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

"""One engine: the controller, the simulator and the all-in-one plan alike.

Each of them is run once with :func:`iotguard.engine.plan.plan` and
:meth:`iotguard.policy.base.DomainSnapshot.of_samples` wrapped; the
wrappers must see the round of each, so none of them builds its own
picture of the disks or decides on its own what to do with a policy's
decisions.
"""

import fixtures

from iotguard.cmd import allinone
from iotguard.controller import loop as controller_loop
from iotguard.controller import samples
from iotguard.engine import plan
from iotguard import policy as policy_mod
from iotguard.policy import base as policy_base
from iotguard.sim import loop as sim_loop
from iotguard.tests import base
from iotguard.tests.unit.controller import fakes
from iotguard.tests.unit.sim import helpers

T0 = 1_800_000_000.0


class OneEngineTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.plan = self.useFixture(fixtures.MockPatch(
            'iotguard.engine.plan.plan', wraps=plan.plan)).mock
        self.build = self.useFixture(fixtures.MockPatch(
            'iotguard.policy.base.DomainSnapshot.of_samples',
            wraps=policy_base.DomainSnapshot.of_samples)).mock

    def planned(self):
        """The domains of the snapshots planned, one a call."""
        return [c.args[0].domain for c in self.plan.call_args_list]

    def built(self):
        """The domains of the snapshots built, one a call."""
        return [c.args[0] for c in self.build.call_args_list]

    def test_the_controller_round(self):
        self.flags(decision_interval=5.0, lease_seconds=15.0,
                   group='controller')
        db = fakes.real_db(self)
        domain = fakes.add_domain(db, 'pool', policy='static')
        disk = fakes.add_disk(db, 'pool', 'cn1',
                              fakes.tier('gold', max_iops=500.0))
        store = samples.SampleStore(5.0, clock=lambda: T0)
        fakes.add(store, fakes.sample(disk['instance_uuid'],
                                      timestamp=T0 - 1), received_at=T0 - 1)
        agents = fakes.FakeAgentAPI()
        rounds = controller_loop.DomainLoop(
            self.conf, db, store, agents,
            fakes.FakeNotifier(), clock=lambda: T0)
        self.assertEqual(1, rounds.run_once(domain, T0).applied)
        self.assertEqual(['pool'], self.planned())
        self.assertEqual(['pool'], self.built())
        self.assertEqual('apply_caps', agents.casts[0][0])

    def test_the_simulator_loop(self):
        scenario = helpers.make(duration_s=15)
        run = sim_loop.run(scenario, policy_mod.load('guarantee'))
        self.assertEqual([scenario.domain.name] * 3, self.planned())
        self.assertEqual([scenario.domain.name] * 3, self.built())
        self.assertEqual(3, len(run.times))

    def test_the_all_in_one(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        # it would send the test runner's logs to its file
        self.useFixture(fixtures.MockPatch('oslo_log.log.setup'))
        aio = allinone.AllInOne(allinone.Options(
            scenario='paper-4vm', duration_s=10.0, port=0), tmp)
        self.addCleanup(aio.stop)
        aio.start()
        aio.window(0)
        aio.window(1)
        self.assertEqual([aio.scenario.domain.name] * 2, self.planned())
        self.assertEqual([aio.scenario.domain.name] * 2, self.built())
