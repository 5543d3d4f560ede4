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

"""The capacity estimator learns a disk that seeks and transfers.

The disk of :mod:`iotguard.tests.fixtures.fusedisk` (over FUSE, as a file)
is loaded by the measurement's own generator
(:func:`~iotguard.manage.measure.run_builtin`) with 4 KiB writes, large
writes of two sizes (64 KiB and 1 MiB) and both at once: every phase keeps
the disk busy, so each is one saturated interval of what it served (operations
and bytes a second). Fed to :func:`iotguard.policy.estimator.observe`,
they must give an ``additive`` fit with both parameters identified and
within ``TOLERANCE`` of the disk's exact additive profile,
``iops_4k = 1 / seek`` and ``bytes_sec = transfer``
(:meth:`~iotguard.tests.fixtures.diskmodel.Disk.additive`): not the
phases' rates, which the measurement reports. Whether an interval is
saturated is taken as known here; the agent's latency test of it is the
estimator's unit tests'.
"""

import os

import fixtures
import numpy as np
from testtools import content

from iotguard.manage import measure
from iotguard.policy import base as policy_base
from iotguard.policy import costmodel
from iotguard.policy import estimator
from iotguard.tests import base
from iotguard.tests.fixtures import fusedisk

TOLERANCE = 0.1
LARGE_SIZES = (64 << 10, 1 << 20)
SECONDS = 3


class EstimateDiskTest(base.TestCase):

    def setUp(self):
        super().setUp()
        why = fusedisk.unavailable()
        if why:
            self.skipTest(why)
        self.useFixture(fixtures.Timeout(150, gentle=True))
        self.dir = self.useFixture(fixtures.TempDir(rootdir='/var/tmp')).path
        self.disk = self.useFixture(fusedisk.FuseDisk(self.dir))

    def test_fit_is_additive_with_the_disks_parameters(self):
        target = measure.prepare(self.disk.path, destroy=True,
                                 depth=fusedisk.DEPTH)
        phases = []
        for large_size in LARGE_SIZES:
            result = measure.run_builtin(target, seconds=SECONDS,
                                         depth=fusedisk.DEPTH,
                                         large_size=large_size)
            phases += [result.small, result.large, result.mixed]
        state = estimator.State()
        for phase in phases:
            self.assertTrue(estimator.observe(state, phase.iops,
                                              phase.bytes_sec, True))
        fit = estimator.fit(state)
        shown = ('%s\nload average %.2f %.2f %.2f\nfit: %r\ntruth: %r\n'
                 'disk realtime: %s' % (
                     '\n'.join(measure.phase_line(p) for p in phases),
                     *os.getloadavg(), fit, self.disk.model.additive(),
                     self.disk.realtime))
        self.addDetail('fit', content.text_content(shown))
        base.bed_report(self, shown)
        self.assertEqual(policy_base.ADDITIVE, fit.form)
        self.assertEqual((estimator.IOPS_4K, estimator.BYTES_SEC),
                         fit.identified)
        truth = self.disk.model.additive()
        for field in ('iops_4k', 'bytes_sec'):
            self.assertLessEqual(
                abs(getattr(fit, field) / getattr(truth, field) - 1),
                TOLERANCE, '%s: %r against %r' % (field, fit, truth))
        # and the fit prices what the disk served at every mix
        loads = costmodel.load(np.array([p.iops for p in phases]),
                               np.array([p.bytes_sec for p in phases]),
                               fit.profile)
        self.assertLessEqual(float(np.max(np.abs(loads - 1))), TOLERANCE,
                             loads)
