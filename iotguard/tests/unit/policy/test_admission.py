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

"""Unit tests of the pure admission check."""

import dataclasses

from iotguard import exception
from iotguard.policy import admission
from iotguard.policy import base as base_policy
from iotguard.policy import estimator
from iotguard.tests import base

DOMAIN = admission.Domain('local:cn1', 'local', iops_4k=10000.0,
                          bytes_sec=400e6)


def _tier(min_iops=0.0, min_bytes_sec=0.0):
    return base_policy.Tier('t', min_iops, min_bytes_sec)


class CheckTest(base.TestCase):

    def test_load_is_the_cost_model_sum(self):
        # 1000 IOPS of 4 KiB: 0.1 of the seeks + 4.096e6/400e6 of transfer.
        one = 1000 / 10000.0 + 1000 * 4096.0 / 400e6
        numbers = admission.check('gold', DOMAIN, [_tier(1000)] * 2,
                                  [], [_tier(1000)], max_ratio=0.9)
        self.assertAlmostEqual(2 * one, numbers['committed_before'])
        self.assertAlmostEqual(3 * one, numbers['committed_after'])
        self.assertEqual('local:cn1', numbers['domain'])

    def test_nothing_committed_is_a_float(self):
        # The API answers these numbers: 0.0, as JSON clients expect a
        # number of one type, not the integer 0 of an empty sum.
        numbers = admission.check('gold', DOMAIN, [], [], [_tier(1000)],
                                  max_ratio=0.9)
        self.assertIsInstance(numbers['committed_before'], float)
        self.assertIsInstance(admission.committed([], None), float)

    def test_refused_above_ratio_with_numbers(self):
        others = [_tier(2000)] * 4      # 4 * 0.22048 = 0.88192
        exc = self.assertRaises(exception.AdmissionRejected,
                                admission.check, 'gold', DOMAIN, others,
                                [], [_tier(1000)], max_ratio=0.9)
        numbers = exc.kwargs['numbers']
        self.assertGreater(numbers['committed_after'], 0.9)
        self.assertLess(numbers['committed_before'], 0.9)
        self.assertIn('local:cn1', exc.message)
        self.assertEqual(409, exc.code)

    def test_exactly_at_ratio_is_admitted(self):
        # committed_floor_load of (iops, 0) charges iops*4096 bytes too.
        per_iops = 1 / 10000.0 + 4096.0 / 400e6
        iops = 0.5 / per_iops
        numbers = admission.check('t', DOMAIN, [_tier(iops)], [],
                                  [_tier(iops)], max_ratio=1.0)
        self.assertAlmostEqual(1.0, numbers['committed_after'])

    def test_lowering_an_overcommitted_domain_is_admitted(self):
        others = [_tier(5000)] * 2
        numbers = admission.check('bronze', DOMAIN, others, [_tier(3000)],
                                  [_tier(100)], max_ratio=0.9)
        self.assertGreater(numbers['committed_after'], 0.9)
        self.assertLess(numbers['committed_after'],
                        numbers['committed_before'])

    def test_same_tier_again_on_overcommitted_domain_is_admitted(self):
        others = [_tier(5000)] * 2
        admission.check('gold', DOMAIN, others, [_tier(3000)],
                        [_tier(3000)], max_ratio=0.9)

    def test_bytes_floor_counts(self):
        numbers = admission.check('t', DOMAIN, [], [],
                                  [_tier(0, 20e6)], max_ratio=0.9)
        # 20e6 B/s charged at 4 KiB: 4883 IOPS -> 0.488 + 0.05.
        self.assertAlmostEqual(20e6 / 4096 / 10000 + 0.05,
                               numbers['committed_after'])
        self.assertRaises(exception.AdmissionRejected, admission.check, 't',
                          DOMAIN, [_tier(0, 20e6)], [], [_tier(0, 20e6)],
                          max_ratio=0.9)

    def test_profile_out_of_range_counts_as_none(self):
        """A profile stored before the API checked it cannot overflow."""
        for iops_4k, bytes_sec in ((1e-306, 400e6), (10000.0, 1e-300),
                                   (1e10, 400e6), (10000.0, 1e16)):
            domain = dataclasses.replace(DOMAIN, iops_4k=iops_4k,
                                         bytes_sec=bytes_sec)
            self.assertIsNone(admission.profile_of(domain))
            self.assertRaises(exception.AdmissionRejected, admission.check,
                              'gold', domain, [], [], [_tier(1e15)],
                              max_ratio=0.9)
        self.assertIsNotNone(admission.profile_of(DOMAIN))

    def test_uncalibrated_domain_refuses_floors_only(self):
        domain = admission.Domain('ceph:new', 'shared')
        numbers = admission.check('besteffort', domain, [_tier(100)], [],
                                  [_tier()], max_ratio=0.9)
        self.assertIsNone(numbers['committed_after'])
        exc = self.assertRaises(exception.AdmissionRejected, admission.check,
                                'gold', domain, [], [], [_tier(10)],
                                max_ratio=0.9)
        self.assertIn('calibrate', exc.message)


class LearnedProfileTest(base.TestCase):
    """The bed of issue 12: fio's figures typed in, the max form learned."""

    BED = admission.Domain(
        'bed', 'local', iops_4k=100.0, bytes_sec=4194304.0,
        fit=estimator.Fit('max', 100.0, 4194304.0, error=0.01, intervals=60,
                          mixes=2, confidence=1.0,
                          identified=('iops_4k', 'bytes_sec')))
    QUIET = _tier(10.0, 600 * 1024.0)

    def test_manual_until_the_admin_lets_it_learn(self):
        self.assertEqual(base_policy.Profile(100.0, 4194304.0),
                         admission.profile_of(self.BED))
        learned = dataclasses.replace(self.BED, profile_source='learned')
        self.assertEqual(base_policy.MAX, admission.profile_of(learned).form)

    def test_three_600k_floors_admitted_with_the_learned_profile(self):
        # a fourth quiet VM: 0.99 of the bucket with the manual profile
        # (refused at 0.9), 0.59 with the learned one
        others = [self.QUIET] * 3
        self.assertRaises(exception.AdmissionRejected, admission.check,
                          'quiet', self.BED, others, [], [self.QUIET], 0.9)
        numbers = admission.check(
            'quiet', dataclasses.replace(self.BED, profile_source='learned'),
            others, [],
            [self.QUIET], 0.9)
        self.assertAlmostEqual(4 * 0.146484375, numbers['committed_after'])

    def test_low_confidence_is_priced_with_the_margin(self):
        learned = dataclasses.replace(
            self.BED, profile_source='learned', fit=dataclasses.replace(
                self.BED.fit, confidence=0.0, identified=('iops_4k',)))
        profile = admission.profile_of(learned)
        self.assertAlmostEqual(100.0 * (1 - estimator.MARGIN),
                               profile.iops_4k)

    def test_manual_form_and_no_fit(self):
        bucket = dataclasses.replace(self.BED, form='max', fit=None,
                                     profile_source='learned')
        self.assertEqual(base_policy.MAX, admission.profile_of(bucket).form)


class OvercommitTest(base.TestCase):
    """Floors admitted with an optimistic profile, judged by the fit."""

    # typed twice what the bucket serves; the fit finds 100 / 4 MiB/s
    TYPED = base_policy.Profile(200.0, 8388608.0, base_policy.MAX)
    FIT = LearnedProfileTest.BED.fit
    QUIET = LearnedProfileTest.QUIET     # 0.146 of the bucket each

    def verdict(self, n, fit=FIT, profile=TYPED):
        return admission.overcommit([self.QUIET] * n, profile, fit, 0.9)

    def test_within_what_the_storage_serves(self):
        v = self.verdict(6)
        self.assertAlmostEqual(6 * 0.0732421875, v.committed)
        self.assertAlmostEqual(6 * 0.146484375, v.committed_learned)
        self.assertIs(False, v.overcommitted)
        self.assertIs(False, v.beyond_capacity)
        self.assertEqual(1.0, v.confidence)
        self.assertEqual(0.9, v.max_commit_ratio)

    def test_overcommitted_and_beyond_capacity(self):
        v = self.verdict(8)
        self.assertLess(v.committed, 0.9)          # admitted at the time
        self.assertAlmostEqual(8 * 0.146484375, v.committed_learned)
        self.assertIs(True, v.overcommitted)
        self.assertIs(True, v.beyond_capacity)
        v = self.verdict(7)                     # 1.03 > 1.0
        self.assertTrue(v.overcommitted and v.beyond_capacity)

    def test_above_the_ratio_within_capacity(self):
        v = admission.overcommit([self.QUIET] * 6 + [_tier(5.0)],
                                 self.TYPED, self.FIT, 0.9)
        self.assertAlmostEqual(0.92890625, v.committed_learned)
        self.assertIs(True, v.overcommitted)
        self.assertIs(False, v.beyond_capacity)

    def test_the_fit_is_read_without_its_margin(self):
        fit = dataclasses.replace(self.FIT, confidence=0.5)
        v = self.verdict(6, fit=fit)
        self.assertAlmostEqual(6 * 0.146484375, v.committed_learned)
        self.assertIs(False, v.overcommitted)

    def test_no_verdict_unless_the_fit_identifies_what_matters(self):
        for fit in (None,
                    dataclasses.replace(self.FIT, identified=('bytes_sec',)),
                    dataclasses.replace(self.FIT, identified=()),
                    dataclasses.replace(self.FIT, confidence=0.49)):
            v = self.verdict(8, fit=fit)
            self.assertIsNone(v.overcommitted, fit)
            self.assertIsNone(v.beyond_capacity, fit)
        # the numbers are still given when the fit can price them
        v = self.verdict(8, fit=dataclasses.replace(self.FIT, identified=()))
        self.assertAlmostEqual(8 * 0.146484375, v.committed_learned)
        self.assertIsNone(self.verdict(8, fit=None).committed_learned)

    def test_without_a_profile_in_use(self):
        v = self.verdict(0, profile=None)
        self.assertIsNone(v.committed)
        self.assertEqual(0.0, v.committed_learned)
        self.assertIs(False, v.overcommitted)

    def test_shared_by_the_domain_view(self):
        v = self.verdict(8).to_dict()
        self.assertEqual({'committed', 'committed_learned',
                          'max_commit_ratio', 'confidence',
                          'overcommitted', 'beyond_capacity'}, set(v))


class LatencyObjectiveTest(base.TestCase):
    """A 2 ms objective on DOMAIN: a 4 KiB op costs 0.11024 ms."""

    GOLD = base_policy.Tier('gold', min_iops=1000, latency_p99_ms=2.0)

    def test_the_m_m_1_percentile(self):
        profile = admission.profile_of(DOMAIN)
        service = 1e3 / 10000.0 + 1e3 * 4096.0 / 400e6
        self.assertAlmostEqual(4.60517 * service * 2,
                               admission.predicted_p99_ms(0.5, profile),
                               places=4)
        # the learned service time scales it; never below the cost
        self.assertAlmostEqual(
            3 * admission.predicted_p99_ms(0.5, profile),
            admission.predicted_p99_ms(0.5, profile, 3.0))
        self.assertEqual(admission.predicted_p99_ms(0.5, profile),
                         admission.predicted_p99_ms(0.5, profile, 0.2))
        self.assertEqual(float('inf'),
                         admission.predicted_p99_ms(1.0, profile))

    def test_admitted_where_it_is_kept(self):
        numbers = admission.check('gold', DOMAIN, [], [], [self.GOLD],
                                  max_ratio=0.9)
        self.assertEqual(2.0, numbers['latency_objective_ms'])
        self.assertLess(numbers['predicted_p99_ms'], 0.6)

    def test_refused_with_the_predicted_p99(self):
        others = [_tier(2000)] * 3      # 0.66 committed; 0.77 after
        exc = self.assertRaises(exception.LatencyRejected,
                                admission.check, 'gold', DOMAIN, others,
                                [], [self.GOLD], max_ratio=0.9)
        self.assertEqual(409, exc.code)
        p99 = exc.kwargs['numbers']['predicted_p99_ms']
        self.assertAlmostEqual(2.224, p99, places=3)
        self.assertIn('2.224 ms', exc.message)
        self.assertIn('2.224 ms', exc.for_member())
        self.assertNotIn('capacity', exc.for_member())
        # with a learned service time twice the cost, even alone
        slow = dataclasses.replace(DOMAIN, service_ratio=4.0)
        self.assertRaises(exception.LatencyRejected, admission.check,
                          'gold', slow, [], [], [self.GOLD], max_ratio=0.9)

    def test_neither_more_load_nor_a_tighter_objective_is_admitted(self):
        others = [_tier(2000)] * 3
        # the same tier again
        admission.check('gold', DOMAIN, others, [self.GOLD], [self.GOLD],
                        max_ratio=0.9)
        # a looser objective at the same floor (still missed) ...
        loose = dataclasses.replace(self.GOLD, latency_p99_ms=2.1)
        admission.check('gold', DOMAIN, others, [self.GOLD], [loose],
                        max_ratio=0.9)
        # ... but not a tighter one
        self.assertRaises(exception.LatencyRejected, admission.check,
                          'gold', DOMAIN, others, [loose], [self.GOLD],
                          max_ratio=0.9)

    def test_uncalibrated_domain_refuses_an_objective(self):
        bare = admission.Domain('local:cn2', 'local')
        self.assertRaises(exception.AdmissionRejected, admission.check,
                          'fast', bare, [], [], [base_policy.Tier(
                              'fast', latency_p99_ms=5.0)], max_ratio=0.9)
