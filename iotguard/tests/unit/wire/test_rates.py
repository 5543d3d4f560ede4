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

import random

import numpy as np
import testtools

from iotguard.wire import rates


def reading(at, **counters):
    base = dict.fromkeys(rates.COUNTER_KEYS, 0)
    base.update(counters)
    return rates.Reading(at=at, counters=base)


class ComputeTest(testtools.TestCase):

    def test_rates_and_latency(self):
        prev = reading(10.0, rd_reqs=100, rd_bytes=409600, rd_times=10**9,
                       wr_reqs=50, wr_bytes=1 << 20, wr_times=5 * 10**8,
                       fl_reqs=3)
        cur = reading(15.0, rd_reqs=600, rd_bytes=409600 + 5 * 4096 * 100,
                      rd_times=10**9 + 500 * 2 * 10**6,
                      wr_reqs=150, wr_bytes=(1 << 20) + 5 * 65536,
                      wr_times=5 * 10**8 + 100 * 8 * 10**6, fl_reqs=13)
        r = rates.compute(prev, cur)
        self.assertIsInstance(r, rates.Rates)
        self.assertEqual(5.0, r.interval_s)
        self.assertEqual(100.0, r.read_iops)
        self.assertEqual(20.0, r.write_iops)
        self.assertEqual(4096 * 100, r.read_bytes_sec)
        self.assertEqual(65536, r.write_bytes_sec)
        self.assertAlmostEqual(2.0, r.read_latency_ms)
        self.assertAlmostEqual(8.0, r.write_latency_ms)
        self.assertNotIn('flush_ops', r.as_dict())   # nothing reads one

    def test_idle_disk_has_zero_rates_and_latency(self):
        prev = reading(0.0, rd_reqs=7, rd_times=999)
        r = rates.compute(prev, reading(5.0, rd_reqs=7, rd_times=999))
        self.assertEqual(0.0, r.read_iops)
        self.assertEqual(0.0, r.read_latency_ms)
        self.assertEqual(0.0, r.write_latency_ms)

    def test_first_reading_is_a_gap(self):
        r = rates.compute(None, reading(1.0, rd_reqs=5))
        self.assertEqual(rates.Gap(rates.GAP_FIRST), r)

    def test_zero_interval_is_a_gap(self):
        r = rates.compute(reading(3.0), reading(3.0, rd_reqs=5))
        self.assertEqual(rates.GAP_INTERVAL, r.reason)

    def test_negative_interval_is_a_gap(self):
        r = rates.compute(reading(3.0), reading(2.0, rd_reqs=5))
        self.assertEqual(rates.GAP_INTERVAL, r.reason)
        self.assertEqual(-1.0, r.interval_s)

    def test_counter_reset_never_gives_negative_rate(self):
        prev = reading(0.0, rd_reqs=10**6, wr_bytes=10**9)
        cur = reading(5.0, rd_reqs=10, wr_bytes=10**9 + 4096)
        r = rates.compute(prev, cur)
        self.assertEqual(rates.GAP_RESET, r.reason)

    def test_wrap_of_64_bit_counter_is_a_reset(self):
        top = 2 ** 63 - 1
        prev = reading(0.0, wr_bytes=top - 10)
        cur = reading(5.0, wr_bytes=100)
        self.assertEqual(rates.GAP_RESET, rates.compute(prev, cur).reason)

    def test_any_single_counter_backwards_is_a_reset(self):
        for key in rates.COUNTER_KEYS:
            prev = reading(0.0, **{key: 100})
            cur = reading(5.0, **{key: 99})
            self.assertEqual(rates.GAP_RESET,
                             rates.compute(prev, cur).reason, key)

    def test_too_long_interval_is_a_gap(self):
        prev = reading(0.0)
        cur = reading(16.0, rd_reqs=1600)
        r = rates.compute(prev, cur, max_gap_s=15.0)
        self.assertEqual(rates.Gap(rates.GAP_TOO_LONG, 16.0), r)
        ok = rates.compute(prev, cur, max_gap_s=16.0)
        self.assertEqual(100.0, ok.read_iops)

    def test_missing_counters_count_as_zero(self):
        prev = rates.Reading(0.0, {'rd_reqs': 1, 'wr_reqs': 1})
        cur = rates.Reading(2.0, {'rd_reqs': 5, 'wr_reqs': 3})
        r = rates.compute(prev, cur)
        self.assertEqual(2.0, r.read_iops)
        self.assertEqual(1.0, r.write_iops)


class SeriesTest(testtools.TestCase):

    def test_reset_restarts_series_from_new_reading(self):
        s = rates.Series()
        self.assertEqual(rates.GAP_FIRST, s.update('d', reading(0.0)).reason)
        self.assertEqual(10.0,
                         s.update('d', reading(5, rd_reqs=50)).read_iops)
        self.assertEqual(rates.GAP_RESET,
                         s.update('d', reading(10, rd_reqs=5)).reason)
        # Measured from the reading after the reset, not from before it.
        self.assertEqual(3.0,
                         s.update('d', reading(15, rd_reqs=20)).read_iops)

    def test_duplicate_reading_keeps_older_base(self):
        s = rates.Series()
        s.update('d', reading(0.0))
        s.update('d', reading(5.0, rd_reqs=50))
        self.assertEqual(rates.GAP_INTERVAL,
                         s.update('d', reading(5.0, rd_reqs=60)).reason)
        self.assertEqual(12.0,
                         s.update('d', reading(10.0, rd_reqs=110)).read_iops)

    def test_gap_then_resumes(self):
        s = rates.Series(max_gap_s=10)
        s.update('d', reading(0.0))
        self.assertEqual(rates.GAP_TOO_LONG,
                         s.update('d', reading(60.0, rd_reqs=600)).reason)
        self.assertEqual(2.0,
                         s.update('d', reading(65.0, rd_reqs=610)).read_iops)

    def test_disks_are_independent_and_pruned(self):
        s = rates.Series()
        s.update('a', reading(0.0))
        s.update('b', reading(0.0))
        self.assertEqual(1.0, s.update('a', reading(1.0, rd_reqs=1))
                         .read_iops)
        s.prune(['a'])
        self.assertEqual(rates.GAP_FIRST,
                         s.update('b', reading(2.0, rd_reqs=9)).reason)
        self.assertEqual(1.0, s.update('a', reading(2.0, rd_reqs=2))
                         .read_iops)


class TableTest(testtools.TestCase):

    def check_pass(self, table, series, at, readings):
        got = table.update(at, readings)
        gaps = got.gap_names()
        for i, (key, counters) in enumerate(readings.as_dict().items()):
            want = series.update(key, rates.Reading(at, counters))
            where = '%s at %s' % (key, at)
            self.assertEqual(want.interval_s, got.interval_s[i], where)
            if isinstance(want, rates.Gap):
                self.assertEqual(want.reason, gaps[i], where)
                self.assertTrue(np.isnan(got.rates[:, i]).all(), where)
            else:
                self.assertIsNone(gaps[i], where)
                self.assertEqual(
                    [getattr(want, name) for name in rates.RATE_FIELDS],
                    got.rates[:, i].tolist(), where)

    def test_same_as_series_over_random_passes(self):
        rng = random.Random(20261126)
        pool = [('uuid-%d' % i, 'vd%s' % 'abc'[i % 3]) for i in range(40)]
        counters = {key: [0] * len(rates.COUNTER_KEYS) for key in pool}
        series = rates.Series(max_gap_s=15.0)
        table = rates.Table(max_gap_s=15.0)
        present = pool[:20]
        at = 1000.0
        for _ in range(400):
            at += rng.choice([5.0, 5.0, 5.0, 4.75, 5.125, 0.0, -1.0, 16.0,
                              rng.uniform(0.001, 20.0)])
            if rng.random() < 0.2:      # disks appear and disappear
                present = rng.sample(pool, rng.randint(0, len(pool)))
            for key in present:
                c = counters[key]
                if rng.random() < 0.05:     # reboot, re-attach
                    c[rng.randrange(len(c))] = rng.randrange(10)
                elif rng.random() < 0.8:
                    for k in range(len(c)):
                        c[k] += rng.choice([0, 1, rng.randrange(1 << 40)])
            # the agent reads only the listed disks of the stats it got
            read = [key for key in present if rng.random() < 0.95]
            self.check_pass(table, series, at, rates.Readings(
                read, np.array([counters[k] for k in read],
                               dtype=np.uint64).reshape(len(read), 7)))
            series.prune(present)
            table.prune(present)
            self.assertLessEqual(len(table), len(present))

    def test_wrap_of_unsigned_counter_is_a_reset(self):
        table = rates.Table()
        keys = ['d']
        top = np.array([[2 ** 64 - 10] + [0] * 6], dtype=np.uint64)
        table.update(0.0, rates.Readings(keys, top))
        got = table.update(5.0, rates.Readings(keys, np.array(
            [[100] + [0] * 6], dtype=np.uint64)))
        self.assertEqual([rates.GAP_RESET], got.gap_names())

    def test_readings_as_dict(self):
        big = 2 ** 63 + 1
        readings = rates.Readings(['a', 'b'], np.array(
            [[3, 0, 0, 0, 0, 0, 0], [big] * 7], dtype=np.uint64))
        back = readings.as_dict()
        self.assertEqual(dict(dict.fromkeys(rates.COUNTER_KEYS, 0),
                              rd_reqs=3), back['a'])
        self.assertEqual(dict.fromkeys(rates.COUNTER_KEYS, big), back['b'])


class RisingTest(testtools.TestCase):
    """Which disks' demand rose between two passes (the urgent ones)."""

    @staticmethod
    def rates_of(*disks):
        """``(read_iops, write_iops, latency_ms)`` a disk -> Columns.rates."""
        return np.array([[r, w, r * 4096, w * 4096, ms, ms]
                         for r, w, ms in disks], dtype=np.float64).T

    def test_woke_or_queue_filled(self):
        before = self.rates_of((0, 0, 0), (0.5, 0, 1), (50, 0, 2),
                               (0, 50, 2), (50, 50, 0.2), (0, 0, 0),
                               (50, 0, 2))
        now = self.rates_of((0, 5, 3), (0, 0.5, 1), (40, 0, 4.5),
                            (0, 50, 3.9), (50, 50, 1.1), (0, 0, 0),
                            (0, 0, 0))
        # woke; idle still; latency x2.25; x1.95; +0.9 ms only; idle;
        # went idle
        self.assertEqual([True, False, True, False, False, False, False],
                         rates.rising(before, now).tolist())

    def test_after_a_gap_busy_is_a_rise_a_gap_now_never(self):
        before = self.rates_of((0, 0, 0), (50, 0, 2), (50, 0, 2),
                               (0, 0, 0))
        now = self.rates_of((0, 50, 2), (50, 0, 20), (0, 0.5, 2),
                            (0, 0, 0))
        before[:, [0, 2, 3]] = np.nan    # new, or counters reset
        now[5, 1] = np.nan
        self.assertEqual([True, False, False, False],
                         rates.rising(before, now).tolist())
