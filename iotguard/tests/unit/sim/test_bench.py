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

import numpy as np

from iotguard.policy import guarantee
from iotguard.sim import bench
from iotguard.tests import base as test_base


class TestBench(test_base.TestCase):
    """The benchmark's plumbing; its figures come from the command."""

    def test_disks_split_over_domains_and_figures_consistent(self):
        result = bench.run(101, domains=4, seed=3, repeat=2)
        self.assertEqual((101, 4, 3, 2), (result['disks'],
                                          result['domains'],
                                          result['seed'], result['repeat']))
        self.assertLessEqual(result['cpu_s_min'], result['cpu_s_median'])
        self.assertAlmostEqual(result['cpu_s_min'] / 101 * 1e6,
                               result['us_per_disk'])

    def test_synthetic_domain_engages_the_policy(self):
        snap = bench.snapshot(2000, np.random.default_rng(0))
        self.assertEqual(2000, len(snap))
        self.assertTrue(snap.capped.any())
        decisions, _ = guarantee.GuaranteePolicy().decide(snap, None, 100.0)
        # the noisy writers get caps, most disks get nothing
        self.assertGreater(len(decisions), 0)
        self.assertLess(len(decisions), 0.2 * len(snap))

    def test_same_seed_same_domain(self):
        a = bench.snapshot(300, np.random.default_rng(7))
        b = bench.snapshot(300, np.random.default_rng(7))
        self.assertTrue(np.array_equal(a.iops, b.iops))
        self.assertTrue(np.array_equal(a.latency_ms, b.latency_ms))

    def test_bad_arguments(self):
        self.assertRaises(ValueError, bench.run, 0)
        self.assertRaises(ValueError, bench.run, 10, domains=11)
