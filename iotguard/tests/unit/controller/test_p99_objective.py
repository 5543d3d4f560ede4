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

"""A p99 over a tier's objective makes the disk late, through the store.

Three deep disks fill a domain (30 IOPS of 64 KiB each, 0.99 of it):
gold, with a 20 ms objective and a 10 ms mean latency, a silver
floor-holder and a best-effort one, 60 ms each; their samples go through
the wire, the store and the snapshot to the ``guarantee`` policy.
"""

import math

from iotguard.policy import base as policy_base
from iotguard.policy import guarantee
from iotguard.tests.unit.controller import test_samples


class LateOnP99Test(test_samples.PercentileCase):

    def decide(self, p99_ms):
        snap = self.snapshot(p99_ms)
        decisions, _ = guarantee.GuaranteePolicy().decide(snap, None, 100.0)
        return {d.disk_id: d for d in decisions}

    def test_a_p99_over_the_objective_makes_the_disk_late(self):
        got = self.decide([60.0, math.nan, 5.0])
        # gold is late: kept as it is, the others capped for the queue
        self.assertNotIn('gold', got)
        self.assertEqual({'silver', 'be'}, set(got))
        for d in got.values():
            self.assertEqual(policy_base.CAP, d.action)
            self.assertGreaterEqual(d.numbers['pressure'], 3.0)

    def test_on_its_mean_alone_it_is_not(self):
        # no p99 measured: the mean, 10 ms, meets the objective
        got = self.decide([math.nan] * 3)
        for d in got.values():
            self.assertLess(d.numbers['pressure'], 3.0)
        # a p99 under the objective: the same decisions
        under = self.decide([15.0, math.nan, math.nan])
        self.assertEqual({k: (d.iops, d.bytes_sec) for k, d in got.items()},
                         {k: (d.iops, d.bytes_sec)
                          for k, d in under.items()})
