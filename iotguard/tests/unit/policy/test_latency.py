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

"""The guarantee policy keeps a tier's latency objective."""

import math

from iotguard.policy import base
from iotguard.policy import guarantee
from iotguard.tests import base as test_base
from iotguard.tests.unit.policy import fakes

KIB = fakes.KIB
#: a 20 ms objective over a 20-IOPS floor (64 KiB: 0.22 of the domain)
GOLD = base.Tier('gold', min_iops=20, latency_p99_ms=20)
SILVER = base.Tier('silver', min_iops=25)


class TestObjective(test_base.TestCase):

    def decide(self, gold_ms, tier=GOLD, state=None, **caps):
        # three deep disks (1.8 requests in flight each) fill the domain
        # (0.99 of it at 64 KiB): gold, a silver floor-holder, and a
        # best-effort one; a capped one runs at its cap
        def ops(name):
            return min(30.0, caps.get(name, {}).get('cap_iops', 30.0))

        disks = [fakes.disk('gold', ops=30, tier=tier, latency_ms=gold_ms),
                 fakes.disk('silver', ops=ops('silver'), tier=SILVER,
                            latency_ms=60.0, **caps.get('silver', {})),
                 fakes.disk('be', ops=ops('be'), latency_ms=60.0,
                            **caps.get('be', {}))]
        snap = fakes.snapshot(*disks)
        decisions, memory = guarantee.GuaranteePolicy().decide(
            snap, state, 100.0)
        return fakes.by_disk(decisions), snap, memory

    def test_snapshot_carries_the_objectives(self):
        _, snap, _ = self.decide(60.0)
        self.assertEqual([20.0, 0.0, 0.0], snap.objective_ms.tolist())
        _, snap, _ = self.decide(60.0, tier=SILVER)
        self.assertIsNone(snap.objective_ms)

    def test_over_its_objective_the_queue_is_capped_not_the_disk(self):
        got, _, _ = self.decide(60.0)
        self.assertNotIn('gold', got)
        self.assertEqual({'silver', 'be'}, set(got))
        for name in ('silver', 'be'):
            self.assertEqual(base.CAP, got[name].action)
            self.assertLess(got[name].iops, 30.0)
            self.assertGreaterEqual(got[name].numbers['pressure'], 3.0)
        # never below a floor
        self.assertGreaterEqual(got['silver'].iops, 25.0)
        # the rounds after, the caps in force and gold still late: cut on
        # toward the floors, never under, never raised
        caps, state, cuts = {}, None, 0
        for _ in range(20):
            got, _, state = self.decide(60.0, state=state, **caps)
            self.assertNotIn('gold', got)
            for name, d in got.items():
                self.assertEqual(base.CAP, d.action)
                self.assertLess(d.iops, caps.get(name, {}).get(
                    'cap_iops', math.inf))
                caps[name] = dict(cap_iops=d.iops, cap_bytes_sec=d.bytes_sec,
                                  cap_set_at=95.0)
                cuts += 1
        self.assertGreaterEqual(cuts, 4)
        self.assertGreaterEqual(caps['silver']['cap_iops'], 25.0 * 0.999)
        self.assertLess(caps['be']['cap_iops'], 15.0)

    def test_met_objective_changes_nothing(self):
        # without a measured p99 the mean stands for one of ln(100) x it
        # (2 and 4 ms: 9.2 and 18.4 ms, under the 20 ms objective)
        plain = base.Tier('gold', min_iops=20)
        for gold_ms in (2.0, 4.0):
            kept, _, _ = self.decide(gold_ms)
            without, _, _ = self.decide(gold_ms, tier=plain)
            self.assertEqual({k: (d.iops, d.bytes_sec)
                              for k, d in without.items()},
                             {k: (d.iops, d.bytes_sec)
                              for k, d in kept.items()})

    def test_a_mean_is_judged_as_the_p99_it_models(self):
        # 5 ms mean: a modelled p99 of 23 ms, over the 20 ms objective
        got, snap, _ = self.decide(5.0)
        self.assertAlmostEqual(5.0 * math.log(100.0),
                               snap.judged_latency_ms[0])
        self.assertEqual({'silver', 'be'}, set(got))

    def test_no_pressure_below_the_low_watermark(self):
        snap = fakes.snapshot(
            fakes.disk('gold', ops=5, tier=GOLD, latency_ms=60.0),
            fakes.disk('be', ops=5, latency_ms=60.0))
        decisions, _ = guarantee.GuaranteePolicy().decide(snap, None, 1.0)
        self.assertEqual([], decisions)

    def test_a_tier_checks_its_objective(self):
        for bad in (-1.0, math.inf, math.nan):
            self.assertRaises(ValueError, base.Tier, 'x',
                              latency_p99_ms=bad)
