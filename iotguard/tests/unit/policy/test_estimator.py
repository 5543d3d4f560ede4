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

import json

import numpy as np

from iotguard.policy import base
from iotguard.policy import estimator
from iotguard.tests import base as test_base
from iotguard.tests.unit.policy import fakes

KIB = 1024.0
MIB = 1024 * KIB
#: the physical bed of issue 12: 100 IOPS, 4 MiB/s
BUCKET = base.Profile(100.0, 4 * MIB, base.MAX)
#: an array: 1000 random 4 KiB IOPS, 100 MiB/s sequential
ARRAY = base.Profile(1000.0, 100 * MIB, base.ADDITIVE)
#: what fio measures on the bed, typed in as the docs ask (additive)
FIO = base.Profile(100.0, 4 * MIB)


def saturated_rates(truth, size):
    """(ops/s, bytes/s) a saturated device serves at one I/O size."""
    ops = 1.0 / float(estimator.costmodel.op_cost(np.float64(size), truth))
    return ops, ops * size


def feed(state, truth, sizes, rng, noise=0.03, prior=None, quiet=0.0):
    """One saturated interval per size, rates with noise.

    ``quiet``: the share of intervals that are quiet instead (served at
    20-90 % of capacity).
    """
    for size in sizes:
        ops, byts = saturated_rates(truth, size)
        factor = 1.0 + rng.uniform(-noise, noise)
        full = rng.uniform() >= quiet
        if not full:
            factor *= rng.uniform(0.2, 0.9)
        estimator.observe(state, ops * factor, byts * factor, full, prior)


def near(test, truth, value, what):
    test.assertLess(abs(value / truth - 1.0), 0.10,
                    '%s: %r, truth %r' % (what, value, truth))


class TestEstimator(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.rng = np.random.default_rng(12)

    def test_nothing_saturated_nothing_learned(self):
        state = estimator.State()
        estimator.observe(state, 10.0, 10 * 64 * KIB, False)
        self.assertIsNone(estimator.fit(state, FIO))

    def test_bed_64k_with_the_fio_profile_learns_the_max_form(self):
        state = estimator.State()
        feed(state, BUCKET, [64 * KIB] * 60, self.rng, prior=FIO)
        fit = estimator.fit(state, FIO)
        self.assertEqual(base.MAX, fit.form)
        near(self, 4 * MIB, fit.bytes_sec, 'bytes_sec')
        # one mix identifies the resource that binds; IOPS from the prior
        self.assertEqual(('bytes_sec',), fit.identified)
        self.assertEqual(100.0, fit.iops_4k)
        self.assertEqual(1, fit.mixes)
        self.assertLess(fit.error, 0.03)
        # half the confidence while a parameter is not identified
        self.assertLessEqual(fit.confidence, 0.5)

    def test_bed_64k_with_a_wrong_prior(self):
        prior = base.Profile(150.0, 3 * MIB)
        state = estimator.State()
        feed(state, BUCKET, [64 * KIB] * 60, self.rng, prior=prior)
        fit = estimator.fit(state, prior)
        self.assertEqual(base.MAX, fit.form)
        near(self, 4 * MIB, fit.bytes_sec, 'bytes_sec')
        self.assertEqual(150.0, fit.iops_4k)

    def test_bed_4k_learns_the_iops(self):
        state = estimator.State()
        feed(state, BUCKET, [4 * KIB] * 60, self.rng, prior=FIO)
        fit = estimator.fit(state, FIO)
        self.assertEqual(base.MAX, fit.form)
        near(self, 100.0, fit.iops_4k, 'iops_4k')
        self.assertEqual(('iops_4k',), fit.identified)

    def test_bed_64k_then_4k_identifies_both_without_prior(self):
        state = estimator.State()
        feed(state, BUCKET, [64 * KIB] * 40 + [4 * KIB] * 40, self.rng,
             quiet=0.3)
        fit = estimator.fit(state)
        self.assertEqual(base.MAX, fit.form)
        near(self, 100.0, fit.iops_4k, 'iops_4k')
        near(self, 4 * MIB, fit.bytes_sec, 'bytes_sec')
        self.assertEqual(('iops_4k', 'bytes_sec'), fit.identified)
        self.assertEqual(2, fit.mixes)

    def test_token_bucket_with_mixed_sizes_picks_max(self):
        state = estimator.State()
        sizes = np.exp(self.rng.uniform(np.log(2 * KIB), np.log(512 * KIB),
                                        120))
        feed(state, BUCKET, sizes, self.rng)
        fit = estimator.fit(state)
        self.assertEqual(base.MAX, fit.form)
        near(self, 100.0, fit.iops_4k, 'iops_4k')
        near(self, 4 * MIB, fit.bytes_sec, 'bytes_sec')
        self.assertGreater(fit.mixes, 5)
        self.assertGreater(fit.confidence, 0.8)

    def test_array_with_mixed_sizes_picks_additive(self):
        state = estimator.State()
        sizes = np.exp(self.rng.uniform(np.log(4 * KIB), np.log(1024 * KIB),
                                        120))
        feed(state, ARRAY, sizes, self.rng, quiet=0.3)
        fit = estimator.fit(state)
        self.assertEqual(base.ADDITIVE, fit.form)
        near(self, 1000.0, fit.iops_4k, 'iops_4k')
        near(self, 100 * MIB, fit.bytes_sec, 'bytes_sec')
        self.assertEqual(('iops_4k', 'bytes_sec'), fit.identified)

    def test_array_at_one_size_keeps_the_prior_form_and_other_term(self):
        state = estimator.State()
        feed(state, ARRAY, [4 * KIB] * 60, self.rng, prior=ARRAY)
        fit = estimator.fit(state, ARRAY)
        self.assertEqual(base.ADDITIVE, fit.form)
        near(self, 1000.0, fit.iops_4k, 'iops_4k')
        self.assertEqual(('iops_4k',), fit.identified)

    def test_quiet_intervals_never_lower_capacity(self):
        state = estimator.State()
        sizes = np.exp(self.rng.uniform(np.log(2 * KIB), np.log(512 * KIB),
                                        60))
        feed(state, BUCKET, sizes, self.rng)
        before = estimator.fit(state)
        for size in sizes:
            ops, byts = saturated_rates(BUCKET, size)
            share = self.rng.uniform(0.0, 1.0)
            estimator.observe(state, ops * share, byts * share, False)
        after = estimator.fit(state)
        self.assertGreaterEqual(after.iops_4k, before.iops_4k)
        self.assertGreaterEqual(after.bytes_sec, before.bytes_sec)
        # one served above the fit raises it
        estimator.observe(state, 2 * before.iops_4k, 0.5 * MIB, False)
        self.assertEqual(2 * before.iops_4k, estimator.fit(state).iops_4k)

    def test_quiet_frontier_and_saturated_ring_are_bounded(self):
        state = estimator.State()
        for i in range(estimator.MAX_POINTS + 50):
            estimator.observe(state, 10.0 + i % 7, 1e5, True)
            estimator.observe(state, 5.0 + i % 3, 1e4 * (i % 3), False)
        self.assertEqual(estimator.MAX_POINTS, len(state.saturated))
        # dominated quiet points bound nothing and are not kept
        self.assertEqual([[7.0, 2e4]], state.quiet)

    def test_glitches_are_rejected(self):
        state = estimator.State()
        feed(state, BUCKET, [64 * KIB] * 30, self.rng, prior=FIO)
        for ops, byts in ((float('nan'), 1.0), (1.0, float('inf')),
                          (-5.0, 1.0), (1e12, 1e12 * 65536),
                          (0.0, 1e5)):
            self.assertFalse(estimator.observe(state, ops, byts, True, FIO))
        self.assertEqual(5, state.rejected)
        # partly saturated intervals read as saturated: the quantile holds
        for _ in range(5):
            estimator.observe(state, 20.0, 20 * 64 * KIB, True, FIO)
        fit = estimator.fit(state, FIO)
        near(self, 4 * MIB, fit.bytes_sec, 'bytes_sec')

    def test_larger_requests_are_not_glitches(self):
        # a disk's 4 KiB and 64 KiB phases, then its 1 MiB one: 19 times
        # the median bytes a second known, 6.5 times the largest
        state = estimator.State()
        for ops, byts in ((24.5, 24.5 * 4 * KIB), (22.7, 22.7 * 64 * KIB),
                          (13.0, 6.5e5), (24.5, 24.5 * 4 * KIB)):
            self.assertTrue(estimator.observe(state, ops, byts, True))
        self.assertTrue(estimator.observe(state, 9.6, 9.6 * MIB, True))
        self.assertEqual(0, state.rejected)

    def test_a_glitch_without_prior_is_rejected_once_rates_are_known(self):
        state = estimator.State()
        feed(state, BUCKET, [64 * KIB] * 10, self.rng)
        self.assertFalse(estimator.observe(state, 64e6, 4e12, True))
        self.assertEqual(1, state.rejected)

    def test_confidence_grows_with_evidence_and_sets_the_margin(self):
        state = estimator.State()
        sizes = [4 * KIB, 64 * KIB, 256 * KIB]
        feed(state, BUCKET, sizes * 2, self.rng)
        early = estimator.fit(state)
        feed(state, BUCKET, sizes * 30, self.rng)
        late = estimator.fit(state)
        self.assertLess(early.confidence, late.confidence)
        self.assertGreater(late.confidence, 0.8)
        self.assertLessEqual(late.confidence, 1.0)
        margined = early.margined()
        scale = 1.0 - estimator.MARGIN * (1.0 - early.confidence)
        self.assertAlmostEqual(early.iops_4k * scale, margined.iops_4k)
        self.assertEqual(base.MAX, margined.form)
        self.assertEqual(late.profile.bytes_sec, late.bytes_sec)

    def test_state_round_trips_as_json(self):
        state = estimator.State()
        feed(state, BUCKET, [4 * KIB, 64 * KIB] * 5, self.rng, quiet=0.5)
        state.service = 1.5
        again = estimator.State.from_dict(json.loads(json.dumps(
            state.to_dict())))
        self.assertEqual(state, again)
        self.assertEqual(estimator.fit(state), estimator.fit(again))
        self.assertEqual(estimator.State(),
                         estimator.State.from_dict({}))

    def test_saturation_from_the_disks(self):
        # a 64 KiB disk with 4 in flight at 62 ms per op on the bed (cost
        # 15.6 ms): saturated; the same at 10 ms: quiet
        def snap(latency_ms, cap_iops=np.inf):
            return fakes.snapshot(
                fakes.disk('a', 64.0, latency_ms=latency_ms,
                           cap_iops=cap_iops),
                fakes.disk('b', 2.0, latency_ms=20.0), profile=BUCKET)

        state = estimator.State()
        self.assertTrue(estimator.observe_snapshot(state, snap(62.5),
                                                   BUCKET))
        self.assertFalse(estimator.observe_snapshot(state, snap(10.0),
                                                    BUCKET))
        # a disk waiting in its own cap does not count
        self.assertFalse(estimator.observe_snapshot(
            state, snap(62.5, cap_iops=64.0), BUCKET))
        self.assertEqual(1, len(state.saturated))
        self.assertAlmostEqual(1.0, state.service, places=3)
