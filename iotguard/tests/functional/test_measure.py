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

"""``iotguard-manage domain calibrate --measure`` on a real token bucket.

The bucket is QEMU's throttle (:mod:`iotguard.tests.fixtures.fusebucket`:
``IOPS`` and ``BYTES_SEC``, exported over FUSE as a file). The command
runs as an operator runs it, in a subprocess, against a real database,
with the built-in generator (on SQLite) and with fio (on PostgreSQL).
The profile it stores must be the bucket's, within ``TOLERANCE``, in the
``max`` form.
"""

import os
import shutil
import subprocess
import sys

import fixtures
from testtools import content

from iotguard.tests import base
from iotguard.tests.fixtures import database
from iotguard.tests.fixtures import fusebucket

IOPS, BYTES_SEC = 100, 4 << 20
TOLERANCE = 0.1
#: Each of the three phases; a whole run takes about 3 x this and what
#: the bucket serves of the writes still in flight.
SECONDS = 4


class MeasureBucketTest(base.TestCase):

    def setUp(self):
        super().setUp()
        why = fusebucket.unavailable()
        if why:
            self.skipTest(why)
        self.useFixture(fixtures.Timeout(120, gentle=True))
        self.dir = self.useFixture(fixtures.TempDir(rootdir='/var/tmp')).path
        self.bucket = self.useFixture(fusebucket.FuseBucket(
            self.dir, iops=IOPS, bytes_sec=BYTES_SEC))
        # Read before the temporary directory goes.
        self.addCleanup(lambda: self.addDetail(
            'qemu-storage-daemon.log', content.content_from_file(
                self.bucket.log, buffer_now=True)))

    def calibrate(self, backend, engine):
        why = database.unavailable(backend)
        if why:
            self.skipTest(why)
        db = self.useFixture(database.Database(backend, self.conf)).db
        conf = os.path.join(self.dir, 'iotguard.conf')
        with open(conf, 'w') as f:
            f.write('[database]\nconnection = %s\n' % db.get_engine().url
                    .render_as_string(hide_password=False))
        argv = [sys.executable, '-c', 'import sys; from iotguard.cmd import '
                'manage; sys.exit(manage.main())',
                '--config-file', conf, 'domain', 'calibrate', 'local:bucket',
                '--create', '--measure', self.bucket.path, '--yes-destroy',
                '--seconds', str(SECONDS), '--engine', engine]
        proc = subprocess.run(argv, capture_output=True, text=True,
                              timeout=90)
        self.addDetail('calibrate-%s' % engine, content.text_content(
            proc.stdout + proc.stderr))
        self.assertEqual(0, proc.returncode, proc.stderr)
        domain = db.domain_get('local:bucket')
        self.assertEqual('max', domain['form'], proc.stdout)
        for field, truth in (('iops_4k', IOPS), ('bytes_sec', BYTES_SEC)):
            self.assertLessEqual(abs(domain[field] / truth - 1), TOLERANCE,
                                 '%s=%g against %g\n%s' % (
                                     field, domain[field], truth,
                                     proc.stdout))
        self.assertIn('residual additive', proc.stdout)
        self.assertIn('residual max', proc.stdout)
        self.assertTrue(os.path.exists(self.bucket.path))
        return proc.stdout

    def test_builtin_on_sqlite(self):
        self.calibrate('sqlite', 'builtin')

    def test_fio_on_postgresql(self):
        if not shutil.which('fio'):
            self.skipTest('fio is not installed')
        self.calibrate('postgresql', 'fio')
