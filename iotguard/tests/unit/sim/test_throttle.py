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

from iotguard.sim import throttle
from iotguard.sim import world
from iotguard.tests import base
from iotguard.tests.unit.sim import helpers
from iotguard.wire import caps


def tune(**values):
    result = caps.full({})
    result.update(values)
    return result


def iops_under(limits, seconds=30.0, processes=4, bs=4096):
    sc = helpers.make(duration_s=seconds, vms=[
        helpers.vm('a', [{'bs': bs, 'processes': processes}],
                   limits=limits)])
    w = world.World(sc)
    disk_id = w.disk_ids()[0]
    w.step(seconds)
    return w.counters(disk_id), disk_id, w


class TestMerge(base.TestCase):

    def test_keys_not_given_keep_their_value(self):
        current = tune(total_iops_sec=100, read_bytes_sec=5000)
        result = throttle.merge(current, {'total_iops_sec': 50})
        self.assertEqual(tune(total_iops_sec=50, read_bytes_sec=5000),
                         result)

    def test_total_clears_read_and_write_of_its_kind(self):
        current = tune(read_bytes_sec=5000, write_bytes_sec=6000,
                       total_iops_sec=10)
        result = throttle.merge(current, {'total_bytes_sec': 9000})
        self.assertEqual(tune(total_bytes_sec=9000, total_iops_sec=10),
                         result)

    def test_read_clears_total_of_its_kind(self):
        current = tune(total_bytes_sec=9000, total_iops_sec=10)
        result = throttle.merge(current, {'read_bytes_sec': 100})
        self.assertEqual(tune(read_bytes_sec=100, total_iops_sec=10),
                         result)

    def test_burst_dropped_with_its_base(self):
        current = tune(total_bytes_sec=9000, total_bytes_sec_max=20000)
        result = throttle.merge(current, {'read_bytes_sec': 100})
        self.assertEqual(tune(read_bytes_sec=100), result)

    def test_errors(self):
        cases = [
            ({'bogus_sec': 1}, 'unknown iotune key'),
            ({'total_iops_sec': -1}, 'must be >= 0'),
            ({'total_iops_sec': 1.5}, 'must be an integer'),
            ({'total_iops_sec': 5, 'read_iops_sec': 3}, 'same call'),
            ({'total_bytes_sec_max': 5},
             'total_bytes_sec_max=5 needs total_bytes_sec'),
            ({'total_bytes_sec': 10, 'total_bytes_sec_max': 5},
             'total_bytes_sec_max=5 is below total_bytes_sec=10'),
        ]
        for params, message in cases:
            e = self.assertRaises(ValueError, throttle.merge,
                                  caps.full({}), params)
            self.assertIn(message, str(e))


class TestBucket(base.TestCase):

    def test_iops_limit_holds_the_rate(self):
        unlimited, _, _ = iops_under({})
        limited, _, _ = iops_under({'total_iops_sec': 40})
        self.assertGreater(unlimited['wr_reqs'] / 30, 150)
        # 40/s for 30 s, plus the 0.1 s bucket and one request of overshoot
        self.assertAlmostEqual(40 * 30, limited['wr_reqs'], delta=6)

    def test_bytes_limit_holds_the_rate(self):
        counters, _, _ = iops_under({'write_bytes_sec': 409600}, bs=65536)
        self.assertAlmostEqual(409600 * 30, counters['wr_bytes'],
                               delta=2 * 65536)

    def test_read_limit_leaves_writes_alone(self):
        counters, _, _ = iops_under({'read_iops_sec': 10})
        self.assertGreater(counters['wr_reqs'] / 30, 150)

    def test_burst_lets_more_through_first(self):
        plain, _, _ = iops_under({'total_iops_sec': 20}, seconds=2)
        burst, _, _ = iops_under({'total_iops_sec': 20,
                                  'total_iops_sec_max': 200}, seconds=2)
        self.assertAlmostEqual(40, plain['wr_reqs'], delta=4)
        # a 1 s burst of 200 operations comes on top of the average rate
        self.assertAlmostEqual(200 + 40, burst['wr_reqs'], delta=6)

    def test_throttle_wait_counts_in_latency(self):
        free, _, _ = iops_under({}, seconds=10)
        held, _, _ = iops_under({'total_iops_sec': 20}, seconds=10)
        free_ms = free['wr_times'] / free['wr_reqs'] / 1e6
        held_ms = held['wr_times'] / held['wr_reqs'] / 1e6
        # 4 requests in flight at 20/s: 200 ms each (Little's law)
        self.assertAlmostEqual(200, held_ms, delta=15)
        # unthrottled: 4 in flight at about 177/s
        self.assertAlmostEqual(4 / 177 * 1000, free_ms, delta=2)
