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
from iotguard.policy import none
from iotguard.tests import base as test_base
from iotguard.tests.unit.policy import fakes


class TestNoPolicy(test_base.TestCase):

    def test_never_caps_a_busy_domain(self):
        snap = fakes.snapshot(fakes.disk('a', ops=500),
                              fakes.disk('b', ops=80, latency_ms=900))
        self.assertEqual([], none.NoPolicy().decide(snap, None, 100.0)[0])

    def test_releases_every_cap_in_force(self):
        snap = fakes.snapshot(
            fakes.disk('a', ops=10, cap_iops=20, cap_set_at=50.0),
            fakes.disk('b', ops=10),
            fakes.disk('c', ops=10, cap_bytes_sec=1e6, cap_set_at=0.0,
                       stale=True))
        decisions = fakes.by_disk(none.NoPolicy().decide(snap, None,
                                                         100.0)[0])
        self.assertEqual(['a', 'c'], sorted(decisions))
        for decision in decisions.values():
            self.assertEqual(base.RELEASE, decision.action)
            self.assertEqual({'total_iops_sec': 0, 'total_bytes_sec': 0},
                             decision.limits)
        self.assertEqual(20.0, decisions['a'].numbers['cap_iops'])
        self.assertNotIn('cap_bytes_sec', decisions['a'].numbers)
        self.assertEqual('none', none.NoPolicy.name)

    def test_takes_no_parameters(self):
        err = self.assertRaises(ValueError, none.NoPolicy, rate=0.5)
        self.assertIn('rate', str(err))
