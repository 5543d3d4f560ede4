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

"""The emulated disk's arithmetic: service times, its timeline, its truth."""

from iotguard.manage import measure
from iotguard.policy import base
from iotguard.policy import costmodel
from iotguard.tests import base as test_base
from iotguard.tests.fixtures import diskmodel

DISK = diskmodel.Disk(seek_s=0.005, transfer_bytes_per_s=8 << 20)
MIB = 1 << 20


class TestDisk(test_base.TestCase):

    def test_rates(self):
        self.assertAlmostEqual(0.005 + 4096 / (8 << 20), DISK.service_s(4096))
        self.assertAlmostEqual(182.2, DISK.iops(4096), places=1)
        self.assertAlmostEqual(MIB / 0.13, DISK.bytes_sec(MIB))

    def test_bad_disks(self):
        for seek, transfer in ((-1, 1), (0, 0), (float('nan'), 1),
                               (0, float('inf'))):
            self.assertRaises(ValueError, diskmodel.Disk, seek, transfer)

    def test_additive_profile_prices_every_size_exactly(self):
        profile = DISK.additive()
        for size in (512, 4096, 65536, MIB, 16 * MIB):
            load = costmodel.domain_load(DISK.iops(size),
                                         DISK.bytes_sec(size), profile)
            self.assertAlmostEqual(1.0, load)

    def test_measured_profile_is_conservative_and_additive(self):
        """The phases' rates overcharge: the mixed point reads above 1."""
        measured = DISK.measured(MIB)
        self.assertAlmostEqual(DISK.iops(4096), measured.iops_4k)
        self.assertAlmostEqual(DISK.bytes_sec(MIB), measured.bytes_sec)
        iops, byts = DISK.mixed_point(measure.MIX_SHARE * measured.iops_4k,
                                      MIB)
        # half the time to 4 KiB writes, the other half to 1 MiB ones
        self.assertAlmostEqual(0.5 * DISK.iops(MIB), iops - 91.1, places=1)
        residual = measure.residuals(iops, byts, measured)
        self.assertAlmostEqual(0.067, residual[base.ADDITIVE], places=3)
        self.assertAlmostEqual(-0.454, residual[base.MAX], places=3)
        self.assertEqual(base.ADDITIVE, measure.choose_form(residual))
        # exactly on the additive form with its exact parameters
        self.assertAlmostEqual(0.0, costmodel.domain_load(
            iops, byts, DISK.additive()) - 1.0)

    def test_mixed_point_beyond_the_disk(self):
        self.assertRaises(ValueError, DISK.mixed_point, 200, MIB)


class TestTimeline(test_base.TestCase):

    def test_fifo_back_to_back(self):
        line = diskmodel.Timeline(DISK)
        service = DISK.service_s(4096)
        self.assertEqual((1.0, 1.0 + service), line.admit(1.0, 4096))
        # queued behind the first: starts when it finishes
        self.assertAlmostEqual(1.0 + 2 * service, line.admit(1.0, 4096)[1])
        self.assertEqual(2, line.served)
        self.assertAlmostEqual(2 * service, line.busy_s)

    def test_queued_requests_do_not_drift(self):
        """Finishes follow from arrivals, whenever the worker wakes."""
        line = diskmodel.Timeline(DISK)
        service = DISK.service_s(4096)
        # the worker may take each one up late: admit never asks when
        finishes = [line.admit(0.0, 4096)[1] for _ in range(1000)]
        self.assertAlmostEqual(1000 * service, finishes[-1])
        self.assertAlmostEqual(1000 * service, line.busy_s)

    def test_idle_time_is_not_banked(self):
        line = diskmodel.Timeline(DISK)
        line.admit(0.0, 4096)
        start, finish = line.admit(10.0, 4096)
        self.assertEqual(10.0, start)
        self.assertAlmostEqual(10.0 + DISK.service_s(4096), finish)
        # the gap is counted idle (before the first request, nothing is)
        self.assertAlmostEqual(10.0 - DISK.service_s(4096), line.idle_s)
