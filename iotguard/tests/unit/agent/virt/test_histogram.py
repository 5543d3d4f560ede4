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

"""QEMU's latency histograms: the monitor commands, deltas, the p99."""

import json
import math
import sys
import types

import fixtures
import testtools

from iotguard.agent.virt import histogram

BOUNDS = (1, 2, 5, 10)
QDEV = '/machine/peripheral/virtio-disk0/virtio-backend'


class P99Test(testtools.TestCase):
    """The percentile of a histogram's counts, interpolated in its bin."""

    def test_interpolated_in_the_bin(self):
        # 100 operations in [2, 5): the 99th is 0.99 of the way through
        self.assertAlmostEqual(
            histogram.p99_ms([0, 0, 100, 0, 0], BOUNDS), 4.97)
        # 50 under 1 ms, 50 in [1, 2): rank 99 is the 49th of the second
        self.assertAlmostEqual(histogram.p99_ms([50, 50, 0, 0, 0], BOUNDS),
                               1.98)
        # 99 fast, 1 slow: the rank falls at the end of the first bin
        self.assertAlmostEqual(histogram.p99_ms([99, 0, 0, 1, 0], BOUNDS),
                               1.0)

    def test_open_last_bin_and_empty(self):
        self.assertEqual(histogram.p99_ms([0, 0, 0, 0, 3], BOUNDS), 10.0)
        self.assertTrue(math.isnan(histogram.p99_ms([0] * 5, BOUNDS)))


class DeltaTest(testtools.TestCase):

    def test_delta_of_two_readings(self):
        self.assertEqual([1, 0, 5],
                         list(histogram.delta([2, 3, 4], [3, 3, 9])))

    def test_reset_gives_none(self):
        # one bin lower than before: the counters were reset
        self.assertIsNone(histogram.delta([2, 3, 4], [9, 9, 1]))
        # other bins (the bounds changed)
        self.assertIsNone(histogram.delta([2, 3, 4], [2, 3, 4, 0]))


class IntervalsTest(testtools.TestCase):

    def test_p99_of_each_interval(self):
        iv = histogram.Intervals(BOUNDS)
        key = ('u', 'vda')
        self.assertTrue(math.isnan(iv.p99_ms(key, [1000, 0, 0, 0, 0])))
        # 100 more operations, all in [5, 10): the old thousand fast ones
        # do not count
        self.assertAlmostEqual(9.95, iv.p99_ms(key, [1000, 0, 0, 100, 0]))
        # nothing since: no value
        self.assertTrue(math.isnan(iv.p99_ms(key, [1000, 0, 0, 100, 0])))

    def test_reset_no_value_then_from_the_new_counts(self):
        iv = histogram.Intervals(BOUNDS)
        key = ('u', 'vda')
        iv.p99_ms(key, [1000, 0, 0, 100, 0])
        self.assertTrue(math.isnan(iv.p99_ms(key, [10, 0, 0, 0, 0])))
        self.assertAlmostEqual(1.99, iv.p99_ms(key, [10, 100, 0, 0, 0]))

    def test_bins_of_other_bounds_give_no_value(self):
        # another client set the histogram with other bounds (one more)
        iv = histogram.Intervals(BOUNDS)
        iv.p99_ms('a', [1, 0, 0, 0, 0, 0])
        self.assertTrue(math.isnan(iv.p99_ms('a', [1, 0, 0, 0, 9, 0])))

    def test_forget(self):
        iv = histogram.Intervals(BOUNDS)
        iv.p99_ms('a', [1, 0, 0, 0, 0])
        iv.p99_ms('b', [1, 0, 0, 0, 0])
        iv.forget({'b'})
        # 'a' starts over, 'b' goes on
        self.assertTrue(math.isnan(iv.p99_ms('a', [2, 0, 0, 0, 0])))
        self.assertAlmostEqual(0.99, iv.p99_ms('b', [2, 0, 0, 0, 0]))


class MonitorTest(testtools.TestCase):
    """What is sent to QEMU's monitor, what is read of its answer."""

    def setUp(self):
        super().setUp()
        self.sent = []
        self.answer = {'return': {}}

        def command(dom, text, flags):
            self.sent.append(json.loads(text))
            return json.dumps(self.answer)
        module = types.ModuleType('libvirt_qemu')
        module.qemuMonitorCommand = command
        self.useFixture(fixtures.MonkeyPatch(
            'sys.modules', dict(sys.modules, libvirt_qemu=module)))

    def test_set_bounds(self):
        histogram.set_bounds(object(), 'virtio-disk1', (1, 2.5), ('wr',))
        self.assertEqual([{'execute': 'block-latency-histogram-set',
                           'arguments': {
                               'id': '/machine/peripheral/virtio-disk1/'
                                     'virtio-backend',
                               'boundaries-write': [1000000, 2500000]}}],
                         self.sent)
        histogram.set_bounds(object(), 'virtio-disk1', (1,))
        self.assertEqual([1000000], self.sent[1]['arguments'][
            'boundaries-read'])

    def test_read_adds_reads_and_writes_by_alias(self):
        self.answer = {'return': [
            {'device': '', 'qdev': QDEV, 'stats': {
                'rd_latency_histogram': {'bins': [1, 2, 3]},
                'wr_latency_histogram': {'bins': [10, 0, 1]}}},
            # a disk without bins (no bounds set on it)
            {'device': '', 'qdev': '/machine/peripheral/virtio-disk1/'
                                   'virtio-backend', 'stats': {}}]}
        got = histogram.read(object())
        self.assertEqual(['virtio-disk0'], list(got))
        self.assertEqual([11, 2, 4], list(got['virtio-disk0']))
        self.assertEqual([10, 0, 1],
                         list(histogram.read(object(), ('wr',))[
                             'virtio-disk0']))
        self.assertEqual([{'execute': 'query-blockstats'}] * 2, self.sent)

    def test_error_raises(self):
        self.answer = {'error': {'class': 'GenericError',
                                 'desc': 'Device not found'}}
        self.assertRaisesRegex(histogram.Error, 'Device not found',
                               histogram.set_bounds, object(), 'x')
