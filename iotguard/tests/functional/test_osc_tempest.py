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

"""The tempest plugin's REST client against the real API.

Tempest's own RestClient (the IotguardClient the tempest tests use) talks
to iotguard-api served on loopback (noauth, SQLite, see test_osc), with a
minimal auth provider that sends the noauth identity headers instead of
a Keystone token. This checks every URL and expected status code of the
client without a cloud; the tempest tests themselves need a devstack.
"""

import ast
import configparser
import importlib
import os
import uuid

import testtools

from iotguard.api.handlers import disk as disk_view
from iotguard.tests import base
from iotguard.tests import dbrows
from iotguard.tests.functional import test_osc

try:
    from tempest.lib import exceptions as lib_exc

    from iotguard.tempest_plugin.services.v1 import iotguard_client
except ImportError:  # tempest is a test requirement, but may be missing
    iotguard_client = None

PLUGIN_DIR = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                          'tempest_plugin')


class NoauthProvider:
    """What RestClient needs of an auth provider, for a noauth API."""

    def __init__(self, url, project, roles):
        self.url = url
        self.headers = {'X-User-Id': 'user-' + project,
                        'X-Project-Id': project, 'X-Roles': roles}

    def base_url(self, filters):
        return self.url

    def auth_request(self, method, url, headers=None, body=None,
                     filters=None):
        return ('%s/%s' % (self.url, url), dict(headers or {},
                                                **self.headers), body)


class TestTempestPluginSource(base.TestCase):

    def test_imports_nothing_else_of_iotguard(self):
        for root, _, files in os.walk(PLUGIN_DIR):
            for name in files:
                if not name.endswith('.py'):
                    continue
                path = os.path.join(root, name)
                with open(path) as source:
                    tree = ast.parse(source.read(), path)
                for node in ast.walk(tree):
                    if isinstance(node, ast.ImportFrom):
                        modules = [node.module or '']
                    elif isinstance(node, ast.Import):
                        modules = [a.name for a in node.names]
                    else:
                        continue
                    for module in modules:
                        if module.split('.')[0] == 'iotguard':
                            self.assertTrue(
                                module.startswith('iotguard.tempest_plugin'),
                                '%s imports %s' % (path, module))

    def test_entry_point(self):
        # setup.cfg, not the installed metadata: a stale iotguard.egg-info
        # in the working directory would shadow the installed one.
        setup = configparser.ConfigParser()
        setup.read(os.path.join(PLUGIN_DIR, os.pardir, os.pardir,
                                'setup.cfg'))
        points = dict(line.split(' = ') for line in setup.get(
            'entry_points', 'tempest.test_plugins').split('\n') if line)
        self.assertEqual(
            {'iotguard':
             'iotguard.tempest_plugin.plugin:IotguardTempestPlugin'},
            points)
        if iotguard_client is None:
            self.skipTest('tempest is not installed')
        module, name = points['iotguard'].split(':')
        from tempest.test_discover import plugins
        self.assertTrue(issubclass(
            getattr(importlib.import_module(module), name),
            plugins.TempestPlugin))


@testtools.skipIf(iotguard_client is None, 'tempest is not installed')
class TestTempestClient(base.TestCase):

    def setUp(self):
        super().setUp()
        api = self.useFixture(test_osc.ApiServer(self.conf))
        self.db = api.db
        self.admin = self._client(api.url, 'admin-proj',
                                  'admin,member,reader')
        self.member = self._client(api.url, 'proj-a', 'member,reader')
        self.other = self._client(api.url, 'proj-b', 'member,reader')

    def _client(self, url, project, roles):
        return iotguard_client.IotguardClient(
            NoauthProvider(url, project, roles), 'resource-guarantee',
            'RegionOne')

    def test_tiers(self):
        created = self.admin.create_tier(name='gold', min_iops=2000,
                                         weight=4)['tier']
        self.assertEqual(2000.0, created['min_iops'])
        self.admin.create_tier(name='mine', is_public=False,
                               projects=['proj-a'])
        self.assertRaises(lib_exc.Conflict, self.admin.create_tier,
                          name='gold')
        self.assertRaises(lib_exc.BadRequest, self.admin.create_tier,
                          name='bad', min_iops=10, max_iops=5)
        self.assertRaises(lib_exc.Forbidden, self.member.create_tier,
                          name='x')
        self.assertEqual(['gold', 'mine'], sorted(
            t['name'] for t in self.member.list_tiers()['tiers']))
        self.assertEqual(['gold'], [
            t['name'] for t in self.other.list_tiers()['tiers']])
        self.assertRaises(lib_exc.NotFound, self.other.show_tier, 'mine')
        self.assertEqual(3000.0, self.admin.update_tier(
            'gold', min_iops=3000)['tier']['min_iops'])
        self.assertEqual(3000.0,
                         self.member.show_tier('gold')['tier']['min_iops'])
        self.admin.delete_tier('mine')
        self.assertRaises(lib_exc.NotFound, self.admin.show_tier, 'mine')

    def test_instances_domains_decisions(self):
        self.db.domain_create('local:c1', 'local', iops_4k=10000.0,
                              bytes_sec=400e6)
        instance = str(uuid.uuid4())
        self.db.disk_upsert(instance, 'vda', 'c1', 'local:c1', 'proj-a')
        self.admin.create_tier(name='gold', min_iops=2000)
        self.admin.create_tier(name='huge', min_iops=9500)
        answer = self.member.set_instance_tier(instance, 'gold')['instance']
        self.assertEqual('gold', answer['tier'])
        exc = self.assertRaises(lib_exc.Conflict,
                                self.member.set_instance_tier, instance,
                                'huge')
        self.assertIn('does not fit', str(exc.resp_body))
        self.assertNotIn('committed_after', str(exc.resp_body))
        exc = self.assertRaises(lib_exc.Conflict,
                                self.admin.set_instance_tier, instance,
                                'huge')
        self.assertIn('committed_after', str(exc.resp_body))
        disks = self.member.show_instance(instance)['instance']['disks']
        self.assertEqual(['gold'], [d['tier'] for d in disks])
        self.assertRaises(lib_exc.NotFound, self.other.show_instance,
                          instance)
        self.assertRaises(lib_exc.NotFound, self.other.set_instance_tier,
                          instance, 'gold')

        mine = disk_view.domain_id('proj-a', 'local:c1')
        self.assertEqual([mine], [
            d['domain_id'] for d in self.member.list_domains()['domains']])
        self.assertEqual(['vda'], [d['dev'] for d in self.member.show_domain(
            mine)['domain']['disks']])
        self.assertEqual([], self.other.list_domains()['domains'])
        for name in ('local:c1', mine):
            self.assertRaises(lib_exc.NotFound, self.other.show_domain, name)
        shown = self.admin.update_domain('local:c1', iops_4k=20000.0)
        self.assertEqual(20000.0, shown['domain']['profile']['iops_4k'])
        self.assertIn('committed', self.admin.show_domain('local:c1')[
            'domain'])

        ids = [dbrows.decision_create(
            self.db, 'local:c1', 'guarantee', instance, 'vda', 'proj-a',
            'cap', {}, {'total_iops_sec': 100 * i}, 'r', {})
            for i in range(3)]
        page = self.member.list_decisions(instance=instance, limit=2)
        self.assertEqual(sorted(ids, reverse=True)[:2],
                         [d['id'] for d in page['decisions']])
        self.assertEqual('next', page['links'][0]['rel'])
        rest = self.member.list_decisions(marker=page['decisions'][-1]['id'])
        self.assertEqual([min(ids)], [d['id'] for d in rest['decisions']])
        self.assertEqual([], self.other.list_decisions()['decisions'])
