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

"""The samples of a host in columns (RPC 1.1): one check for the batch."""

import json
import math

import hypothesis
from hypothesis import strategies as st
import jsonschema
import numpy as np

from iotguard import batch
from iotguard.bench import batches as batches_mod
from iotguard import caps
from iotguard import exception
from iotguard import rates
from iotguard.tests import base

UUIDS = ['%08d-2222-3333-4444-555555555555' % i for i in range(3)]
RATES = (10.0, 20.0, 40960.0, 81920.0, 1.5, 2.5, 0.5)


def wire():
    """Three disks: rates and a cap, a gap, a volume with rates."""
    out = batches_mod.Builder(1000.0, 5.0)
    out.add(UUIDS[0], 'vda', None, 'p1', 5.01, None, RATES,
            {'total_iops_sec': 500, 'total_bytes_sec': 0},
            {'total_iops_sec': 100}, 1015.0, 'd1')
    out.add(UUIDS[1], 'vda', None, 'p1', 0.0, 'first', None, {})
    out.add(UUIDS[2], 'vdb', 'vol-1', 'p2', 4.99, None, RATES,
            {'read_iops_sec': 30, 'write_iops_sec': 20})
    return out.wire()


def _finite_numbers(disks):
    return all(not isinstance(v, float) or math.isfinite(v)
               for name in batch.NUMBERS for v in disks.get(name) or ())


def _one_line(disks):
    # names are stricter than the schema: its '$' lets a trailing newline
    # through
    return not any(isinstance(v, str) and '\n' in v
                   for name in ('instance_uuid', 'dev') for v in disks[name])


class BatchTest(base.TestCase):

    def test_an_agents_pass_is_the_builder_form(self):
        disks = batch.Disks.of([
            (UUIDS[0], 'vda', None, 'p1',
             {'total_iops_sec': 500, 'total_bytes_sec': 0}),
            (UUIDS[1], 'vda', None, 'p1', {}),
            (UUIDS[2], 'vdb', 'vol-1', 'p2',
             {'read_iops_sec': 30, 'write_iops_sec': 20})])
        measured = rates.Columns(
            np.array([5.01, 0.0, 4.99]), np.array([0, 1, 0], dtype=np.int8),
            np.array([RATES, [math.nan] * len(RATES), RATES]).T)
        got = batch.Batch.of_pass(1000.0, 5.0, disks, measured, [
            (0, {'total_iops_sec': 100}, 1015.0, 'd1')])
        self.assertEqual([True, False, False], got.capped.tolist())
        self.assertEqual(1000.0, got.read_at)
        # the same values, and the same JSON (the order of the keys)
        self.assertEqual(json.dumps(wire()), json.dumps(got.to_wire()))
        empty = batch.Batch.of_pass(
            1000.0, 5.0, batch.Disks.of([]),
            rates.Columns(np.zeros(0), np.zeros(0, np.int8),
                          np.zeros((7, 0))), [])
        self.assertEqual(batches_mod.Builder(1000.0, 5.0).wire(),
                         empty.to_wire())

    def test_the_wire_form_decodes_to_the_same_record(self):
        self.assertEqual(wire(), batch.decode(wire()).to_wire())
        decoded = batch.decode(wire())
        self.assertEqual((1000.0, 5.0), (decoded.read_at, decoded.sampling_s))
        # a merged batch keeps each disk's own time of reading
        merged = batch.merge([wire(), dict(wire(), timestamp=1001.0)])
        again = batch.decode(merged).to_wire()
        self.assertEqual(merged['disks'][batch.STAMPS],
                         again['disks'][batch.STAMPS])
        self.assertEqual(1001.0, again['timestamp'])
        self.assertNotIn('interval_s', again)

    def test_a_sampling_interval_that_is_no_number_is_refused(self):
        for bad in ('5', -1.0, math.inf, True):
            with self.assertRaises(exception.Invalid):
                batch.decode(dict(wire(), interval_s=bad))

    def test_the_wire_rounds_what_is_noise(self):
        disks = batch.Disks.of([(UUIDS[0], 'vda', None, 'p1', {}),
                                (UUIDS[1], 'vda', None, 'p1', {})])
        interval = 5.000123456789
        counters = np.array([[12345.0, 0.0], [7.0, 1.0],
                             [50569216.0, 4096.0], [28672.0, 0.0],
                             [0.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
        values = counters / interval
        values[4:6, 0] = (2.0 / 3.0, 13.123456789)
        values[:, 1] = math.nan      # Table.update's rates of a gap
        measured = rates.Columns(np.array([interval, interval]),
                                 np.array([0, 1], dtype=np.int8), values)
        disks_wire = batch.Batch.of_pass(1000.0, 5.0, disks, measured,
                                         []).to_wire()['disks']
        self.assertEqual([5.000123, 5.000123], disks_wire['interval_s'])
        got = [disks_wire[name][0] for name in batch.RATES]
        self.assertEqual([2468.939, 1.4, 10113593.0, 5734.0, 0.667, 13.123,
                          0.2], got)
        for name, sent, exact in zip(batch.RATES, got, values[:, 0]):
            self.assertLessEqual(abs(sent - exact),
                                 0.5 * 10.0 ** -batch.RATE_DECIMALS[name])
        # the shortest form on the wire, and the gap still has none
        self.assertIn('2468.939,', json.dumps(disks_wire))
        self.assertEqual([None] * 7, [disks_wire[name][1]
                                      for name in batch.RATES])
        self.assertEqual(2, len(batch.decode({'timestamp': 1000.0,
                                              'disks': disks_wire})))

    def test_builder_is_columns_and_matches_the_schema(self):
        w = wire()
        jsonschema.validate(w, batch.COLUMNS_SCHEMA)
        disks = w['disks']
        self.assertEqual(UUIDS, disks['instance_uuid'])
        self.assertEqual([None, 'first', None], disks['gap'])
        self.assertEqual([10.0, None, 10.0], disks['read_iops'])
        # static and cap: one list per key any disk sets, 0 = no limit
        self.assertEqual({'total_iops_sec': [500, 0, 0],
                          'read_iops_sec': [0, 0, 30],
                          'write_iops_sec': [0, 0, 20]}, disks['static'])
        self.assertEqual({'total_iops_sec': [100, 0, 0]}, disks['cap'])
        self.assertEqual([1015.0, None, None], disks['lease_expires_at'])

    def test_decode(self):
        b = batch.decode(wire())
        self.assertEqual(3, len(b))
        self.assertEqual(list(zip(UUIDS, ('vda', 'vda', 'vdb'))), b.keys())
        self.assertEqual([1000.0] * 3, b.timestamp.tolist())
        self.assertEqual(list(RATES), b.rates[:, 0].tolist())
        self.assertTrue(np.isnan(b.rates[:, 1]).all())
        row = caps.IOTUNE_KEYS.index('total_iops_sec')
        self.assertEqual([500, 0, 0], b.static[row].tolist())
        self.assertEqual([100, 0, 0], b.cap[row].tolist())
        self.assertEqual([True, False, False], b.capped.tolist())
        self.assertEqual([None, None, 'vol-1'], b.volume_id)
        two = b.take(np.array([2, 0]))
        self.assertEqual([UUIDS[2], UUIDS[0]], two.instance_uuid)
        self.assertEqual([False, True], two.capped.tolist())

    def test_empty_batch(self):
        empty = batches_mod.Builder(1000.0, 5.0).wire()
        self.assertEqual(0, len(batch.decode(empty)))
        self.assertEqual([], batch.to_samples(empty)['disks'])

    def test_old_form_is_what_each_disk_was(self):
        old = batch.to_samples(wire())
        self.assertEqual(3, batch.size(old))
        self.assertEqual(3, batch.size(wire()))
        for sample in old['disks']:
            caps.validate_sample(sample)
            self.assertEqual(1000.0, sample['timestamp'])
        first, gap, volume = old['disks']
        self.assertEqual({'total_iops_sec': 500}, first['static'])
        self.assertEqual(({'total_iops_sec': 100}, 1015.0, 'd1'),
                         (first['cap'], first['lease_expires_at'],
                          first['decision_id']))
        self.assertIsNone(gap['cap'])
        self.assertIsNone(gap['read_iops'])
        self.assertEqual('vol-1', volume['volume_id'])

    def test_malformed_batches_refused_whole(self):
        def spoiled(**disks):
            w = wire()
            w['disks'].update(disks)
            return w

        for bad in (None, [], {}, {'timestamp': 1.0, 'disks': []},
                    dict(wire(), timestamp=math.nan),
                    dict(wire(), timestamp='now'),
                    spoiled(dev=['vda', 'vda']),
                    spoiled(dev=['vda', 'vda', '0bad']),
                    spoiled(dev=['vda', 'vda\nvdc', 'vdb']),
                    spoiled(instance_uuid=[UUIDS[0], 'x', UUIDS[2]]),
                    spoiled(read_iops=[1.0, None, math.nan]),
                    spoiled(read_iops=[1.0, None, math.inf]),
                    spoiled(read_iops=[1.0, None, -1.0]),
                    spoiled(read_iops=[1.0, None, caps.MAX_RATE * 2]),
                    spoiled(read_iops=[1.0, None, True]),
                    spoiled(read_iops=[1.0, None, '1']),
                    spoiled(read_iops=[1.0, None, 10 ** 400]),
                    spoiled(interval_s=[5.0, None, 5.0]),
                    spoiled(gap=[None, 3, None]),
                    spoiled(static={'total_iops_sec': [1, 2]}),
                    spoiled(static={'total_iops_sec': [1, 2, -3]}),
                    spoiled(static={'total_iops_sec': [1, 2, 2 ** 63]}),
                    spoiled(static={'total_iops_sec': [1, 2, 3.0]}),
                    spoiled(static={'iops': [1, 2, 3]}),
                    spoiled(cap=None),
                    spoiled(lease_expires_at=[1.0, math.inf, None]),
                    spoiled(extra=[1, 2, 3])):
            self.assertRaises(exception.Invalid, batch.decode, bad)

    def test_optional_lists_may_be_left_out(self):
        w = wire()
        for name in batch.OPTIONAL:
            del w['disks'][name]
        b = batch.decode(w)
        self.assertEqual([None] * 3, b.project_id)
        self.assertFalse(b.capped.any())

    @hypothesis.settings(max_examples=300, deadline=None)
    @hypothesis.given(
        st.sampled_from(batch.STRINGS + batch.NUMBERS),
        st.integers(0, 2),
        st.one_of(st.none(), st.booleans(), st.integers(-2 ** 64, 2 ** 64),
                  st.floats(allow_nan=True, allow_infinity=True),
                  st.text(max_size=40),
                  st.sampled_from([UUIDS[1], UUIDS[1] + '\n', 'vdz',
                                   'v' * 33, '1a', {}, []])))
    def test_decode_agrees_with_the_schema(self, name, i, value):
        w = wire()
        w['disks'][name][i] = value
        try:
            jsonschema.validate(w, batch.COLUMNS_SCHEMA)
            wanted = _finite_numbers(w['disks']) and _one_line(w['disks'])
        except jsonschema.ValidationError:
            wanted = False
        try:
            batch.decode(w)
        except exception.Invalid:
            self.assertFalse(wanted, (name, value))
            return
        self.assertTrue(wanted, (name, value))


class RouteTest(base.TestCase):
    """What a routing controller reads and sends on (RPC 1.2)."""

    def test_what_a_router_refuses_before_routing(self):
        # the router checks the batch whole (decode) and routes by its
        # keys: a batch it could not cut into shares never gets there
        self.assertEqual([(UUIDS[0], 'vda'), (UUIDS[1], 'vda'),
                          (UUIDS[2], 'vdb')], batch.decode(wire()).keys())
        for spoil in ({'dev': ['vda']}, {'dev': 'vda'},
                      {'instance_uuid': [1, 2, 3]}, {'gap': [None]},
                      {'read_iops': 5.0},
                      {'static': {'total_iops_sec': [1, 2]}},
                      {'cap': {'total_iops_sec': 7}}, {'cap': [0, 0, 0]}):
            bad = wire()
            bad['disks'].update(spoil)
            self.assertRaises(exception.Invalid, batch.decode, bad)
        for bad in (None, [], {'disks': []}, {'disks': {}}):
            self.assertRaises(exception.Invalid, batch.decode, bad)

    def test_select_is_take_before_the_check(self):
        whole = batch.decode(wire())
        for rows in ([0], [2], [0, 2], [2, 0, 1], []):
            got = batch.decode(batch.select(wire(), rows))
            want = whole.take(np.array(rows, dtype=np.intp))
            self.assertEqual(want.keys(), got.keys())
            np.testing.assert_array_equal(want.rates, got.rates)
            np.testing.assert_array_equal(want.static, got.static)
            np.testing.assert_array_equal(want.cap, got.cap)
            np.testing.assert_array_equal(want.lease_expires_at,
                                          got.lease_expires_at)
            self.assertEqual((want.gap, want.decision_id, want.volume_id),
                             (got.gap, got.decision_id, got.volume_id))

    def test_optional_lists_left_out_stay_out(self):
        bare = wire()
        del bare['disks']['volume_id']
        self.assertEqual(3, len(batch.decode(bare)))
        share = batch.select(bare, [1])
        self.assertNotIn('volume_id', share['disks'])
        self.assertEqual([None], batch.decode(share).volume_id)

    def test_merge_keeps_each_disk_s_time_and_limits(self):
        first = batch.select(wire(), [0])      # a cap and a static key
        second = wire()
        second['timestamp'] = 1003.0
        second = batch.select(second, [2])     # read/write static keys
        del second['disks']['volume_id']
        merged = batch.merge([first, second])
        got = batch.decode(merged)
        self.assertEqual([(UUIDS[0], 'vda'), (UUIDS[2], 'vdb')], got.keys())
        np.testing.assert_array_equal([1000.0, 1003.0], got.timestamp)
        self.assertEqual([None, None], got.volume_id)
        row = {key: i for i, key in enumerate(caps.IOTUNE_KEYS)}
        self.assertEqual([500, 0], got.static[row['total_iops_sec']].tolist())
        self.assertEqual([0, 30], got.static[row['read_iops_sec']].tolist())
        self.assertEqual([100, 0], got.cap[row['total_iops_sec']].tolist())
        self.assertEqual([True, False], got.capped.tolist())
        self.assertEqual(2, len(batch.decode(merged)))
        # merged again (a share of shares), the times stay
        again = batch.decode(batch.merge([batch.select(merged, [1])]))
        np.testing.assert_array_equal([1003.0], again.timestamp)

    def test_a_bad_time_of_reading_is_refused(self):
        bad = wire()
        bad['disks'][batch.STAMPS] = [1000.0, math.nan, 1000.0]
        self.assertRaises(exception.Invalid, batch.decode, bad)
