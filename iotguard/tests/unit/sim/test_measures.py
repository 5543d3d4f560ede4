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

"""The measures on hand-made series, answers worked out by hand."""

import dataclasses
import math
import types

import numpy as np

from iotguard.sim import loop
from iotguard.sim import measures
from iotguard.sim import scenario
from iotguard.tests import base

A = np.array
X = A([[0.3, 0.1], [0.15, 0.1], [0.2, 0.05], [0.19, 0.1]])
TARGET = A([[0.2, 0.1]] * 4)
TIMES = A([0.0, 5.0, 10.0, 15.0])
NO_SETTLE = A([False] * 4)


def action(t, disk, what='cap', changed=True, tightened=None):
    if tightened is None:
        tightened = what == 'cap'
    return loop.Action(time=t, disk=disk, action=what, changed=changed,
                       reason='test', tightened=tightened)


class TestFloor(base.TestCase):

    def test_floor_kept_and_worst_window(self):
        # ok: .3/.2, .1/.1, .2/.2, .19/.2 (= 0.95), .1/.1, .1/.1;
        # short: .15/.2 and .05/.1
        self.assertEqual(0.75, measures.floor_kept(X, TARGET, NO_SETTLE))
        self.assertEqual(0.5, measures.worst_window(X, TARGET, NO_SETTLE))

    def test_settling_windows_are_excluded(self):
        settle = measures.settling(TIMES, 5.0, [5.0])
        self.assertEqual([False, True, True, False], settle.tolist())
        self.assertEqual(1.0, measures.floor_kept(X, TARGET, settle))
        self.assertAlmostEqual(0.95,
                               measures.worst_window(X, TARGET, settle))

    def test_settling_of_an_unaligned_change(self):
        self.assertEqual([False, True, True, False],
                         measures.settling(TIMES, 5.0, [7.5]).tolist())

    def test_zero_target_is_not_judged(self):
        target = A([[0.2, 0.0]] * 4)
        x = A([[0.2, 0.0]] * 4)
        self.assertEqual(1.0, measures.floor_kept(x, target, NO_SETTLE))
        self.assertEqual(1.0, measures.worst_window(x, target, NO_SETTLE))

    def test_time_to_restore(self):
        times = np.arange(8) * 5.0
        x = A([[0.1], [0.1], [0.2], [0.2], [0.1], [0.1], [0.1], [0.1]])
        target = A([[0.2]] * 8)
        # change at 0: first good window [10, 15) -> 15 s; change at 20:
        # never good again before the end (40 s) -> 20 s
        self.assertEqual(20.0, measures.time_to_restore(
            x, target, times, 5.0, [0.0, 20.0]))
        self.assertEqual(15.0, measures.time_to_restore(
            x, target, times, 5.0, [0.0]))
        self.assertEqual(5.0, measures.time_to_restore(
            x, target, times, 5.0, [10.0]))
        # a later change does not stop the clock of an earlier one
        self.assertEqual(15.0, measures.time_to_restore(
            x, target, times, 5.0, [0.0, 5.0]))


class TestReclaim(base.TestCase):

    def test_reclaim_times(self):
        times = np.arange(8) * 1.0
        floor = A([0.1, 0.1, 0.0])
        target = A([[0.1, 0.1, 0.1]] * 8)
        target[:2, 0] = 0.0    # the first disk asks nothing until 2 s
        x = A([[0.0, 0.1, 0.0], [0.0, 0.05, 0.0], [0.05, 0.1, 0.0],
               [0.08, 0.1, 0.0], [0.1, 0.1, 0.0], [0.1, 0.095, 0.0],
               [0.1, 0.1, 0.0], [0.1, 0.0, 0.0]])
        # disk 0 wakes at 2.5 s (a change inside its window [2, 3)): short
        # until 4 s -> 1.5 s; disk 1: [1, 2) short -> 1 s, [7, 8) still
        # short at the end -> 1 s (a lower bound); 0.095 >= 0.9 x 0.1 is
        # delivered; disk 2 has no floor: never counted
        got = measures.reclaim_times(x, target, floor, times, 1.0, [2.5])
        self.assertEqual([1.5, 1.0, 1.0], got.tolist())
        self.assertEqual([2.0, 1.0, 1.0], measures.reclaim_times(
            x, target, floor, times, 1.0, []).tolist())
        self.assertEqual(0, len(measures.reclaim_times(
            np.maximum(x, 0.1), target, floor, times, 1.0, [])))


class TestToTheSecond(base.TestCase):

    def test_compliance_counts_the_settling_windows(self):
        # judged at 0.9 x target: .19/.2 and .1/.1 pass, .15/.2 (0.75)
        # and .05/.1 (0.5) do not, whatever the load changes
        kept, worst = measures.compliance(X, TARGET)
        self.assertEqual(0.75, kept)
        self.assertEqual(0.5, worst)
        x = A([[0.181, 0.1], [0.179, 0.0], [0.0, 0.1]])
        target = A([[0.2, 0.1], [0.2, 0.0], [0.0, 0.1]])
        # 0.181/0.2 passes, 0.179/0.2 (0.895) does not; zero targets are
        # not judged (4 pairs)
        kept, worst = measures.compliance(x, target)
        self.assertEqual(0.75, kept)
        self.assertAlmostEqual(0.895, worst)

    def test_compliance_without_a_floor_holder(self):
        self.assertEqual((1.0, 1.0), measures.compliance(
            A([[0.5, 0.5]]), A([[0.0, 0.0]])))

    def test_min_max_ratio_of_backlogged_best_effort_disks(self):
        floor = A([0.0, 0.0, 0.0, 0.2])
        weight = A([1.0, 1.0, 2.0, 1.0])
        demand = A([[1.0, 1.0, 1.0, 1.0],     # all backlogged
                    [1.0, 0.2, 1.0, 1.0],     # disk 1 has what it asks
                    [1.0, 0.1, 0.1, 1.0]])    # one backlogged: skipped
        x = A([[0.2, 0.1, 0.4, 0.3],
               [0.2, 0.2, 0.3, 0.3],
               [0.2, 0.1, 0.1, 0.3]])
        # window 0: .2, .1, .4/2 -> .1/.2; window 1: .2 and .3/2 -> .15/.2;
        # the floor-holder (disk 3) is never counted
        self.assertAlmostEqual((0.5 + 0.75) / 2, measures.min_max_ratio(
            x, demand, floor, weight))

    def test_min_max_ratio_without_two_backlogged(self):
        self.assertEqual(1.0, measures.min_max_ratio(
            A([[0.2, 0.1]]), A([[1.0, 1.0]]), A([0.0, 0.2]),
            A([1.0, 1.0])))


class TestCapacity(base.TestCase):

    def test_utilisation_only_while_demand_is_unmet(self):
        demand = A([[0.5, 0.1], [0.5, 0.1], [0.5, 0.1], [0.19, 0.1]])
        capacity = A([1.0, 1.0, 1.0, 0.5])
        # windows 0-2 have unmet demand: used .4, .25, .25 of 1.0
        self.assertAlmostEqual(0.3, measures.utilisation(X, demand,
                                                         capacity))

    def test_work_conservation(self):
        self.assertAlmostEqual(1.19 / 2.38, measures.work_conservation(
            X, X * 2))

    def test_oracle(self):
        alloc = measures.oracle(A([1.0]), A([0.2, 0.2]),
                                A([[0.1, np.inf]]), A([1.0, 1.0]))
        np.testing.assert_allclose([[0.1, 0.9]], alloc)

    def test_oracle_distance(self):
        x = A([[0.3, 0.1], [0.2, 0.2]])
        alloc = A([[0.2, 0.2], [0.2, 0.2]])
        # (.1 + .1) / .5 and 0 / 1
        self.assertAlmostEqual(0.2, measures.oracle_distance(
            x, alloc, A([0.5, 1.0])))

    def test_fair_capacity_alone_is_the_saturated_speed(self):
        domain = scenario.Domain(name='d', iops_4k=1, bytes_sec=1,
                                 sat_depth=10, depth_exponent=1.0,
                                 share_exponent=1.0)
        self.assertAlmostEqual(0.4, measures.fair_capacity(
            A([0.0]), A([0.4]), A([4.0]), A([1.0]), domain))

    def test_fair_capacity_shrinks_to_protect_a_shallow_disk(self):
        # speed(n) = n / 10; A has 10 processes, B one at demand 0.3.
        # Equal shares need A's queue as short as B's: 2 requests in
        # flight, speed 0.2, 0.1 each (worked through in the docstring's
        # iteration: 1.0 -> 0.333 -> 0.2 -> 0.2).
        domain = scenario.Domain(name='d', iops_4k=1, bytes_sec=1,
                                 sat_depth=10, depth_exponent=1.0,
                                 share_exponent=1.0)
        self.assertAlmostEqual(0.2, measures.fair_capacity(
            A([0.0, 0.0]), A([1.0, 0.3]), A([10.0, 1.0]), A([1.0, 1.0]),
            domain))


class TestActions(base.TestCase):

    def test_innocent_throttle_rate(self):
        x = A([[0.3, 0.1], [0.1, 0.3]])
        alloc = A([[0.3, 0.2], [0.2, 0.2]])
        actions = [action(5.0, 0),                    # .3 <= .3: innocent
                   action(10.0, 1),                   # .3 > .2: guilty
                   action(10.0, 0, 'release')]        # not a cap
        self.assertEqual(0.5, measures.innocent_throttle_rate(
            actions, x, alloc, A([0.0, 5.0]), 5.0))
        # within 5 % of its share (.2 / .95 = .2105) is still innocent
        x = A([[0.21, 0.1], [0.1, 0.22]])
        self.assertEqual(0.5, measures.innocent_throttle_rate(
            [action(5.0, 0, 'cap'), action(10.0, 1)], x,
            A([[0.2, 0.2], [0.2, 0.2]]), A([0.0, 5.0]), 5.0))
        self.assertEqual(0.0, measures.innocent_throttle_rate(
            [], x, alloc, A([0.0, 5.0]), 5.0))

    def test_a_raise_is_not_a_throttle(self):
        x = A([[0.1, 0.3], [0.1, 0.3]])
        alloc = A([[0.2, 0.2], [0.2, 0.2]])
        raise_ = action(5.0, 0, 'cap', tightened=False)   # innocent disk
        guilty = action(10.0, 1)
        self.assertEqual(0.0, measures.innocent_throttle_rate(
            [raise_, guilty], x, alloc, A([0.0, 5.0]), 5.0))
        self.assertEqual(0.0, measures.innocent_throttle_rate(
            [raise_], x, alloc, A([0.0, 5.0]), 5.0))
        self.assertEqual(0.5, measures.innocent_throttle_rate(
            [action(5.0, 0), guilty], x, alloc, A([0.0, 5.0]), 5.0))

    def test_cap_churn(self):
        settle = A([False, True, False, False])
        actions = [action(5.0, 0), action(10.0, 1), action(20.0, 1),
                   action(15.0, 0, changed=False)]
        # counted: t=5 (window 0) and t=20 (window 3); window 1 settles;
        # 2 changes / 2 disks / (3 steady windows = 0.25 min)
        self.assertAlmostEqual(4.0, measures.cap_churn_per_min(
            actions, 2, TIMES, 5.0, settle))

    def test_cap_changes_per_10min_is_the_worst_disk(self):
        settle = A([False, True, False, False])
        # disk 1 changes twice in steady state (t=15, t=20), disk 0 once
        # (t=5); t=10 falls in the settling window 1. 15 s of steady
        # time: the worst disk's 2 changes scale to 2 x 600 / 15 = 80 per
        # 10 min, where the mean per minute reads 3 / 2 / 0.25 = 6.
        actions = [action(5.0, 0), action(10.0, 1), action(15.0, 1),
                   action(20.0, 1), action(20.0, 0, changed=False)]
        self.assertAlmostEqual(80.0, measures.cap_changes_per_10min(
            actions, 2, TIMES, 5.0, settle))
        self.assertAlmostEqual(6.0, measures.cap_churn_per_min(
            actions, 2, TIMES, 5.0, settle))
        self.assertEqual([1.0, 2.0], measures.steady_changes(
            actions, 2, TIMES, 5.0, settle).tolist())
        # no steady time, no disk: nothing to count
        self.assertEqual(0.0, measures.cap_changes_per_10min(
            actions, 2, TIMES, 5.0, A([True] * 4)))
        self.assertEqual(0.0, measures.cap_changes_per_10min(
            [], 0, TIMES, 5.0, settle))


class TestFairness(base.TestCase):

    def test_jain(self):
        self.assertEqual(1.0, measures.jain(A([1.0, 1.0])))
        self.assertEqual(0.5, measures.jain(A([1.0, 0.0])))
        self.assertAlmostEqual(0.9, measures.jain(A([2.0, 1.0])))

    def test_fairness_over_disks_with_unmet_demand(self):
        x = A([[0.4, 0.2, 0.1], [0.1, 0.1, 0.1]])
        demand = A([[1.0, 1.0, 0.1], [0.1, 0.1, 0.1]])
        alloc = A([[0.2, 0.2, 0.1], [0.1, 0.1, 0.1]])
        # window 0: disks 0 and 1 unmet, ratios 2 and 1 -> 0.9;
        # window 1: nobody unmet, skipped
        self.assertAlmostEqual(0.9, measures.fairness(x, demand, alloc))
        self.assertEqual(1.0, measures.fairness(x[1:], demand[1:],
                                                alloc[1:]))


class TestQuiet(base.TestCase):
    """Disks whose demand fits their fair share must get it."""

    # two windows, three disks: a quiet one, a flood, an idle one
    demand = np.array([[0.1, 2.0, 0.0], [0.1, 2.0, 0.0]])
    alloc = np.array([[0.1, 0.8, 0.0], [0.1, 0.8, 0.0]])

    def test_quiet_is_demand_within_the_fair_share(self):
        self.assertEqual([[True, False, False]] * 2,
                         measures.quiet(self.demand, self.alloc).tolist())

    def test_ratio_of_the_judged_quiet_pairs(self):
        x = np.array([[0.05, 0.9, 0.0], [0.096, 0.8, 0.0]])
        settle = np.array([False, False])
        np.testing.assert_allclose(
            [0.5, 0.96], measures.quiet_ratio(x, self.demand, self.alloc,
                                              settle))
        np.testing.assert_allclose(
            [0.96], measures.quiet_ratio(x, self.demand, self.alloc,
                                         np.array([True, False])))

    def test_latency_weighted_by_throughput(self):
        latency = np.array([[4.0, 30.0, 0.0], [1.0, 30.0, 0.0]])
        x = np.array([[0.02, 0.9, 0.0], [0.08, 0.8, 0.0]])
        # (4 * 0.02 + 1 * 0.08) / 0.1; the flood's 30 ms does not count
        self.assertAlmostEqual(1.6, measures.quiet_latency(
            latency, x, self.demand, self.alloc, np.array([False, False])))
        self.assertEqual(0.0, measures.quiet_latency(
            latency, x, self.demand, self.alloc, np.array([True, True])))


class TestLatencyKept(base.TestCase):

    def run_of(self, gold_ms, window_s=1.0, gold_kbs=None):
        # latency-tier's disks: gold (here with a 3 ms objective) and two
        # best-effort disks
        sc = scenario.load('latency-tier')
        sc = dataclasses.replace(sc, tiers={**sc.tiers, 'gold': (
            dataclasses.replace(sc.tiers['gold'], latency_p99_ms=3.0))})
        latency = np.zeros((len(gold_ms), 3))
        latency[:, 0] = gold_ms
        latency[:, 1:] = 50.0
        kbs = np.full((len(gold_ms), 3), 60000.0)
        kbs[:, 0] = (gold_kbs if gold_kbs is not None
                     else np.where(np.asarray(gold_ms) > 0, 2048.0, 0.0))
        return types.SimpleNamespace(
            scenario=sc, window_s=window_s, latency_ms=latency, kbs=kbs,
            times=np.arange(len(gold_ms)) * window_s)

    def tail(self, x, mean_ms, kbs):
        # the mixture's share of operations slower than x
        w = np.asarray(kbs, dtype=float) / np.sum(kbs)
        return float(np.sum(w * np.exp(-x / np.asarray(mean_ms))))

    def test_one_window_is_its_mean_times_ln_100(self):
        kept, worst = measures.latency_kept(self.run_of([0.5] * 10))
        self.assertAlmostEqual(0.5 * math.log(100), worst, places=9)
        self.assertEqual(1.0, kept)        # 2.30 ms <= 3 ms
        kept, worst = measures.latency_kept(self.run_of([0.7], 10.0))
        self.assertAlmostEqual(0.7 * math.log(100), worst, places=9)
        self.assertEqual(0.0, kept)        # 3.22 ms > 3 ms

    def test_one_slow_second_among_fast_ones(self):
        # a 10 s window of 1 s windows: nine at 0.4 ms, one at 2 ms with
        # as many operations
        gold = [0.4] * 9 + [2.0]
        _, worst = measures.latency_kept(self.run_of(gold))
        self.assertAlmostEqual(0.01, self.tail(worst, gold, [1.0] * 10),
                               places=12)
        # between the fast seconds' p99 and the slow second's own
        self.assertGreater(worst, 0.4 * math.log(100))
        self.assertLess(worst, 2.0 * math.log(100))
        # the slow second's share counts: with a tenth of the operations
        kbs = [2048.0] * 9 + [204.8]
        _, light = measures.latency_kept(self.run_of(gold, gold_kbs=kbs))
        self.assertAlmostEqual(0.01, self.tail(light, gold, kbs),
                               places=12)
        self.assertLess(light, worst)

    def test_share_of_10s_windows_at_the_objective(self):
        # three 10 s windows: one slow second in the first, none in the
        # second, idle the third (not judged)
        gold = [0.4] * 9 + [3.0] + [0.5] * 10 + [0.0] * 10
        kept, worst = measures.latency_kept(self.run_of(gold))
        self.assertEqual(0.5, kept)
        self.assertAlmostEqual(0.01, self.tail(worst, gold[:10],
                                               [1.0] * 10), places=12)
        # 5 s windows: two per 10 s; a trailing part window is left out
        kept, _ = measures.latency_kept(self.run_of([0.5, 0.6, 4.0],
                                                    window_s=5.0))
        self.assertEqual(1.0, kept)

    def test_windows_without_io_are_not_judged(self):
        # a 10 s window with one busy second: judged on that second alone;
        # an idle one not at all
        gold = [0.0] * 9 + [0.7] + [0.0] * 10
        kept, worst = measures.latency_kept(self.run_of(gold))
        self.assertEqual(0.0, kept)
        self.assertAlmostEqual(0.7 * math.log(100), worst, places=9)
        self.assertEqual((1.0, 0.0),
                         measures.latency_kept(self.run_of([0.0] * 20)))

    def test_without_objectives(self):
        run = self.run_of([9.0] * 10)
        run.scenario = scenario.load('burst')
        run.latency_ms = np.full((10, 5), 9.0)
        self.assertEqual((1.0, 0.0), measures.latency_kept(run))
