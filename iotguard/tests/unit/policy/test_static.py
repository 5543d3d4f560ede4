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

from iotguard.policy import base
from iotguard.policy import static
from iotguard.tests import base as test_base
from iotguard.tests.unit.policy import fakes

GOLD = base.Tier('gold', min_iops=50, max_iops=400, max_bytes_sec=8e6)


class TestStaticPolicy(test_base.TestCase):

    def decide(self, *disks):
        return fakes.by_disk(static.StaticPolicy().decide(
            fakes.snapshot(*disks), None, 10.0)[0])

    def test_caps_at_the_tier_ceiling(self):
        decisions = self.decide(fakes.disk('a', ops=5, tier=GOLD))
        self.assertEqual(base.CAP, decisions['a'].action)
        self.assertEqual({'total_iops_sec': 400,
                          'total_bytes_sec': 8000000},
                         decisions['a'].limits)

    def test_tighter_static_ceiling_wins_per_kind(self):
        decisions = self.decide(fakes.disk('a', tier=GOLD, static_iops=300,
                                           static_bytes_sec=9e6))
        self.assertEqual(300.0, decisions['a'].iops)
        self.assertEqual(8e6, decisions['a'].bytes_sec)

    def test_no_ceiling_no_cap_and_dynamic_cap_released(self):
        decisions = self.decide(
            fakes.disk('free', ops=900),
            fakes.disk('leftover', ops=9, cap_iops=10, cap_set_at=0.0))
        self.assertEqual(['leftover'], list(decisions))
        self.assertEqual(base.RELEASE, decisions['leftover'].action)

    def test_already_at_ceiling_gets_nothing(self):
        decisions = self.decide(fakes.disk('a', tier=GOLD, cap_iops=400,
                                           cap_bytes_sec=8e6,
                                           cap_set_at=0.0))
        self.assertEqual({}, decisions)

    def test_stale_disk_is_loosened_but_never_tightened(self):
        decisions = self.decide(
            fakes.disk('uncapped', tier=GOLD, stale=True),
            fakes.disk('tight', tier=GOLD, cap_iops=100, cap_bytes_sec=8e6,
                       cap_set_at=0.0, stale=True))
        self.assertEqual(['tight'], list(decisions))
        self.assertEqual(400.0, decisions['tight'].iops)

    def test_takes_no_parameters(self):
        err = self.assertRaises(ValueError, static.StaticPolicy, rate=0.5)
        self.assertIn('rate', str(err))
