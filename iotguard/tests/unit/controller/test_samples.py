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
import threading

import hypothesis
import numpy as np

from iotguard import caps
from iotguard.controller import samples
from iotguard import exception
from iotguard.tests import base
from iotguard.tests.unit.controller import fakes

UUID = '11111111-2222-3333-4444-555555555555'


class SampleStoreTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.now = 1000.0
        self.store = samples.SampleStore(5.0, clock=lambda: self.now)

    def test_add_and_latest(self):
        s = fakes.sample(UUID, timestamp=999.0, iops=42.0)
        self.assertTrue(self.store.add(s))
        got = self.store.latest(UUID, 'vda')
        self.assertEqual(21.0, got['read_iops'])
        self.assertIsNone(self.store.latest(UUID, 'vdb'))
        # the store keeps its own copy
        s['read_iops'] = 0.0
        self.assertEqual(21.0, self.store.latest(UUID, 'vda')['read_iops'])

    def test_newer_replaces_older_is_refused(self):
        self.assertTrue(self.store.add(fakes.sample(UUID, timestamp=990.0)))
        self.assertTrue(self.store.add(fakes.sample(UUID, timestamp=995.0,
                                                    iops=2.0)))
        self.assertFalse(self.store.add(fakes.sample(UUID, timestamp=992.0,
                                                     iops=99.0)))
        self.assertEqual(995.0, self.store.latest(UUID, 'vda')['timestamp'])
        self.assertEqual(1, self.store.rejected)

    def test_duplicate_refused(self):
        s = fakes.sample(UUID, timestamp=999.0)
        self.assertTrue(self.store.add(s))
        self.assertFalse(self.store.add(dict(s, read_iops=1000.0)))
        self.assertEqual(5.0, self.store.latest(UUID, 'vda')['read_iops'])

    def test_malformed_refused(self):
        for bad in (None, 'x', {}, fakes.sample('not-a-uuid'),
                    fakes.sample(UUID, read_iops=-1.0),
                    fakes.sample(UUID, timestamp='yesterday'),
                    fakes.sample(UUID, timestamp=float('nan')),
                    fakes.sample(UUID, write_iops=float('inf')),
                    fakes.sample(UUID, read_iops=1.7e308),
                    fakes.sample(UUID, write_bytes_sec=caps.MAX_RATE * 2),
                    {k: v for k, v in fakes.sample(UUID).items()
                     if k != 'static'}):
            self.assertFalse(self.store.add(bad), bad)
        self.assertEqual(0, len(self.store))
        self.assertEqual(11, self.store.rejected)

    def test_rates_up_to_max_rate_accepted(self):
        self.assertTrue(self.store.add(fakes.sample(
            UUID, read_iops=caps.MAX_RATE, write_bytes_sec=caps.MAX_RATE)))

    def test_future_beyond_skew_refused(self):
        self.assertFalse(self.store.add(fakes.sample(UUID, timestamp=1010.0)))
        self.assertTrue(self.store.add(fakes.sample(UUID, timestamp=1001.5)))

    def test_received_at_overrides_clock(self):
        s = fakes.sample(UUID, timestamp=2000.0)
        self.assertFalse(self.store.add(s))
        self.assertTrue(self.store.add(s, received_at=2000.5))

    def test_far_past_refused(self):
        self.assertFalse(self.store.add(fakes.sample(UUID, timestamp=900.0)))
        # 3 intervals of 5 s: 15 s old is still usable, 16 s is not
        self.assertTrue(self.store.add(fakes.sample(UUID, timestamp=985.0)))
        self.assertFalse(self.store.add(fakes.sample('%s0' % UUID[:-1],
                                                     timestamp=984.0)))

    def test_counter_reset_gap_is_stored_without_rates(self):
        self.assertTrue(self.store.add(fakes.sample(UUID, timestamp=990.0)))
        self.assertTrue(samples.has_rates(self.store.latest(UUID, 'vda')))
        reset = fakes.sample(UUID, timestamp=995.0, gap='reset')
        self.assertIsNone(reset['read_iops'])
        self.assertTrue(self.store.add(reset))
        latest = self.store.latest(UUID, 'vda')
        self.assertEqual('reset', latest['gap'])
        self.assertFalse(samples.has_rates(latest))
        self.assertFalse(samples.has_rates(None))

    def test_staleness(self):
        s = fakes.sample(UUID, timestamp=1000.0)
        self.assertFalse(self.store.is_stale(s, 1015.0))
        self.assertTrue(self.store.is_stale(s, 1015.1))
        self.assertTrue(self.store.is_stale(None, 1000.0))

    def test_staleness_follows_a_slow_source_interval(self):
        s = fakes.sample(UUID, timestamp=1000.0, interval_s=300.0)
        self.assertFalse(self.store.is_stale(s, 1800.0))
        self.assertTrue(self.store.is_stale(s, 1901.0))

    def test_forget_and_prune(self):
        other = '%s0' % UUID[:-1]
        self.store.add(fakes.sample(UUID, timestamp=990.0))
        self.store.add(fakes.sample(other, timestamp=999.0))
        self.store.forget(UUID, 'vda')
        self.assertIsNone(self.store.latest(UUID, 'vda'))
        self.store.forget(UUID, 'vda')  # twice is fine
        self.assertEqual(0, self.store.prune(1010.0))
        self.assertEqual(1, self.store.prune(1020.0))
        self.assertEqual(0, len(self.store))

    def test_bad_interval(self):
        self.assertRaises(ValueError, samples.SampleStore, 0)

    def test_concurrent_adds_keep_the_newest(self):
        def feed(offset):
            for i in range(200):
                self.store.add(fakes.sample(UUID, timestamp=800.0 + offset
                                            + 2 * i),
                               received_at=800.0 + offset + 2 * i)
        threads = [threading.Thread(target=feed, args=(k,)) for k in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(1199.0, self.store.latest(UUID, 'vda')['timestamp'])


FIELDS = sorted(fakes.sample(UUID).keys()) + ['extra']
VALUES = hypothesis.strategies.one_of(
    hypothesis.strategies.none(), hypothesis.strategies.booleans(),
    hypothesis.strategies.integers(-2 ** 64, 2 ** 64),
    hypothesis.strategies.floats(allow_nan=True, allow_infinity=True),
    hypothesis.strategies.text(max_size=40),
    hypothesis.strategies.sampled_from([UUID, UUID + '\n', 'vda', 'v' * 33,
                                        '1a', {}, [], {'total_iops_sec': 5},
                                        {'total_iops_sec': -1},
                                        {'total_iops_sec': 1.0},
                                        {'nope': 1}, {'read_iops_sec': True},
                                        {'total_bytes_sec': 2 ** 63}]))


def _finite(sample):
    return all(not isinstance(sample.get(k), float)
               or math.isfinite(sample[k])
               for k in ('timestamp', 'interval_s', 'lease_expires_at')
               + samples.RATES)


class DecodeTest(base.TestCase):
    """One check on ingest: decode accepts exactly what the schema does.

    (and whose numbers are finite), whichever of its paths it takes.
    """

    @hypothesis.settings(max_examples=400, deadline=None)
    @hypothesis.given(hypothesis.strategies.dictionaries(
        hypothesis.strategies.sampled_from(FIELDS), VALUES, max_size=4),
        hypothesis.strategies.sets(hypothesis.strategies.sampled_from(
            FIELDS), max_size=2))
    def test_decode_agrees_with_schema(self, changes, dropped):
        sample = fakes.sample(UUID)
        sample.update(changes)
        for key in dropped:
            sample.pop(key, None)
        try:
            caps.validate_sample(sample)
            wanted = _finite(sample)
        except exception.Invalid:
            wanted = False
        if samples._fast(sample) is not None:
            self.assertTrue(wanted, sample)
        try:
            record = samples.decode(sample)
        except exception.Invalid:
            self.assertFalse(wanted, sample)
            return
        self.assertTrue(wanted, sample)
        self.assertEqual((sample['instance_uuid'], sample['dev']), record.key)

    def test_valid_samples_take_the_fast_path(self):
        for sample in (fakes.sample(UUID), fakes.sample(UUID, gap='reset'),
                       fakes.sample(UUID, static={'total_iops_sec': 100},
                                    cap={'total_bytes_sec': 1},
                                    lease_expires_at=5.0, decision_id='7')):
            record = samples._fast(sample)
            self.assertIsNotNone(record)
            self.assertEqual(record, samples.decode(sample))
            self.assertEqual(sample, record.to_wire())

    def test_slow_path_still_accepts_what_the_schema_accepts(self):
        # 1.0 is an integer for JSON schema; the fast check leaves it to it
        sample = fakes.sample(UUID, static={'total_iops_sec': 1.0})
        self.assertIsNone(samples._fast(sample))
        record = samples.decode(sample)
        self.assertEqual({'total_iops_sec': 1}, record.static)
        self.assertIs(int, type(record.static['total_iops_sec']))
        e = self.assertRaises(exception.Invalid, samples.decode,
                              fakes.sample(UUID, dev='0bad'))
        self.assertIn('dev', str(e))
        e = self.assertRaises(exception.Invalid, samples.decode,
                              fakes.sample(UUID, read_iops=float('nan')))
        self.assertIn('not a finite number: read_iops', str(e))


class ColumnarStoreTest(base.TestCase):
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
        self.store.add(fakes.sample(fresh, timestamp=999.0, iops=40.0,
                                    latency_ms=2.0,
                                    static={'read_iops_sec': 30,
                                            'write_iops_sec': 20}))
        self.store.add(fakes.sample(gap, timestamp=999.0, gap='reset'))
        self.store.add(fakes.sample(old, timestamp=990.0, iops=8.0))
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
            self.assertTrue(self.store.add(fakes.sample(
                uuid, timestamp=990.0 + i, iops=float(i))))
        self.assertEqual(6, len(self.store))
        cols = self.store.gather([(u, 'vda') for u in self.uuids], 1000.0)
        self.assertEqual([i / 2 for i in range(6)], cols.read_iops.tolist())
        self.store.forget(self.uuids[2], 'vda')
        self.assertIsNone(self.store.latest(self.uuids[2], 'vda'))
        # a new disk takes the forgotten row, nothing of the old one shows
        new = '99999999-2222-3333-4444-555555555555'
        self.store.add(fakes.sample(new, timestamp=999.0, gap='first'))
        self.assertEqual(6, self.store._size)
        latest = self.store.latest(new, 'vda')
        self.assertIsNone(latest['read_iops'])
        self.assertEqual('first', latest['gap'])
        cols = self.store.gather([(self.uuids[2], 'vda'), (new, 'vda')],
                                 1000.0)
        self.assertEqual([True, True], cols.stale.tolist())

    def test_batch_keeps_the_newest_of_a_disk(self):
        uuid = self.uuids[0]
        records = [samples.decode(fakes.sample(uuid, timestamp=t, iops=t))
                   for t in (995.0, 997.0, 996.0, 997.0)]
        self.assertEqual(2, self.store.add_many(records))
        self.assertEqual(2, self.store.rejected)
        self.assertEqual(997.0 / 2, self.store.latest(uuid, 'vda')[
            'read_iops'])

    def test_prune_frees_rows(self):
        for i, uuid in enumerate(self.uuids):
            self.store.add(fakes.sample(uuid, timestamp=986.0 + 2 * i))
        self.assertEqual(3, self.store.prune(1006.5))
        self.assertEqual(3, len(self.store))
        self.assertEqual(3, len(self.store._free))
        self.assertIsNone(self.store.latest(self.uuids[0], 'vda'))
        self.assertIsNotNone(self.store.latest(self.uuids[5], 'vda'))
