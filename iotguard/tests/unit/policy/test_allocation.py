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

import math

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import numpy as np

from iotguard.policy import allocation
from iotguard.tests import base as test_base

INF = math.inf


def shares(capacity, floors, demands, weights=None):
    weights = [1.0] * len(floors) if weights is None else weights
    result, level = allocation.fair_shares(
        capacity, np.array(floors, dtype=float),
        np.array(demands, dtype=float), np.array(weights, dtype=float))
    return list(result), level


class TestFairShares(test_base.TestCase):

    def assertShares(self, expected, observed):
        self.assertEqual(len(expected), len(observed))
        for e, o in zip(expected, observed):
            self.assertAlmostEqual(e, o, places=9)

    def test_everyone_fits_gets_demand(self):
        result, level = shares(10.0, [1, 1], [2, 3])
        self.assertShares([2, 3], result)
        self.assertEqual(INF, level)

    def test_weighted_water_level_by_hand(self):
        # disk 0 stops at its demand 2; 1 and 2 share 8 at weights 1:2,
        # level L: L + 2L = 8, L = 8/3.
        result, level = shares(10.0, [1, 1, 1], [2, INF, INF], [1, 1, 2])
        self.assertShares([2, 8 / 3, 16 / 3], result)
        self.assertAlmostEqual(8 / 3, level)

    def test_floors_first_then_level(self):
        # a's floor 5 is above the level: it keeps 5, the others share 5.
        result, level = shares(10.0, [5, 0, 0], [INF, INF, INF])
        self.assertShares([5, 2.5, 2.5], result)
        self.assertAlmostEqual(2.5, level)

    def test_overcommitted_floors_scaled(self):
        result, level = shares(3.0, [1, 2, 3], [INF, INF, INF])
        self.assertShares([0.5, 1, 1.5], result)
        self.assertEqual(0.0, level)

    def test_floor_above_demand_counts_as_demand(self):
        result, _ = shares(4.0, [5, 0], [1, INF])
        self.assertShares([1, 3], result)

    def test_infinite_demands_fill_capacity(self):
        result, _ = shares(7.0, [0, 0], [INF, INF], [1, 6])
        self.assertShares([1, 6], result)

    def test_sum_equals_capacity_when_demand_exceeds_it(self):
        result, _ = shares(1.0, [0.1, 0.2, 0], [0.5, 0.3, 0.9], [1, 2, 3])
        self.assertAlmostEqual(1.0, sum(result))

    def test_empty(self):
        result, level = shares(1.0, [], [])
        self.assertEqual([], result)
        self.assertEqual(INF, level)


_value = st.floats(0.0, 100.0, allow_nan=False)
_disk = st.tuples(_value,                                        # floor
                  st.one_of(_value, st.just(INF)),               # demand
                  st.floats(0.1, 10.0, allow_nan=False))         # weight


class TestFairSharesProperties(test_base.TestCase):

    @settings(max_examples=200, deadline=None)
    @given(st.lists(_disk, min_size=1, max_size=12),
           st.floats(0.01, 500.0, allow_nan=False),
           st.floats(1.0, 3.0, allow_nan=False))
    def test_bounds_and_monotone(self, disks, capacity, growth):
        floors = np.array([d[0] for d in disks])
        demands = np.array([d[1] for d in disks])
        weights = np.array([d[2] for d in disks])
        result, _ = allocation.fair_shares(capacity, floors, demands,
                                           weights)
        eps = 1e-9 * max(1.0, capacity)
        self.assertLessEqual(result.sum(), capacity + eps * len(disks))
        low = np.minimum(floors, demands)
        scale = min(1.0, capacity / low.sum()) if low.sum() > 0 else 1.0
        self.assertTrue(np.all(result >= low * scale - eps), result)
        self.assertTrue(np.all(result <= demands + eps), result)
        wanted = np.where(np.isfinite(demands), demands, np.inf).sum()
        if wanted >= capacity:
            self.assertAlmostEqual(capacity, result.sum(),
                                   delta=eps * len(disks) + 1e-9)
        more, _ = allocation.fair_shares(capacity * growth, floors,
                                         demands, weights)
        self.assertTrue(np.all(more >= result - eps * len(disks)),
                        (result, more))


class TestHelpers(test_base.TestCase):
    """The fair shares' helpers against the straightforward NumPy forms."""

    def setUp(self):
        super().setUp()
        self.rng = np.random.default_rng(3)

    def values(self, size):
        # ties (coarse values), infinities and values of all magnitudes
        values = self.rng.lognormal(0, 3, size)
        values[self.rng.random(size) < 0.3] = 0.25
        values[self.rng.random(size) < 0.1] = INF
        return values

    def test_running_sums_are_cumsum_bit_for_bit(self):
        for size in (0, 1, 2, 5, 100, 4099):
            values = self.values(size)
            expected = np.concatenate(([0.0], np.cumsum(values)))
            observed = allocation._running_sums(values)
            self.assertEqual(expected.tobytes(), observed.tobytes())

    def test_sorted_is_argsort(self):
        for size in (0, 1, 7, 1000):
            values = self.values(size)
            ordered, order = allocation._sorted(values)
            self.assertEqual(np.argsort(values).tolist(), order.tolist())
            self.assertEqual(values[order].tobytes(), ordered.tobytes())

    def test_gather_is_indexing(self):
        for size in (0, 1, 7, 1000):
            values = self.values(size)
            order = self.rng.permutation(size)
            out = np.full(size, np.nan)
            result = allocation._gather(values, order, out)
            self.assertIs(out, result)
            self.assertEqual(values[order].tobytes(), result.tobytes())

    def test_random_against_reference(self):
        # the water level found by bisection over the shares themselves
        for trial in range(200):
            size = int(self.rng.integers(1, 40))
            floors = self.rng.uniform(0, 1, size)
            floors[self.rng.random(size) < 0.3] = 0.0
            demands = self.rng.uniform(0, 2, size)
            demands[self.rng.random(size) < 0.3] = INF
            weights = self.rng.choice([0.5, 1.0, 2.0, 4.0, 1 / 3], size)
            low = np.minimum(floors, demands)
            wanted = float(np.minimum(demands, 1e6).sum())
            capacity = float(low.sum()) + self.rng.uniform(0.01, 1) * max(
                0.0, min(wanted, 1e3) - float(low.sum()))
            result, level = allocation.fair_shares(capacity, floors,
                                                   demands, weights)
            if not np.isfinite(level):
                np.testing.assert_array_equal(demands, result)
                continue
            lo, hi = 0.0, 1e9
            for _ in range(200):
                mid = (lo + hi) / 2
                given = np.minimum(demands, np.maximum(low, weights * mid))
                lo, hi = (mid, hi) if given.sum() < capacity else (lo, mid)
            self.assertAlmostEqual(lo, level, delta=1e-9 * max(1.0, lo))
            np.testing.assert_allclose(
                np.minimum(demands, np.maximum(low, weights * lo)), result,
                rtol=1e-9, atol=1e-12)
