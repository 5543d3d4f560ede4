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

"""The one sample contract: a batch in columns, one check for it."""

import json
import math
import re

import hypothesis
from hypothesis import strategies as st
import numpy as np

from iotguard import exception
from iotguard.tests import base
from iotguard.wire import batch
from iotguard.wire import caps
from iotguard.wire import rates

UUIDS = ['%08d-2222-3333-4444-555555555555' % i for i in range(3)]
RATES = (10.0, 20.0, 40960.0, 81920.0, 1.5, 2.5)
STATIC = ({'total_iops_sec': 500, 'total_bytes_sec': 0}, {},
          {'read_iops_sec': 30, 'write_iops_sec': 20})


def rows():
    """Three disks: rates and a static ceiling, a gap, a volume."""
    return [
        batch.Row(UUIDS[0], 'vda', 1000.0, 5.01,
                  rates=dict(zip(batch.RATES, RATES)), static=STATIC[0],
                  project_id='p1'),
        batch.Row(UUIDS[1], 'vda', 1000.0, 0.0, gap='first',
                  static=STATIC[1], project_id='p1'),
        batch.Row(UUIDS[2], 'vdb', 1000.0, 4.99,
                  rates=dict(zip(batch.RATES, RATES)), static=STATIC[2],
                  volume_id='vol-1', project_id='p2')]


def wire():
    return batch.Batch.of_rows(rows()).to_wire()


def assert_same(test, want, got):
    """Two batches hold the same disks and values."""
    test.assertEqual(want.keys(), got.keys())
    for name in ('timestamp', 'interval_s', 'rates', 'static'):
        np.testing.assert_array_equal(getattr(want, name),
                                      getattr(got, name), name)
    test.assertEqual((want.gap, want.volume_id, want.project_id),
                     (got.gap, got.volume_id, got.project_id))
    test.assertEqual(want.read_at, got.read_at)


class BatchTest(base.TestCase):

    def test_an_agents_pass_is_the_rows_form(self):
        disks = batch.Disks.of([
            (UUIDS[0], 'vda', None, 'p1', STATIC[0]),
            (UUIDS[1], 'vda', None, 'p1', STATIC[1]),
            (UUIDS[2], 'vdb', 'vol-1', 'p2', STATIC[2])])
        measured = rates.Columns(
            np.array([5.01, 0.0, 4.99]), np.array([0, 1, 0], dtype=np.int8),
            np.array([RATES, [math.nan] * len(RATES), RATES]).T)
        got = batch.Batch.of_pass(1000.0, disks, measured)
        self.assertEqual(1000.0, got.read_at)
        assert_same(self, batch.Batch.of_rows(rows()), got)
        # the same JSON (the order of the keys too)
        self.assertEqual(json.dumps(wire()), json.dumps(got.to_wire()))
        empty = batch.Batch.of_pass(
            1000.0, batch.Disks.of([]),
            rates.Columns(np.zeros(0), np.zeros(0, np.int8),
                          np.zeros((len(batch.RATES), 0))))
        self.assertEqual(0, len(batch.decode(empty.to_wire())))

    def test_the_wire_form_decodes_to_the_same_record(self):
        assert_same(self, batch.Batch.of_rows(rows()), batch.decode(wire()))
        self.assertEqual(wire(), batch.decode(wire()).to_wire())
        self.assertEqual({'timestamp', 'disks'}, set(wire()))
        self.assertEqual(set(batch.WIRE_LISTS), set(wire()['disks']))

    def test_only_what_the_controller_reads_is_sent(self):
        # the rates the decision reads, the two static ceilings, what
        # registering an unknown disk needs: no caps, leases, decision
        # ids, iotune keys or flushes
        disks = wire()['disks']
        self.assertEqual(
            ['instance_uuid', 'dev', 'volume_id', 'project_id', 'gap',
             'interval_s', 'read_iops', 'write_iops', 'read_bytes_sec',
             'write_bytes_sec', 'read_latency_ms', 'write_latency_ms',
             'static_iops_sec', 'static_bytes_sec'], list(disks))

    def test_static_ceilings_are_caps_ceiling_and_0_on_the_wire(self):
        disks = wire()['disks']
        # total; none; read + write
        self.assertEqual([500, 0, 50], disks['static_iops_sec'])
        self.assertEqual([0, 0, 0], disks['static_bytes_sec'])
        got = batch.decode(wire())
        self.assertEqual([500.0, math.inf, 50.0], got.static[0].tolist())
        self.assertEqual([caps.ceiling(s, 'iops_sec') for s in STATIC],
                         got.static[0].tolist())
        self.assertEqual([caps.ceiling(s, 'bytes_sec') for s in STATIC],
                         got.static[1].tolist())
        # one direction alone bounds no total
        self.assertEqual([math.inf], batch.ceilings(
            [{'read_iops_sec': 30}])[0].tolist())

    def test_the_wire_rounds_what_is_noise(self):
        disks = batch.Disks.of([(UUIDS[0], 'vda', None, 'p1', {}),
                                (UUIDS[1], 'vda', None, 'p1', {})])
        interval = 5.000123456789
        counters = np.array([[12345.0, 0.0], [7.0, 1.0],
                             [50569216.0, 4096.0], [28672.0, 0.0],
                             [0.0, 0.0], [0.0, 0.0]])
        values = counters / interval
        values[4:6, 0] = (2.0 / 3.0, 13.123456789)
        values[:, 1] = math.nan      # Table.update's rates of a gap
        measured = rates.Columns(np.array([interval, interval]),
                                 np.array([0, 1], dtype=np.int8), values)
        disks_wire = batch.Batch.of_pass(1000.0, disks,
                                         measured).to_wire()['disks']
        self.assertEqual([5.000123, 5.000123], disks_wire['interval_s'])
        got = [disks_wire[name][0] for name in batch.RATES]
        self.assertEqual([2468.939, 1.4, 10113593.0, 5734.0, 0.667, 13.123],
                         got)
        for name, sent, exact in zip(batch.RATES, got, values[:, 0]):
            self.assertLessEqual(abs(sent - exact),
                                 0.5 * 10.0 ** -batch.RATE_DECIMALS[name])
        # the shortest form on the wire, and the gap still has none
        self.assertIn('2468.939,', json.dumps(disks_wire))
        self.assertEqual([None] * len(batch.RATES),
                         [disks_wire[name][1] for name in batch.RATES])
        self.assertEqual(2, len(batch.decode({'timestamp': 1000.0,
                                              'disks': disks_wire})))

    def test_decode(self):
        b = batch.decode(wire())
        self.assertEqual(3, len(b))
        self.assertEqual(list(zip(UUIDS, ('vda', 'vda', 'vdb'))), b.keys())
        self.assertEqual([1000.0] * 3, b.timestamp.tolist())
        self.assertEqual(list(RATES), b.rates[:, 0].tolist())
        self.assertTrue(np.isnan(b.rates[:, 1]).all())
        self.assertEqual([None, None, 'vol-1'], b.volume_id)
        self.assertEqual(['p1', 'p1', 'p2'], b.project_id)
        two = b.take(np.array([2, 0]))
        self.assertEqual([UUIDS[2], UUIDS[0]], two.instance_uuid)
        self.assertEqual([50.0, 500.0], two.static[0].tolist())

    def test_rows_leave_missing_rates_none(self):
        got = batch.Batch.of_rows([batch.Row(
            UUIDS[0], 'vda', 1.0, 5.0, rates={'read_iops': 3.0,
                                              'write_iops': None})])
        self.assertEqual(3.0, got.rates[0, 0])
        self.assertTrue(np.isnan(got.rates[1:, 0]).all())
        self.assertEqual(0, len(batch.Batch.of_rows([])))

    def test_malformed_batches_refused_whole(self):
        def spoiled(**disks):
            w = wire()
            w['disks'].update(disks)
            return w

        for bad in (None, [], {}, {'timestamp': 1.0, 'disks': []},
                    {'disks': {}}, dict(wire(), interval_s=5.0),
                    dict(wire(), timestamp=math.nan),
                    dict(wire(), timestamp='now'),
                    spoiled(dev=['vda', 'vda']),
                    spoiled(dev='vda'),
                    spoiled(dev=['vda', 'vda', '0bad']),
                    spoiled(dev=['vda', 'vda\nvdc', 'vdb']),
                    spoiled(dev=['vda', 'vda', 'vdb\n']),
                    spoiled(instance_uuid=[UUIDS[0], 'x', UUIDS[2]]),
                    spoiled(read_iops=[1.0, None, math.nan]),
                    spoiled(read_iops=[1.0, None, math.inf]),
                    spoiled(read_iops=[1.0, None, -1.0]),
                    spoiled(read_iops=[1.0, None, caps.MAX_RATE * 2]),
                    spoiled(read_iops=[1.0, None, True]),
                    spoiled(read_iops=[1.0, None, '1']),
                    spoiled(read_iops=[1.0, None, 10 ** 400]),
                    spoiled(read_iops=5.0),
                    spoiled(interval_s=[5.0, None, 5.0]),
                    spoiled(interval_s=[5.0, math.inf, 5.0]),
                    spoiled(gap=[None, 3, None]),
                    spoiled(gap=[None]),
                    spoiled(static_iops_sec=[1, 2]),
                    spoiled(static_iops_sec=[1, 2, -3]),
                    spoiled(static_iops_sec=[1, 2, 2 ** 63]),
                    spoiled(static_iops_sec=[1, 2, 3.0]),
                    spoiled(static_bytes_sec=[1, 2, True]),
                    spoiled(static_bytes_sec=None),
                    spoiled(timestamp=[1000.0, math.nan, 1000.0]),
                    spoiled(cap={'total_iops_sec': [1, 2, 3]}),
                    spoiled(lease_expires_at=[None] * 3),
                    spoiled(flush_ops=[0.0] * 3),
                    spoiled(extra=[1, 2, 3])):
            self.assertRaises(exception.Invalid, batch.decode, bad)
        w = wire()
        del w['disks']['project_id']
        self.assertRaises(exception.Invalid, batch.decode, w)

    @hypothesis.settings(max_examples=300, deadline=None)
    @hypothesis.given(
        st.sampled_from(batch.WIRE_LISTS + (batch.STAMPS,)),
        st.integers(0, 2),
        st.one_of(st.none(), st.booleans(), st.integers(-2 ** 64, 2 ** 64),
                  st.floats(allow_nan=True, allow_infinity=True),
                  st.text(max_size=40),
                  st.sampled_from([UUIDS[1], UUIDS[1] + '\n', 'vdz',
                                   'v' * 33, '1a', {}, []])))
    def test_decode_takes_exactly_the_valid_values(self, name, i, value):
        w = wire()
        w['disks'].setdefault(name, [1000.0] * 3)[i] = value
        try:
            batch.decode(w)
        except exception.Invalid:
            self.assertFalse(_valid(name, value), (name, value))
            return
        self.assertTrue(_valid(name, value), (name, value))


def _number(value):
    return type(value) in (int, float) and math.isfinite(value)


def _valid(name, value):
    """One value of a column as the contract says, written apart."""
    if name in ('instance_uuid', 'dev'):
        pattern = (r'[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}'
                   if name == 'instance_uuid'
                   else r'[a-zA-Z][a-zA-Z0-9_-]{0,31}')
        return type(value) is str and re.fullmatch(pattern, value) \
            is not None
    if name in ('volume_id', 'project_id', 'gap'):
        return value is None or type(value) is str
    if name in ('interval_s', batch.STAMPS):
        return _number(value)
    if name in batch.CEILINGS:
        return type(value) is int and 0 <= value < 2 ** 63
    return value is None or _number(value) and 0 <= value <= caps.MAX_RATE


class UrgentTest(base.TestCase):
    """The disks a batch marks urgent: positions on the wire (API 1.1)."""

    def urgent(self, *positions):
        marked = np.zeros(3, dtype=bool)
        marked[list(positions)] = True
        return batch.Batch.of_pass(1000.0, batch.Disks.of([
            (UUIDS[i], 'vda', None, 'p1', {}) for i in range(3)]),
            rates.Columns(np.full(3, 1.0), np.zeros(3, np.int8),
                          np.ones((len(batch.RATES), 3))), marked)

    def test_positions_through_the_wire_take_and_merge(self):
        sent = self.urgent(0, 2)
        self.assertEqual([0, 2], sent.to_wire()['disks']['urgent'])
        got = batch.decode(sent.to_wire())
        self.assertEqual([0, 2], got.urgent_rows())
        self.assertEqual([1], got.take(np.array([1, 2])).urgent_rows())
        self.assertEqual([], got.take(np.array([1])).urgent_rows())
        plain = batch.decode(wire())
        self.assertIsNone(plain.urgent)
        self.assertEqual([3, 5], batch.merge([plain, got]).urgent_rows())
        self.assertIsNone(batch.merge([plain, plain]).urgent)
        # none urgent: nothing on the wire, an older controller reads it
        self.assertIsNone(self.urgent().urgent)
        self.assertNotIn('urgent', self.urgent().to_wire()['disks'])

    def test_bad_positions_refuse_the_batch(self):
        for bad in ([3], [-1], [1, 1], [2, 0], [True], [0.0], 1, ['0']):
            w = self.urgent(0).to_wire()
            w['disks']['urgent'] = bad
            self.assertRaises(exception.Invalid, batch.decode, w)


class P99Test(base.TestCase):
    """Each disk's p99 latency (API 1.2): a column, null where none."""

    def measured(self, *p99):
        return batch.Batch.of_pass(1000.0, batch.Disks.of([
            (UUIDS[i], 'vda', None, 'p1', {}) for i in range(3)]),
            rates.Columns(np.full(3, 1.0), np.zeros(3, np.int8),
                          np.ones((len(batch.RATES), 3))), None,
            np.array(p99, dtype=np.float64))

    def test_through_the_wire_take_and_merge(self):
        sent = self.measured(12.3456, math.nan, 0.5)
        self.assertEqual([12.346, None, 0.5],
                         sent.to_wire()['disks']['p99_ms'])
        got = batch.decode(json.loads(json.dumps(sent.to_wire())))
        np.testing.assert_array_equal([12.346, math.nan, 0.5], got.p99_ms)
        np.testing.assert_array_equal(
            [0.5, math.nan], got.take(np.array([2, 1])).p99_ms)
        plain = batch.decode(wire())
        self.assertIsNone(plain.p99_ms)
        np.testing.assert_array_equal(
            [math.nan] * 3 + [12.346, math.nan, 0.5],
            batch.merge([plain, got]).p99_ms)
        self.assertIsNone(batch.merge([plain, plain]).p99_ms)
        # none measured: nothing on the wire, an older controller reads it
        for none in (self.measured(math.nan, math.nan, math.nan),
                     batch.Batch.of_pass(
                         1000.0, batch.Disks.of([]), rates.Columns(
                             np.zeros(0), np.zeros(0, np.int8),
                             np.ones((len(batch.RATES), 0))))):
            self.assertIsNone(none.p99_ms)
            self.assertNotIn('p99_ms', none.to_wire()['disks'])

    def test_bad_values_refuse_the_batch(self):
        for bad in ([1.0, 2.0], [-1.0, 0, 0], [1e9, 0, 0], ['1', 0, 0],
                    [math.inf, 0, 0], 1):
            w = self.measured(1.0, 2.0, 3.0).to_wire()
            w['disks']['p99_ms'] = bad
            self.assertRaises(exception.Invalid, batch.decode, w)


class RouteTest(base.TestCase):
    """What a routing controller cuts and sends on."""

    def test_a_share_is_take_through_the_wire(self):
        whole = batch.decode(wire())
        for positions in ([0], [2], [0, 2], [2, 0, 1], []):
            share = whole.take(np.array(positions, dtype=np.intp))
            assert_same(self, share, batch.decode(share.to_wire())
                        if positions else share)

    def test_merge_keeps_each_disk_s_time(self):
        first = batch.decode(wire()).take(np.array([0]))
        later = [r._replace(timestamp=1003.0) for r in rows()]
        second = batch.decode(batch.Batch.of_rows(later).to_wire()).take(
            np.array([2]))
        merged = batch.merge([first, second])
        self.assertEqual(1003.0, merged.read_at)
        sent = merged.to_wire()
        self.assertEqual([1000.0, 1003.0], sent['disks'][batch.STAMPS])
        got = batch.decode(sent)
        self.assertEqual([(UUIDS[0], 'vda'), (UUIDS[2], 'vdb')], got.keys())
        np.testing.assert_array_equal([1000.0, 1003.0], got.timestamp)
        self.assertEqual([None, 'vol-1'], got.volume_id)
        self.assertEqual([500.0, 50.0], got.static[0].tolist())
        # merged again (a share of shares), the times stay
        again = batch.decode(batch.merge([got.take(np.array([1]))]).to_wire())
        np.testing.assert_array_equal([1003.0], again.timestamp)
        self.assertEqual(0, len(batch.merge([])))
