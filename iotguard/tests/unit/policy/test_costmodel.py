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

import numpy as np

from iotguard.policy import base
from iotguard.policy import costmodel
from iotguard.tests import base as test_base
from iotguard.tests.unit.policy import fakes

KIB = fakes.KIB
PROFILE = fakes.PROFILE     # 1000 IOPS at 4 KiB, 6553600 bytes/s


def to_limits(share, io_size, profile):
    """A share in device-seconds per second -> (IOPS, bytes/s)."""
    ops = share / costmodel.op_cost(io_size, profile)
    return ops, ops * io_size


def arr(*values):
    return np.array(values, dtype=float)


class TestCostModel(test_base.TestCase):

    def test_mean_io_size_and_default_when_idle(self):
        size = costmodel.mean_io_size(arr(10, 0), arr(10 * 65536, 0))
        self.assertEqual([65536.0, costmodel.DEFAULT_IO_SIZE], list(size))

    def test_op_cost_charges_seek_and_transfer(self):
        cost = costmodel.op_cost(arr(4 * KIB, 64 * KIB), PROFILE)
        self.assertAlmostEqual(0.001625, cost[0])
        self.assertAlmostEqual(0.011, cost[1])

    def test_load_of_4k_and_64k_streams(self):
        # 300 x 4 KiB: 0.3 + 0.1875; 50 x 64 KiB: 0.05 + 0.5
        u = costmodel.load(arr(300, 50), arr(300 * 4 * KIB, 50 * 64 * KIB),
                           PROFILE)
        self.assertAlmostEqual(0.4875, u[0])
        self.assertAlmostEqual(0.55, u[1])

    def test_floor_ops_is_the_smaller_promise(self):
        ops = costmodel.floor_ops(arr(100, 0, 100, 0),
                                  arr(0, 640 * KIB, 640 * KIB, 0),
                                  arr(64 * KIB, 64 * KIB, 4 * KIB, 4 * KIB))
        self.assertEqual([100.0, 10.0, 100.0, 0.0], list(ops))
        load = costmodel.floor_load(arr(100), arr(0), arr(64 * KIB),
                                    PROFILE)
        self.assertAlmostEqual(1.1, load[0])

    def test_committed_floor_load_for_admission(self):
        self.assertAlmostEqual(
            0.1 + 409600 / 6553600,
            costmodel.committed_floor_load(100, 409600, PROFILE))
        self.assertAlmostEqual(
            0.1 + 100 * 4096 / 6553600,
            costmodel.committed_floor_load(100, 0, PROFILE))
        self.assertEqual(0.0, costmodel.committed_floor_load(0, 0, PROFILE))

    def test_to_limits_round_trip(self):
        size = arr(4 * KIB, 64 * KIB)
        iops, bps = to_limits(arr(0.4875, 0.55), size, PROFILE)
        self.assertAlmostEqual(300.0, iops[0])
        self.assertAlmostEqual(50.0, iops[1])
        self.assertAlmostEqual(50 * 64 * KIB, bps[1])
        back = costmodel.load(iops, bps, PROFILE)
        self.assertTrue(np.allclose(arr(0.4875, 0.55), back))

    def test_profile_must_be_positive(self):
        self.assertRaises(ValueError, base.Profile, iops_4k=0, bytes_sec=1)

    def test_unknown_form_is_refused(self):
        self.assertRaises(ValueError, base.Profile, iops_4k=1, bytes_sec=1,
                          form='min')


#: The physical bed of issue 12: a token bucket of 100 IOPS and 4 MiB/s.
BED = base.Profile(iops_4k=100.0, bytes_sec=4 * 1024 * KIB, form=base.MAX)
BED_ADDITIVE = base.Profile(iops_4k=100.0, bytes_sec=4 * 1024 * KIB)


class TestMaxForm(test_base.TestCase):

    def test_op_cost_is_the_dominant_resource(self):
        # 4 KiB: one IOPS token (10 ms) beats 1 ms of bandwidth; 64 KiB:
        # 15.6 ms of bandwidth beats the token; the knee is 40.96 KiB
        cost = costmodel.op_cost(arr(4 * KIB, 64 * KIB, 40.96 * KIB), BED)
        self.assertTrue(np.allclose(arr(0.01, 1 / 64, 0.01), cost))

    def test_saturated_bed_reads_one_not_1_64(self):
        # 64 KiB writes at 4 MiB/s are 64 ops/s: the bucket is full
        iops, bps = arr(64.0), arr(4 * 1024 * KIB)
        self.assertAlmostEqual(1.0, costmodel.load(iops, bps, BED)[0])
        self.assertAlmostEqual(1.64,
                               costmodel.load(iops, bps, BED_ADDITIVE)[0])
        self.assertAlmostEqual(1.0, costmodel.domain_load(64.0, 4 * 1024
                                                          * KIB, BED))

    def test_domain_load_is_the_max_of_the_sums(self):
        # 50 x 4 KiB (half the tokens) and 32 x 64 KiB (half the bytes,
        # 0.32 of the tokens): the bucket is at 0.82 of its IOPS and 0.55
        # of its bandwidth
        iops = arr(50.0, 32.0)
        bps = arr(50 * 4 * KIB, 32 * 64 * KIB)
        self.assertAlmostEqual(0.82, costmodel.domain_load(
            iops.sum(), bps.sum(), BED))
        # each disk charged at its dominant resource: 0.5 + 0.5 >= 0.82
        self.assertTrue(np.allclose(arr(0.5, 0.5),
                                    costmodel.load(iops, bps, BED)))
        # additive: the domain load is the sum of the disks' loads
        self.assertAlmostEqual(
            float(costmodel.load(iops, bps, BED_ADDITIVE).sum()),
            costmodel.domain_load(iops.sum(), bps.sum(), BED_ADDITIVE))

    def test_admission_prices_three_600k_floors(self):
        # the bed's tier: 10 IOPS and 600 KiB/s (its 64 KiB writes)
        floor = [costmodel.committed_floor_load(10, 600 * KIB, p)
                 for p in (BED, BED_ADDITIVE)]
        self.assertAlmostEqual(0.4395, 3 * floor[0], places=4)
        self.assertAlmostEqual(0.7395, 3 * floor[1], places=4)

    def test_committed_floor_is_the_peak_over_sizes(self):
        sizes = np.geomspace(512, 16 * 1024 * KIB, 2000)
        for min_iops, min_bytes in ((10, 600 * KIB), (90, 100 * KIB)):
            peak = costmodel.floor_load(arr(*[min_iops] * len(sizes)),
                                        arr(*[min_bytes] * len(sizes)),
                                        sizes, BED).max()
            self.assertAlmostEqual(
                peak, costmodel.committed_floor_load(min_iops, min_bytes,
                                                     BED), places=3)

    def test_committed_floor_with_one_part_at_4k(self):
        # an IOPS floor: one token per operation up to the knee
        self.assertAlmostEqual(
            0.2, costmodel.committed_floor_load(20, 0, BED))
        # a bandwidth floor is promised down to 4 KiB operations: 150
        # ops/s of tokens for 600 KiB/s (set both parts for large I/O)
        self.assertAlmostEqual(
            1.5, costmodel.committed_floor_load(0, 600 * KIB, BED))

    def test_floor_load_at_the_disk_size(self):
        load = costmodel.floor_load(arr(10, 10), arr(600 * KIB, 600 * KIB),
                                    arr(64 * KIB, 4 * KIB), BED)
        # 64 KiB: 9.375 ops of 1/64 s; 4 KiB: 10 tokens
        self.assertTrue(np.allclose(arr(600 / 4096, 0.1), load))

    def test_to_limits_round_trip(self):
        size = arr(4 * KIB, 64 * KIB, 40.96 * KIB)
        share = arr(0.25, 0.5, 1.0)
        iops, bps = to_limits(share, size, BED)
        self.assertTrue(np.allclose(arr(25, 32, 100), iops))
        self.assertAlmostEqual(2 * 1024 * KIB, bps[1])
        self.assertTrue(np.allclose(share, costmodel.load(iops, bps, BED)))
        cost = costmodel.op_cost(size, BED)
        self.assertTrue(np.allclose(share, costmodel.limit_load(
            iops, bps, size, cost)))
