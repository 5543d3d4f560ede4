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

import dataclasses
import math
import threading

import fixtures
import numpy as np

from iotguard.controller import samples
from iotguard.policy import base as policy_base
from iotguard.tests import base
from iotguard.tests.unit.controller import fakes
from iotguard.tests.unit.policy import fakes as policy_fakes
from iotguard.wire import batch as batch_mod
from iotguard.wire import caps

UUID = '11111111-2222-3333-4444-555555555555'


class StoreTestCase(base.TestCase):

    def add(self, row, received_at=None):
        """Store one disk's sample; whether it was stored."""
        return fakes.add(self.store, row, received_at=received_at) == 1


class SampleStoreTest(StoreTestCase):

    def setUp(self):
        super().setUp()
        self.now = 1000.0
        self.store = samples.SampleStore(5.0, clock=lambda: self.now)

    def stale(self, now):
        return bool(self.store.gather([(UUID, 'vda')], now).stale[0])

    def test_add_and_latest(self):
        s = fakes.sample(UUID, timestamp=999.0, iops=42.0,
                         static={'total_iops_sec': 300})
        self.assertTrue(self.add(s))
        got = self.store.latest(UUID, 'vda')
        self.assertEqual((21.0, 300.0, math.inf, 1.0),
                         (got['read_iops'], got['static_iops'],
                          got['static_bytes_sec'], got['rated']))
        self.assertIsNone(self.store.latest(UUID, 'vdb'))
        # a copy
        got['read_iops'] = 0.0
        self.assertEqual(21.0, self.store.latest(UUID, 'vda')['read_iops'])

    def test_newer_replaces_older_is_refused(self):
        self.assertTrue(self.add(fakes.sample(UUID, timestamp=990.0)))
        self.assertTrue(self.add(fakes.sample(UUID, timestamp=995.0,
                                              iops=2.0)))
        self.assertFalse(self.add(fakes.sample(UUID, timestamp=992.0,
                                               iops=99.0)))
        self.assertEqual(995.0, self.store.latest(UUID, 'vda')['timestamp'])
        self.assertEqual(1, self.store.rejected)

    def test_duplicate_refused(self):
        s = fakes.sample(UUID, timestamp=999.0)
        self.assertTrue(self.add(s))
        self.assertFalse(self.add(fakes.sample(UUID, timestamp=999.0,
                                               read_iops=1000.0)))
        self.assertEqual(5.0, self.store.latest(UUID, 'vda')['read_iops'])

    def test_rates_up_to_max_rate_accepted(self):
        self.assertTrue(self.add(fakes.sample(
            UUID, read_iops=caps.MAX_RATE, write_bytes_sec=caps.MAX_RATE)))

    def test_future_beyond_skew_refused(self):
        self.assertFalse(self.add(fakes.sample(UUID, timestamp=1010.0)))
        self.assertTrue(self.add(fakes.sample(UUID, timestamp=1001.5)))

    def test_a_skewed_host_is_one_line_a_batch(self):
        # a host 30 s ahead: every disk of its pass from the future
        log = self.useFixture(fixtures.FakeLogger())
        rows = [fakes.sample('%s%d' % (UUID[:-1], i), timestamp=1030.0)
                for i in range(3)]
        self.assertEqual(0, self.store.add_batch(fakes.batch(*rows)))
        self.assertEqual(3, self.store.rejected)
        lines = [x for x in log.output.splitlines() if 'refused' in x]
        self.assertEqual(1, len(lines), log.output)
        self.assertIn('3 sample(s) refused (first %s/vda)'
                      % rows[0].instance_uuid, lines[0])
        self.assertIn('30.0 s in the future', lines[0])
        self.assertIn('NTP', lines[0])

    def test_received_at_overrides_clock(self):
        s = fakes.sample(UUID, timestamp=2000.0)
        self.assertFalse(self.add(s))
        self.assertTrue(self.add(s, received_at=2000.5))

    def test_far_past_refused(self):
        self.assertFalse(self.add(fakes.sample(UUID, timestamp=900.0)))
        # 3 intervals of 5 s: 15 s old is still usable, 16 s is not
        self.assertTrue(self.add(fakes.sample(UUID, timestamp=985.0)))
        self.assertFalse(self.add(fakes.sample('%s0' % UUID[:-1],
                                               timestamp=984.0)))

    def test_counter_reset_gap_is_stored_without_rates(self):
        self.assertTrue(self.add(fakes.sample(UUID, timestamp=990.0)))
        self.assertEqual(1.0, self.store.latest(UUID, 'vda')['rated'])
        self.assertFalse(self.stale(995.0))
        reset = fakes.sample(UUID, timestamp=995.0, gap='reset')
        self.assertIsNone(reset.rates)
        self.assertTrue(self.add(reset))
        latest = self.store.latest(UUID, 'vda')
        self.assertEqual((0.0, None), (latest['rated'], latest['read_iops']))
        # the loop reads a disk whose latest sample has no rates as stale
        self.assertTrue(self.stale(995.0))

    def test_staleness(self):
        self.assertTrue(self.stale(1000.0))        # no sample
        self.assertTrue(self.add(fakes.sample(UUID, timestamp=1000.0)))
        self.assertFalse(self.stale(1015.0))
        self.assertTrue(self.stale(1015.1))

    def test_staleness_follows_a_slow_source_interval(self):
        self.assertTrue(self.add(fakes.sample(
            UUID, timestamp=1000.0, interval_s=300.0)))
        self.assertFalse(self.stale(1800.0))
        self.assertTrue(self.stale(1901.0))

    def test_prune(self):
        other = '%s0' % UUID[:-1]
        self.add(fakes.sample(UUID, timestamp=990.0))
        self.add(fakes.sample(other, timestamp=999.0))
        self.assertEqual(1, self.store.prune(1010.0))
        self.assertIsNone(self.store.latest(UUID, 'vda'))
        self.assertEqual(0, self.store.prune(1010.0))
        self.assertEqual(1, self.store.prune(1020.0))
        self.assertEqual(0, len(self.store))

    def test_bad_interval(self):
        self.assertRaises(ValueError, samples.SampleStore, 0)

    def test_concurrent_adds_keep_the_newest(self):
        def feed(offset):
            for i in range(200):
                self.add(fakes.sample(UUID, timestamp=800.0 + offset
                                      + 2 * i),
                         received_at=800.0 + offset + 2 * i)
        threads = [threading.Thread(target=feed, args=(k,)) for k in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(1199.0, self.store.latest(UUID, 'vda')['timestamp'])


class ColumnarStoreTest(StoreTestCase):
    """The rows, the columns and what the loop gathers from them."""

    def setUp(self):
        super().setUp()
        self.now = 1000.0
        self.store = samples.SampleStore(5.0, clock=lambda: self.now,
                                         capacity=2)
        self.uuids = ['%08d-2222-3333-4444-555555555555' % i
                      for i in range(6)]

    def test_gather_flags_unknown_gap_and_stale(self):
        fresh, gap, old, unseen = self.uuids[:4]
        self.add(fakes.sample(fresh, timestamp=999.0, iops=40.0,
                              latency_ms=2.0,
                              static={'read_iops_sec': 30,
                                      'write_iops_sec': 20}))
        self.add(fakes.sample(gap, timestamp=999.0, gap='reset'))
        self.add(fakes.sample(old, timestamp=990.0, iops=8.0))
        cols = self.store.gather([(unseen, 'vda'), (old, 'vda'),
                                  (gap, 'vda'), (fresh, 'vda')], 1005.5)
        self.assertEqual([True, True, True, False], cols.stale.tolist())
        # the stale sample keeps its rates; none where no sample or a gap
        self.assertEqual(4.0, cols.read_iops[1])
        self.assertTrue(np.isnan(cols.read_iops[[0, 2]]).all())
        self.assertEqual(20.0, cols.read_iops[3])
        self.assertEqual(2.0, cols.write_latency_ms[3])
        # read + write ceilings add up; none is inf
        self.assertEqual([math.inf, math.inf, math.inf, 50.0],
                         cols.static_iops.tolist())
        self.assertTrue(np.isnan(cols.timestamp[0]))
        self.assertEqual(0, len(self.store.gather([], 1000.0).stale))

    def test_grows_and_reuses_forgotten_rows(self):
        for i, uuid in enumerate(self.uuids):
            self.assertTrue(self.add(fakes.sample(
                uuid, timestamp=990.0 + i, iops=float(i))))
        self.assertEqual(6, len(self.store))
        cols = self.store.gather([(u, 'vda') for u in self.uuids], 1000.0)
        self.assertEqual([i / 2 for i in range(6)], cols.read_iops.tolist())
        self.assertEqual(1, self.store.prune(1005.5))    # uuids[0]: stale
        self.assertIsNone(self.store.latest(self.uuids[0], 'vda'))
        # a new disk takes the forgotten row, nothing of the old one shows
        new = '99999999-2222-3333-4444-555555555555'
        self.add(fakes.sample(new, timestamp=999.0, gap='first'))
        self.assertEqual(6, self.store._size)
        latest = self.store.latest(new, 'vda')
        self.assertIsNone(latest['read_iops'])
        self.assertEqual((0.0, math.inf),
                         (latest['rated'], latest['static_iops']))
        cols = self.store.gather([(self.uuids[0], 'vda'), (new, 'vda')],
                                 1000.0)
        self.assertEqual([True, True], cols.stale.tolist())

    def test_batch_keeps_the_newest_of_a_disk(self):
        uuid = self.uuids[0]
        rows = [fakes.sample(uuid, timestamp=t, iops=t)
                for t in (995.0, 997.0, 996.0, 997.0)]
        self.assertEqual(2, fakes.add(self.store, *rows))
        self.assertEqual(2, self.store.rejected)
        self.assertEqual(997.0 / 2, self.store.latest(uuid, 'vda')[
            'read_iops'])

    def test_prune_frees_rows(self):
        for i, uuid in enumerate(self.uuids):
            self.add(fakes.sample(uuid, timestamp=986.0 + 2 * i))
        self.assertEqual(3, self.store.prune(1006.5))
        self.assertEqual(3, len(self.store))
        self.assertEqual(3, len(self.store._free))
        self.assertIsNone(self.store.latest(self.uuids[0], 'vda'))
        self.assertIsNotNone(self.store.latest(self.uuids[5], 'vda'))


class PercentileCase(StoreTestCase):
    """Samples with the agent's p99 into the snapshot.

    Three disks (``[agent] latency_histograms``) through the wire, the
    store and the snapshot: gold, with a 20 ms objective, mean 10 ms; two
    others, mean 60 ms.
    """

    TIERS = [policy_base.Tier('gold', min_iops=20, latency_p99_ms=20),
             policy_base.Tier('silver', min_iops=25),
             policy_base.Tier('best-effort')]

    def setUp(self):
        super().setUp()
        self.store = samples.SampleStore(5.0, clock=lambda: 1000.0)
        self.keys = [('%08d-2222-3333-4444-555555555555' % i, 'vda')
                     for i in range(3)]

    def snapshot(self, p99_ms, timestamp=999.0):
        """The domain's snapshot after a batch with ``p99_ms`` (or None)."""
        sent = fakes.batch(*[
            fakes.sample(uuid, timestamp=timestamp, iops=30.0,
                         bytes_sec=30.0 * 64 * 1024, latency_ms=latency)
            for (uuid, _dev), latency in zip(self.keys, (10.0, 60.0, 60.0))])
        if p99_ms is not None:
            sent = dataclasses.replace(sent, p99_ms=np.array(p99_ms))
        self.store.add_batch(batch_mod.decode(sent.to_wire()))
        return policy_base.DomainSnapshot.of_samples(
            'pool', policy_fakes.PROFILE, 5.0, ('gold', 'silver', 'be'),
            self.TIERS, self.store.gather(self.keys, 1000.0),
            np.full(3, math.inf), np.full(3, math.inf),
            np.full(3, math.nan))


class PercentileTest(PercentileCase):

    def test_through_the_store_into_the_snapshot(self):
        snap = self.snapshot([60.0, math.nan, 5.0])
        np.testing.assert_array_equal([60.0, math.nan, 5.0], snap.p99_ms)
        self.assertEqual(60.0, self.store.latest(*self.keys[0])['p99_ms'])
        self.assertIsNone(self.store.latest(*self.keys[1])['p99_ms'])
        # judged on its p99 where measured, else the p99 the mean
        # models (exponential response times: the mean x ln(100))
        modelled = 60.0 * math.log(100.0)
        np.testing.assert_allclose([60.0, modelled, 5.0],
                                   snap.judged_latency_ms)
        np.testing.assert_array_equal([10.0, 60.0, 60.0], snap.latency_ms)
        # the next batch measures none (the agent runs without): modelled
        snap = self.snapshot(None, timestamp=999.5)
        self.assertIsNone(snap.p99_ms)
        self.assertIsNone(self.store.latest(*self.keys[0])['p99_ms'])
        np.testing.assert_allclose(
            [10.0 * math.log(100.0), modelled, modelled],
            snap.judged_latency_ms)


class ClocksTest(base.TestCase):
    """A host's clock offset from its batches (samples.Clocks)."""

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger())
        self.clocks = samples.Clocks(warn_s=2.0)
        self.t = 1000.0   # the controller's (true) time of the next pass

    def send(self, offset, delay=0.01, host='cn1', every=5.0):
        """A pass read at true time t, ``offset`` ahead; the offset taken.

        Received ``delay`` after it was read.
        """
        taken = self.clocks.observe(host, self.t + offset,
                                    self.t + delay)
        self.t += every
        return taken

    def warnings(self):
        return [x for x in self.log.output.splitlines() if 'clock of' in x]

    def test_a_synchronised_host(self):
        self.assertEqual(0.0, self.send(0.0))
        self.assertAlmostEqual(-0.01, self.send(0.0))
        self.assertEqual(0.0, self.clocks.lease_offset('cn1'))
        self.assertEqual([], self.warnings())

    def test_a_new_host_is_taken_from_its_second_batch(self):
        # unknown: nothing added to its leases, its samples as they are
        self.assertIsNone(self.clocks.offset('cn9'))
        self.assertEqual(0.0, self.clocks.lease_offset('cn9'))
        self.assertEqual(0.0, self.send(30.0))
        # its leases follow what its batch shows at once
        self.assertAlmostEqual(29.99, self.clocks.lease_offset('cn1'))
        self.assertAlmostEqual(29.99, self.send(30.0))
        self.assertAlmostEqual(29.99, self.clocks.offset('cn1'))
        self.assertIsNone(self.clocks.offset('cn2'))

    def test_ahead_and_behind_one_warning_each_way(self):
        for _ in range(6):
            self.send(30.0)
        self.assertAlmostEqual(29.99, self.clocks.offset('cn1'))
        [ahead] = self.warnings()
        self.assertIn('host cn1 is 30.0 s ahead of', ahead)
        self.assertIn('NTP', ahead)
        for _ in range(6):   # stepped back beyond: behind
            self.send(-30.0)
        self.assertAlmostEqual(-30.01, self.clocks.offset('cn1'))
        self.assertIn('host cn1 is 30.0 s behind', self.warnings()[1])
        for _ in range(6):
            self.send(0.5)
        self.assertAlmostEqual(0.49, self.clocks.offset('cn1'))
        self.assertEqual(3, len(self.warnings()))
        self.assertIn('host cn1 is back within 2.0 s', self.warnings()[2])

    def test_jitter_takes_the_least_delayed(self):
        for delay in (0.3, 0.05, 0.4, 0.02, 0.2, 0.6):
            taken = self.send(10.0, delay)
        self.assertAlmostEqual(9.98, taken)
        self.assertAlmostEqual(9.4, self.clocks.lease_offset('cn1'))

    def test_batches_late_after_a_cut_change_nothing(self):
        for _ in range(4):
            self.send(10.0)
        # a 40 s cut: the passes read meanwhile arrive together after it
        cut_end = self.t + 40.0
        for _ in range(8):
            taken = self.clocks.observe('cn1', self.t + 10.0, cut_end)
            self.assertAlmostEqual(9.99, taken)
            self.t += 5.0
        self.assertAlmostEqual(9.99, self.send(10.0))

    def test_a_backlog_batch_last_heard_long_ago_is_not_the_leases(self):
        # A controller hears a host's batches, then (the agents' queue
        # shared with another controller) only one of them, 34 s late
        clocks = self.clocks = samples.Clocks(
            warn_s=2.0, fresh_s=6.0, clock=lambda: self.now)
        for _ in range(4):
            self.send(0.0, every=1.0)
        late = self.t + 34.0
        clocks.observe('cn1', self.t, late)
        self.now = late + 1.0
        # heard just now: the newest word, a lower bound (a lease refused)
        self.assertAlmostEqual(-34.0, clocks.lease_offset('cn1'))
        self.now = late + 7.0
        # no word since: the window's least delayed
        self.assertEqual(0.0, clocks.lease_offset('cn1'))
        # and a clock stepped back beyond a batch's interval still followed
        for _ in range(2):
            self.t += 1.0
            clocks.observe('cn1', self.t - 30.0, self.t + 0.01)
        self.now = self.t + 7.0
        self.assertAlmostEqual(-30.01, clocks.lease_offset('cn1'))

    def test_a_reading_heard_twice_is_taken_once(self):
        # a batch and its heartbeat (the same stamp) to one controller
        for _ in range(3):
            self.clocks.observe('cn1', self.t + 30.0, self.t + 0.01)
            self.clocks.observe('cn1', self.t + 30.0, self.t + 0.02)
            self.t += 5.0
        self.assertAlmostEqual(29.99, self.clocks.offset('cn1'))
        self.assertAlmostEqual(29.99, self.clocks.lease_offset('cn1'))

    def test_a_backlog_of_a_new_host_is_not_taken_for_its_clock(self):
        # a controller started on 12 queued passes of a synchronised host
        start = self.t + 60.0
        for _ in range(12):
            taken = self.clocks.observe('cn1', self.t, start)
            self.assertEqual(0.0, taken)   # judged as they are: stale
            self.t += 5.0

    def test_a_clock_stepped_back_is_followed(self):
        for _ in range(8):
            self.send(30.0)
        # NTP steps it back: its leases follow at once, its samples
        # from the second batch (the first one, judged 30 s old, refused)
        self.assertAlmostEqual(29.99, self.send(0.0))
        self.assertEqual(0.0, self.clocks.lease_offset('cn1'))
        self.assertAlmostEqual(-0.01, self.send(0.0))

    def test_a_step_shorter_than_a_pass_ages_out(self):
        for _ in range(8):
            self.send(3.0)
        taken = [self.send(0.0) for _ in range(samples.CLOCK_WINDOW)]
        # a lower bound for the leases from the first batch on
        self.assertEqual(0.0, self.clocks.lease_offset('cn1'))
        self.assertAlmostEqual(2.99, taken[0])
        self.assertAlmostEqual(-0.01, taken[-1])

    def test_a_clock_stepped_forward_from_the_second_batch(self):
        for _ in range(8):
            self.send(0.0)
        self.assertAlmostEqual(-0.01, self.send(30.0))
        # its leases on its new clock at once (a lower bound of it)
        self.assertAlmostEqual(29.99, self.clocks.lease_offset('cn1'))
        self.assertAlmostEqual(29.99, self.send(30.0))

    def test_correct_puts_a_batch_on_this_clock(self):
        for _ in range(2):
            self.send(30.0)
        batch = fakes.batch(fakes.sample(UUID, timestamp=self.t + 30.0))
        got = self.clocks.correct('cn1', batch, self.t + 0.01)
        self.assertAlmostEqual(self.t + 0.01, got.read_at)
        self.assertAlmostEqual(self.t + 0.01, float(got.timestamp[0]))
        self.assertEqual(self.t + 30.0, batch.read_at)   # a new batch

    def test_a_delay_is_no_offset(self):
        # a synchronised host whose batches arrive 0.2 s after they are
        # read: its samples keep their own times, its leases are unchanged
        for _ in range(3):
            self.send(0.0, delay=0.2)
        batch = fakes.batch(fakes.sample(UUID, timestamp=self.t))
        self.assertIs(batch, self.clocks.correct('cn1', batch, self.t + 0.2))
        self.assertEqual(0.0, self.clocks.lease_offset('cn1'))
