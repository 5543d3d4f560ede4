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

"""The one snapshot builder, :meth:`DomainSnapshot.of_samples`."""

import math

import numpy as np
import testtools

from iotguard.policy import base
from iotguard.tests.unit.policy import fakes

NAN, INF = math.nan, math.inf


def samples(**columns):
    """Three disks' sample columns; ``columns`` replace the defaults."""
    n = 3
    values = {name: np.zeros(n) for name in base.SampleColumns._fields}
    values['static_iops'] = np.full(n, INF)
    values['static_bytes_sec'] = np.full(n, INF)
    values['stale'] = np.zeros(n, dtype=np.bool_)
    values.update({k: np.asarray(v) for k, v in columns.items()})
    return base.SampleColumns(**values)


def build(columns, tiers=(fakes.PLAIN,) * 3, caps=(INF, INF, NAN)):
    cap_iops, cap_bytes_sec, cap_set_at = (np.full(3, c) for c in caps)
    return base.DomainSnapshot.of_samples(
        'pool', fakes.PROFILE, 5.0, ('a', 'b', 'c'), list(tiers), columns,
        cap_iops, cap_bytes_sec, cap_set_at)


class OfSamplesTest(testtools.TestCase):

    def test_rates_add_up_and_none_counts_as_zero(self):
        snap = build(samples(read_iops=[10.0, NAN, 0.0],
                             write_iops=[30.0, 5.0, NAN],
                             read_bytes_sec=[4096.0, NAN, NAN],
                             write_bytes_sec=[8192.0, 100.0, NAN]))
        np.testing.assert_array_equal([40.0, 5.0, 0.0], snap.iops)
        np.testing.assert_array_equal([12288.0, 100.0, 0.0],
                                      snap.bytes_sec)

    def test_latency_is_weighted_by_each_direction_s_rate(self):
        snap = build(samples(read_iops=[10.0, 0.0, 0.0],
                             write_iops=[30.0, 5.0, 0.0],
                             read_latency_ms=[2.0, NAN, 9.0],
                             write_latency_ms=[6.0, 4.0, 9.0]))
        # (10 x 2 + 30 x 6) / 40; no reads: the writes'; no I/O: 0
        np.testing.assert_array_equal([5.0, 4.0, 0.0], snap.latency_ms)

    def test_the_tightest_of_tier_and_static_ceilings(self):
        capped = base.Tier('capped', max_iops=100.0, max_bytes_sec=0.0)
        snap = build(samples(static_iops=[50.0, 500.0, INF],
                             static_bytes_sec=[INF, 1e6, INF]),
                     tiers=(capped, capped, fakes.PLAIN))
        np.testing.assert_array_equal([50.0, 100.0, INF], snap.ceil_iops)
        np.testing.assert_array_equal([INF, 1e6, INF], snap.ceil_bytes_sec)
        np.testing.assert_array_equal([50.0, 500.0, INF], snap.static_iops)

    def test_stale_flags_are_copied_not_shared(self):
        columns = samples(stale=[True, False, False])
        snap = build(columns)
        columns.stale[1] = True
        self.assertEqual([True, False, False], snap.stale.tolist())

    def test_row_form_disks_are_the_same_builder(self):
        tier = base.Tier('gold', min_iops=10.0, max_iops=100.0, weight=2.0)
        rows = [fakes.disk('a', ops=20.0, tier=tier, latency_ms=3.0,
                           static_iops=50.0, cap_iops=40.0, cap_set_at=7.0),
                fakes.disk('b', ops=0.0, stale=True)]
        snap = fakes.snapshot(*rows)
        self.assertEqual(('a', 'b'), snap.disk_ids)
        np.testing.assert_array_equal([20.0, 0.0], snap.iops)
        np.testing.assert_array_equal([3.0, 0.0], snap.latency_ms)
        np.testing.assert_array_equal([10.0, 0.0], snap.floor_iops)
        np.testing.assert_array_equal([50.0, INF], snap.ceil_iops)
        np.testing.assert_array_equal([2.0, 1.0], snap.weight)
        np.testing.assert_array_equal([40.0, INF], snap.cap_iops)
        np.testing.assert_array_equal([7.0, NAN], snap.cap_set_at)
        self.assertEqual([False, True], snap.stale.tolist())
