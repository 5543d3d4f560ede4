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

"""iotguard-manage and iotguard-status on a real database."""

import contextlib
import io
import json

import fixtures

from iotguard.cmd import manage
from iotguard.cmd import status
from iotguard.db import migration
from iotguard.tests.fixtures import database
from iotguard.tests.functional.db import backends
from iotguard.tests.unit.manage import test_tiersync


class CommandTests:

    migrate = False

    @property
    def conf_file(self):
        if not hasattr(self, '_conf_file'):
            path = self.useFixture(fixtures.TempDir()).path
            self._conf_file = path + '/iotguard.conf'
            with open(self._conf_file, 'w') as conf_file:
                conf_file.write('[database]\nconnection = %s\n'
                                '[tiers]\nflavor_tiers = m1.gold:gold\n'
                                '[DEFAULT]\ntransport_url = fake:/\n'
                                % self.database.url)
        return self._conf_file

    def run_cmd(self, main, *argv, **kw):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv), **kw)
        return code, out.getvalue(), err.getvalue()

    def manage(self, *argv, **kw):
        return self.run_cmd(manage.main, '--config-file', self.conf_file,
                            *argv, **kw)

    def test_db_sync_version_and_status(self):
        code, out, _ = self.manage('db', 'version')
        self.assertEqual((0, 'None (run db sync)'),
                         (code, out.splitlines()[-1]))
        # before the sync, as deployment tools run it: warnings only
        code, checks = self.status()
        self.assertEqual(1, code)
        self.assertEqual(status.Code.WARNING, checks['Database schema'][0])
        self.assertIn('db sync', checks['Database schema'][1])
        self.assertEqual(0, self.manage('db', 'sync')[0])
        self.assertEqual(migration.head(), migration.version(self.engine))
        code, out, _ = self.manage('db', 'version')
        self.assertEqual(migration.head(), out.splitlines()[-1])
        self.assertEqual((status.Code.SUCCESS, None),
                         self.status()[1]['Database schema'])

    def status(self, more=''):
        """Exit status and ``{check: (result, details)}``.

        ``more``: config text read after the config file.
        """
        path = self.useFixture(fixtures.TempDir()).path + '/more.conf'
        with open(path, 'w') as conf_file:
            conf_file.write(more)
        overrides = ['--config-file', path]
        code, out, _ = self.run_cmd(status.main, '--config-file',
                                    self.conf_file, *overrides, 'upgrade',
                                    'check', '--json')
        return code, {c['check']: (c['result'], c['details'])
                      for c in json.loads(out)['checks']}

    def test_status_default_tier(self):
        tier = '[tiers]\ndefault_tier = silver\n'
        self.assertEqual(status.Code.WARNING,
                         self.status(tier)[1]['Default tier'][0])
        self.manage('db', 'sync')
        code, checks = self.status(tier)
        self.assertEqual(2, code)
        self.assertEqual(status.Code.FAILURE, checks['Default tier'][0])
        self.assertIn('silver, which is not a tier', checks['Default tier'][1])
        self.db.tier_create(database.tier_values('silver'))
        self.assertEqual((status.Code.SUCCESS, None),
                         self.status(tier)[1]['Default tier'])

    def test_status_agents(self):
        self.manage('db', 'sync')
        self.assertEqual(status.Code.WARNING, self.status()[1]['Agents'][0])
        ours = status.version.version_info.semantic_version()
        self.db.agent_heartbeat('cn1', 'LibvirtDriver', interval_s=5.0,
                                version=ours.release_string())
        self.assertEqual((status.Code.SUCCESS, None),
                         self.status()[1]['Agents'])
        self.db.agent_heartbeat('cn2', 'LibvirtDriver', interval_s=5.0,
                                version='0.0.0')
        self.useFixture(fixtures.MockPatch('iotguard.cmd.status.OLDEST_AGENT',
                                           ours.release_string()))
        code, checks = self.status()
        self.assertEqual((2, status.Code.FAILURE),
                         (code, checks['Agents'][0]))
        self.assertIn('Agent(s) on cn2 are older', checks['Agents'][1])

    def test_domain_calibrate(self):
        self.manage('db', 'sync')
        code, _, err = self.manage('domain', 'calibrate', 'ceph:p1',
                                   '--iops-4k', '20000', '--bytes-sec',
                                   '1e9')
        self.assertEqual(1, code)
        self.assertIn('ceph:p1', err)
        code, out, _ = self.manage('domain', 'calibrate', 'ceph:p1',
                                   '--iops-4k', '20000', '--bytes-sec',
                                   '1e9', '--create', '--kind', 'ceph')
        self.assertEqual(0, code)
        self.manage('domain', 'calibrate', 'ceph:p1', '--iops-4k', '25000',
                    '--bytes-sec', '1e9')
        domain = self.db.domain_get('ceph:p1')
        self.assertEqual(('ceph', 25000.0, 1e9, 'additive'), (
            domain.kind, domain.iops_4k, domain.bytes_sec,
            domain.form))
        code, out, _ = self.manage('domain', 'calibrate', 'ceph:p1',
                                   '--iops-4k', '100', '--bytes-sec',
                                   '4194304', '--form', 'max')
        self.assertEqual(0, code)
        self.assertIn('form=max', out)
        self.assertEqual('max', self.db.domain_get('ceph:p1').form)

    def test_domain_merge(self):
        self.manage('db', 'sync')
        self.manage('domain', 'calibrate', 'c1@ceph#ceph', '--iops-4k',
                    '900', '--bytes-sec', '9e6', '--create', '--kind',
                    'cinder')
        self.db.domain_create('ceph:vms', 'ceph')
        self.db.disk_upsert('u1', 'vda', 'cn1', 'ceph:vms', 'p1')
        code, _, err = self.manage('domain', 'merge', 'ceph', 'ceph:vms',
                                   'nope')
        self.assertEqual((1, True), (code, 'nope' in err))
        code, out, _ = self.manage('domain', 'merge', 'ceph', 'ceph:vms',
                                   'c1@ceph#ceph')
        self.assertEqual(0, code)
        self.assertIn('1 disk(s) moved', out)
        self.assertEqual(['ceph'], [d.name for d in self.db.domain_list()])
        self.assertEqual(900.0, self.db.domain_get('ceph').iops_4k)

    def test_tier_sync_dry_run_then_real(self):
        self.manage('db', 'sync')
        self.db.tier_create({'name': 'gold', 'min_iops': 2000.0,
                             'max_iops': 5000.0})
        cloud = test_tiersync.FakeCloud()
        code, out, _ = self.manage('tier', 'sync', '--dry-run',
                                   connect=lambda name: cloud)
        self.assertEqual(0, code)
        self.assertIn('Would change: flavor m1.gold: set iotguard:tier=gold',
                      out)
        self.assertEqual(0, cloud.writes)
        code, out, _ = self.manage('tier', 'sync', connect=lambda n: cloud)
        self.assertIn('4 change(s) made.', out)
        self.assertEqual('gold', cloud.flavors['m1.gold'].extra_specs[
            'iotguard:tier'])
        code, out, _ = self.manage('tier', 'sync', connect=lambda n: cloud)
        self.assertEqual('0 change(s) made.', out.splitlines()[-1])


backends.on_every_backend(globals(), CommandTests)
del CommandTests
