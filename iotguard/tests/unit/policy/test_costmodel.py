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
        iops, bps = costmodel.to_limits(arr(0.4875, 0.55), size, PROFILE)
        self.assertAlmostEqual(300.0, iops[0])
        self.assertAlmostEqual(50.0, iops[1])
        self.assertAlmostEqual(50 * 64 * KIB, bps[1])
        back = costmodel.load(iops, bps, PROFILE)
        self.assertTrue(np.allclose(arr(0.4875, 0.55), back))

    def test_profile_must_be_positive(self):
        self.assertRaises(ValueError, base.Profile, iops_4k=0, bytes_sec=1)
