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

"""The real ``openstack iotguard`` CLI against the real API.

iotguard-api (``app.deploy``, noauth, a migrated SQLite database) is
served by wsgiref on a free loopback port in a thread; the commands run
python-openstackclient's ``openstack`` executable in a subprocess with
``--os-auth-type none`` and ``--os-iotguard-url``, the way an operator of
a noauth all-in-one would, and their ``-f json`` output is checked.
"""

import datetime
import json
import os
import shutil
import subprocess
import sys
import threading
import uuid
from wsgiref import simple_server

import fixtures

from iotguard.api import app
from iotguard.api.handlers import disk as disk_view
from iotguard.tests import base
from iotguard.tests import dbrows
from iotguard.tests.fixtures import database

ADMIN = ('admin-user', 'admin-proj', 'admin,member,reader')
MEMBER = ('user-a', 'proj-a', 'member,reader')
OTHER = ('user-b', 'proj-b', 'member,reader')


class _Handler(simple_server.WSGIRequestHandler):
    """Quiet; keeps ``"<status> <method> <path>"`` of every request."""

    def log_request(self, code='-', size='-'):
        method, path = (self.requestline.split(' ') + ['', ''])[:2]
        self.server.seen.append('%s %s %s' % (code, method, path))


class ApiServer(fixtures.Fixture):
    """iotguard-api on a migrated SQLite database, on a free loopback port.

    ``noauth`` (the default) switches ``conf`` to noauth; otherwise
    ``conf`` brings its own [api] and [keystone_authtoken]. ``.url`` is
    its root, ``.db`` its db.api Connection, ``.seen`` the requests.
    """

    def __init__(self, conf, noauth=True):
        super().__init__()
        self.conf, self.noauth = conf, noauth

    def _setUp(self):
        if self.noauth:
            for name, value in (('auth_strategy', 'noauth'),
                                ('nova_metadata_sync', False)):
                self.conf.set_override(name, value, group='api')
                self.addCleanup(self.conf.clear_override, name, group='api')
        self.db = self.useFixture(database.Database('sqlite',
                                                    self.conf)).db
        server = simple_server.make_server(
            '127.0.0.1', 0, app.deploy(self.conf, db=self.db),
            handler_class=_Handler)
        server.seen = self.seen = []
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(thread.join, 10)
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.url = 'http://127.0.0.1:%d' % server.server_port


class TestOpenstackCLI(base.TestCase):

    def setUp(self):
        super().setUp()
        self.openstack = shutil.which(
            'openstack', path=os.path.dirname(sys.executable))
        if self.openstack is None:
            self.skipTest('python-openstackclient is not installed '
                          '(test-requirements.txt)')
        self.useFixture(fixtures.Timeout(240, gentle=True))
        api = self.useFixture(ApiServer(self.conf))
        self.db, self.url = api.db, api.url

    def cli(self, *args, who=ADMIN, ok=True):
        """Run ``openstack iotguard <args>``; (rc, stdout, stderr)."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith('OS_')}
        env.update(HOME=self.useFixture(fixtures.TempHomeDir()).path,
                   OS_IOTGUARD_URL=self.url)
        user, project, roles = who
        command = [self.openstack, '--os-auth-type', 'none',
                   '--os-iotguard-noauth-user', user,
                   '--os-iotguard-noauth-project', project,
                   '--os-iotguard-noauth-roles', roles,
                   'iotguard'] + list(args)
        proc = subprocess.run(command, env=env, capture_output=True,
                              text=True, timeout=60)
        if ok:
            self.assertEqual(0, proc.returncode, proc.stderr)
        else:
            self.assertNotEqual(0, proc.returncode, proc.stdout)
        return proc.stdout, proc.stderr

    def json(self, *args, who=ADMIN):
        return json.loads(self.cli(*(args + ('-f', 'json')), who=who)[0])

    def test_tier_per_gib(self):
        created = self.json('tier', 'create', 'gp', '--min-iops', '100',
                            '--min-iops-per-gb', '3', '--max-iops', '16000',
                            '--max-bytes-sec-per-gb', '1048576')
        self.assertEqual((100.0, 3.0, 16000.0, 1048576.0), (
            created['Min IOPS'], created['Min IOPS/GiB'],
            created['Max IOPS'], created['Max Bytes/s/GiB']))
        _, err = self.cli('tier', 'set', 'gp', '--min-iops-per-gb', '-1',
                          ok=False)
        self.assertIn('min_iops_per_gb', err)
        self.cli('tier', 'unset', 'gp', '--ceiling')
        shown = self.json('tier', 'show', 'gp')
        self.assertEqual((3.0, 0.0, 0.0), (
            shown['Min IOPS/GiB'], shown['Max IOPS'],
            shown['Max Bytes/s/GiB']))

    def test_tier_latency_objective(self):
        created = self.json('tier', 'create', 'db', '--min-iops', '100',
                            '--latency-p99-ms', '5')
        self.assertEqual(5.0, created['Latency p99 ms'])
        _, err = self.cli('tier', 'set', 'db', '--latency-p99-ms', '-1',
                          ok=False)
        self.assertIn('latency_p99_ms', err)
        self.cli('tier', 'unset', 'db', '--latency-p99-ms')
        self.assertEqual(0.0, self.json('tier', 'show', 'db')[
            'Latency p99 ms'])

    def test_tiers_instances_and_decisions(self):
        # Tier CRUD as the admin.
        created = self.json('tier', 'create', 'gold', '--min-iops', '2000',
                            '--max-iops', '5000', '--weight', '4',
                            '--description', 'databases')
        self.assertEqual('gold', created['Name'])
        self.assertEqual(2000.0, created['Min IOPS'])
        self.assertEqual(4.0, created['Weight'])
        self.json('tier', 'create', 'huge', '--min-iops', '9000')
        self.json('tier', 'create', 'doomed', '--private',
                  '--project', 'proj-b')
        names = [t['Name'] for t in self.json('tier', 'list')]
        self.assertEqual(['doomed', 'gold', 'huge'], sorted(names))
        _, err = self.cli('--os-iotguard-api-version', '2', 'tier', 'list',
                          ok=False)
        self.assertIn('iotguard API version 2 is not supported', err)
        # A project does not see another project's private tier.
        names = [t['Name'] for t in self.json('tier', 'list', who=MEMBER)]
        self.assertEqual(['gold', 'huge'], sorted(names))
        self.cli('tier', 'set', 'gold', '--min-iops', '2500')
        shown = self.json('tier', 'show', 'gold')
        self.assertEqual(2500.0, shown['Min IOPS'])
        self.assertEqual('databases', shown['Description'])
        self.cli('tier', 'delete', 'doomed')
        _, err = self.cli('tier', 'show', 'doomed', ok=False)
        self.assertIn('404', err)
        out, _ = self.cli('tier', 'unset', 'gold', '--ceiling', '--weight',
                          '--description')
        self.assertEqual('', out)
        shown = self.json('tier', 'show', 'gold')
        self.assertEqual((2500.0, 0.0, 1.0, ''),
                         (shown['Min IOPS'], shown['Max IOPS'],
                          shown['Weight'], shown['Description']))
        self.json('tier', 'create', 'shared', '--private', '--project',
                  'proj-a', '--project', 'proj-b')
        self.cli('tier', 'unset', 'shared', '--project', 'proj-b')
        self.assertEqual(['proj-a'],
                         self.json('tier', 'show', 'shared')['Projects'])
        _, err = self.cli('tier', 'unset', 'shared', '--project', 'proj-c',
                          ok=False)
        self.assertIn('not granted to project(s) proj-c', err)

        # An instance of proj-a with one disk in a calibrated domain.
        self.db.domain_create('local:compute1', 'local', iops_4k=10000.0,
                              bytes_sec=400e6)
        instance, other = sorted(str(uuid.uuid4()) for _ in range(2))
        self.db.disk_upsert(instance, 'vda', 'compute1', 'local:compute1',
                            'proj-a')
        out, _ = self.cli('instance', 'set', '--tier', 'gold', instance,
                          who=MEMBER)
        self.assertEqual('', out)     # silent, as osc's set commands
        # 9000 of 10000 4k IOPS is above max_commit_ratio 0.9: refused,
        # with the API's message (the numbers are the admin's), and
        # nothing changes.
        _, err = self.cli('instance', 'set', '--tier', 'huge', instance,
                          who=MEMBER, ok=False)
        self.assertIn('409', err)
        # (the member knows the domain by its opaque id only)
        mine = disk_view.domain_id('proj-a', 'local:compute1')
        self.assertIn('does not fit in domain %s' % mine, err)
        self.assertNotIn('committed_after', err)
        _, err = self.cli('instance', 'set', '--tier', 'huge', instance,
                          ok=False)
        self.assertIn('refused on domain local:compute1', err)
        self.assertIn('committed_after', err)
        shown = self.json('instance', 'show', instance, who=MEMBER)
        self.assertEqual((instance, 'proj-a'),
                         (shown['UUID'], shown['Project']))
        self.assertEqual([('vda', 'gold', 'api')],
                         [(d['dev'], d['tier'], d['tier_source'])
                          for d in shown['Disks']])
        table, _ = self.cli('instance', 'show', instance, who=MEMBER)
        self.assertIn('vda: gold (api), floor min_bytes_sec=0, '
                      'min_iops=2500; domain %s' % mine, table)
        # Without Keystone and Nova, a server is given by its UUID.
        _, err = self.cli('instance', 'show', 'web-1', who=MEMBER,
                          ok=False)
        self.assertIn('give its UUID', err)
        # The list: the caller's project; every project for the admin.
        self.db.disk_upsert(other, 'vda', 'compute1', 'local:compute1',
                            'proj-b')
        self.assertEqual([{'Instance': instance, 'Disk': 'vda',
                           'Tier': 'gold', 'Source': 'api',
                           'Floor': {'min_iops': 2500.0,
                                     'min_bytes_sec': 0.0},
                           'Cap': None}],
                         self.json('instance', 'list', who=MEMBER))
        self.assertEqual([], self.json('instance', 'list'))
        listed = self.json('instance', 'list', '--all-projects')
        self.assertEqual([(instance, 'proj-a'), (other, 'proj-b')],
                         sorted((r['Instance'], r['Project'])
                                for r in listed))
        self.assertEqual([other], [r['Instance'] for r in self.json(
            'instance', 'list', '--project', 'proj-b')])
        _, err = self.cli('instance', 'list', '--all-projects', who=MEMBER,
                          ok=False)
        self.assertIn('403', err)
        # A tier in use cannot be deleted.
        _, err = self.cli('tier', 'delete', 'gold', ok=False)
        self.assertIn('in use', err)

        # A disk's record: the minutes of the window, and its summary.
        minute = datetime.datetime(2026, 11, 28, 6, 0)
        dbrows.minute_add(self.db, instance, 'vda', minute,
                          floor_kept_s=45.0, capped_s=30.0, iops=400.0,
                          cap_reason='capped at 300 IOPS: its own numbers',
                          floor_iops=100.0, cap_iops=300.0)
        window = ('--since', '2026-11-28T05:30:00Z', '--until',
                  '2026-11-28T06:30:00Z')
        out, _ = self.cli('disk', 'record', instance, 'vda', *window,
                          who=MEMBER)
        self.assertIn('Floor kept 75.0 % of 60 s due; capped 30 s', out)
        self.assertIn('capped at 300 IOPS: its own numbers', out)
        out, _ = self.cli('disk', 'record', instance, 'vda', *window, '-f',
                          'csv', *(x for column in ('Floor IOPS',
                                                    'Floor Bytes/s',
                                                    'Cap IOPS', 'Cap Bytes/s')
                                   for x in ('-c', column)), who=MEMBER)
        self.assertEqual(['"Floor IOPS","Floor Bytes/s","Cap IOPS",'
                          '"Cap Bytes/s"', '100.0,"",300.0,""'],
                         out.splitlines()[-2:])
        _, err = self.cli('disk', 'record', instance, 'vda', *window,
                          who=OTHER, ok=False)
        self.assertIn('404', err)

        # Domains: the admin's figures and settings, a project's view.
        self.cli('domain', 'set', 'local:compute1', '--iops-4k', '20000',
                 '--policy', 'static')
        domain = self.json('domain', 'show', 'local:compute1')
        self.assertEqual({'iops_4k': 20000.0, 'bytes_sec': 400e6,
                          'form': 'additive', 'source': 'manual'},
                         {k: v for k, v in domain['Profile'].items()
                          if k not in ('manual', 'learned')})
        self.assertIsNone(domain['Profile']['learned'])
        self.assertEqual('static', domain['Policy'])
        self.assertEqual([instance, other], sorted(
            d['instance_uuid'] for d in domain['Disks']))
        self.assertGreater(domain['Committed'], 0)
        self.assertEqual([{'Domain ID': mine, 'Kind': 'local'}],
                         self.json('domain', 'list', who=MEMBER))
        self.assertEqual([instance], [
            d['instance_uuid'] for d in self.json(
                'domain', 'show', mine, who=MEMBER)['Disks']])
        _, err = self.cli('domain', 'set', 'local:compute1', '--param',
                          'bogus=1', ok=False)
        self.assertIn('400', err)
        self.assertIn('bogus', err)

        # Decisions: every page without --limit, one page with it.
        ids = [dbrows.decision_create(
            self.db, 'local:compute1', 'guarantee', instance, 'vda',
            'proj-a', 'cap', {}, {'total_iops_sec': 3000 + i}, 'test %d' % i,
            {'share': i})
            for i in range(3)]
        everything = self.json('decision', 'list', '--instance', instance)
        self.assertEqual(sorted(ids, reverse=True),
                         [d['ID'] for d in everything])
        page = self.json('decision', 'list', '--limit', '2', '--long',
                         who=MEMBER)
        self.assertEqual(sorted(ids, reverse=True)[:2],
                         [d['ID'] for d in page])
        self.assertEqual({'share': 2}, page[0]['Numbers'])
        after = self.json('decision', 'list', '--marker', str(page[-1]['ID']))
        self.assertEqual([min(ids)], [d['ID'] for d in after])
        stranger = ('u', 'proj-c', 'member,reader')
        self.assertEqual([], self.json('decision', 'list', who=stranger))
        one = self.json('decision', 'show', str(ids[1]), who=MEMBER)
        self.assertEqual((ids[1], 'test 1', {'total_iops_sec': 3001},
                          {'share': 1}, 'guarantee'),
                         (one['ID'], one['Reason'], one['New Limits'],
                          one['Numbers'], one['Policy']))
        _, err = self.cli('decision', 'show', str(ids[1]), who=stranger,
                          ok=False)
        self.assertIn('404', err)

        # Unset: the disk falls back to the default tier (none here).
        out, _ = self.cli('instance', 'unset', '--tier', instance,
                          who=MEMBER)
        self.assertEqual('', out)
        disk = self.json('instance', 'show', instance)['Disks'][0]
        self.assertEqual((None, None), (disk['tier'], disk['tier_source']))
        self.cli('tier', 'delete', 'gold')
        _, err = self.cli('instance', 'unset', '--tier', str(uuid.uuid4()),
                          who=MEMBER, ok=False)
        self.assertIn('404', err)
