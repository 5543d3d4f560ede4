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

"""``openstack iotguard`` on a workstation without the server's libraries.

A fresh virtualenv gets python-openstackclient (osc-lib, openstacksdk,
keystoneauth1 come with it) and iotguard with ``pip install --no-deps``,
as doc/source/cli says to install the client alone. None of the server's
libraries (oslo.db, oslo.messaging, SQLAlchemy, libvirt...) is there; the
plugin loads and its commands work against the real API.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import fixtures

from iotguard.tests import base
from iotguard.tests.functional import test_osc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
#: What the server needs and the client must not.
SERVER_ONLY = ('oslo_db', 'oslo_messaging', 'sqlalchemy', 'alembic',
               'oslo_policy', 'keystonemiddleware', 'webob', 'libvirt',
               'tooz')


class ClientOnlyTest(base.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not os.path.exists(os.path.join(ROOT, 'setup.cfg')):
            raise unittest.SkipTest('not run from a source tree')
        cls.tmp = tempfile.TemporaryDirectory(prefix='iotguard-client-')
        venv = os.path.join(cls.tmp.name, 'venv')
        cls.bin = os.path.join(venv, 'bin')
        subprocess.run([sys.executable, '-m', 'venv', venv], check=True,
                       timeout=120)
        pip = [os.path.join(cls.bin, 'python'), '-m', 'pip', 'install',
               '-q', '--disable-pip-version-check']
        subprocess.run(pip + ['python-openstackclient'], check=True,
                       capture_output=True, timeout=600)
        subprocess.run(pip + ['--no-deps', ROOT], check=True,
                       capture_output=True, timeout=600)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()
        super().tearDownClass()

    def python(self, code):
        return subprocess.run([os.path.join(self.bin, 'python'), '-c', code],
                              capture_output=True, text=True, timeout=60)

    def test_no_server_library_is_installed(self):
        # The venv's Python works and has the client's libraries, so a
        # failed import below means the module is missing, nothing else.
        client = self.python('import osc_lib, openstack, keystoneauth1')
        self.assertEqual(0, client.returncode, client.stderr)
        for module in SERVER_ONLY:
            found = self.python('import %s' % module)
            self.assertNotEqual(0, found.returncode,
                                '%s is installed in the client venv'
                                % module)
            self.assertIn('ModuleNotFoundError', found.stderr)

    def test_plugin_modules_import(self):
        imported = self.python(
            'import importlib.metadata as m\n'
            'names = []\n'
            'for ep in m.entry_points(group="openstack.iotguard.v1"):\n'
            '    ep.load(); names.append(ep.name)\n'
            'import iotguard.osc.plugin\n'
            'print(len(names))')
        self.assertEqual(0, imported.returncode, imported.stderr)
        self.assertGreaterEqual(int(imported.stdout), 15)

    def test_commands_against_the_api(self):
        self.useFixture(fixtures.Timeout(120, gentle=True))
        api = self.useFixture(test_osc.ApiServer(self.conf))
        env = {k: v for k, v in os.environ.items()
               if not k.startswith('OS_')}
        env.update(HOME=self.useFixture(fixtures.TempHomeDir()).path,
                   OS_IOTGUARD_URL=api.url)
        user, project, roles = test_osc.ADMIN
        command = [os.path.join(self.bin, 'openstack'), '--os-auth-type',
                   'none', '--os-iotguard-noauth-user', user,
                   '--os-iotguard-noauth-project', project,
                   '--os-iotguard-noauth-roles', roles, 'iotguard']

        def run(*args):
            proc = subprocess.run(command + list(args), env=env,
                                  capture_output=True, text=True, timeout=60)
            self.assertEqual(0, proc.returncode, proc.stderr)
            return proc.stdout

        run('tier', 'create', 'gold', '--min-iops', '2000')
        tiers = json.loads(run('tier', 'list', '-f', 'json'))
        self.assertEqual(['gold'], [t['Name'] for t in tiers])
        self.assertEqual(2000.0, json.loads(run(
            'tier', 'show', 'gold', '-f', 'json'))['Min IOPS'])
        self.assertEqual([], json.loads(run('instance', 'list', '-f',
                                            'json')))
