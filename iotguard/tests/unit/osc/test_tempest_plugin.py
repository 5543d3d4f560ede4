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

"""The tempest plugin's options and test directory (tempest installed).

iotguard/tempest_plugin/ is outside the unit test path (tempest runs its
tests against a cloud), so its offline checks live here, next to the
other client.
"""

import json
import os
from unittest import mock

import fixtures

from oslo_config import cfg
import testtools

from iotguard.tests import base

try:
    from tempest.lib import exceptions as lib_exc
    from tempest.lib.services import clients as tempest_clients

    from iotguard.tempest_plugin import plugin
    from iotguard.tempest_plugin.services.v1 import iotguard_client
except ImportError:  # tempest is a test requirement, but may be missing
    plugin = None


@testtools.skipIf(plugin is None, 'tempest is not installed')
class TestTempestPlugin(base.TestCase):

    def test_options_register_with_defaults(self):
        conf = cfg.ConfigOpts()
        plugin.IotguardTempestPlugin().register_opts(conf)
        conf([], default_config_files=[])
        self.assertFalse(conf.service_available.iotguard)
        self.assertEqual('resource-guarantee', conf.iotguard.catalog_type)
        self.assertEqual('publicURL', conf.iotguard.endpoint_type)
        self.assertEqual(0.9, conf.iotguard.max_commit_ratio)
        self.assertFalse(conf.iotguard_feature_enabled.agent)

    def test_opt_lists_name_every_group(self):
        lists = dict(plugin.IotguardTempestPlugin().get_opt_lists())
        self.assertEqual({'iotguard', 'iotguard_feature_enabled',
                          'service_available'}, set(lists))
        self.assertEqual(['iotguard'],
                         [o.name for o in lists['service_available']])
        self.assertIn('catalog_type',
                      [o.name for o in lists['iotguard']])

    def test_service_client_registration(self):
        with mock.patch.object(plugin.config, 'service_client_config',
                               return_value={'service': 'x'}) as read:
            clients = plugin.IotguardTempestPlugin().get_service_clients()
        read.assert_called_once_with('iotguard')
        self.assertEqual([{
            'service': 'x', 'name': 'iotguard_v1',
            'service_version': 'iotguard.v1',
            'module_path':
                'iotguard.tempest_plugin.services.v1.iotguard_client',
            'client_names': ['IotguardClient']}], clients)
        # tempest finds the client where the plugin says it is
        factory = tempest_clients.ClientsFactory(
            clients[0]['module_path'], clients[0]['client_names'],
            mock.Mock(), service='resource-guarantee', region='r1')
        self.assertIsInstance(factory.IotguardClient(),
                              iotguard_client.IotguardClient)

    def test_test_dir_is_inside_top_dir(self):
        tests, top = plugin.IotguardTempestPlugin().load_tests()
        self.assertEqual(os.path.join('iotguard', 'tempest_plugin', 'tests'),
                         os.path.relpath(tests, top))


@testtools.skipIf(plugin is None, 'tempest is not installed')
class TestIotguardClient(base.TestCase):
    """The REST client's requests, with tempest's request() faked."""

    def setUp(self):
        super().setUp()
        self.client = iotguard_client.IotguardClient(
            mock.Mock(), 'resource-guarantee', 'r1')
        self.request = self.useFixture(fixtures.MockPatchObject(
            self.client, 'request')).mock

    def answer(self, status, body=b''):
        self.request.return_value = (mock.Mock(status=status), body)

    def test_requests(self):
        calls = [
            (201, lambda c: c.create_tier(name='a b', weight=2),
             ('POST', 'v1/tiers', {'name': 'a b', 'weight': 2})),
            (200, lambda c: c.update_tier('a b', weight=3),
             ('PATCH', 'v1/tiers/a%20b', {'weight': 3})),
            (204, lambda c: c.delete_tier('a/b'),
             ('DELETE', 'v1/tiers/a%2Fb', None)),
            (200, lambda c: c.set_instance_tier('u1', 'gold'),
             ('PUT', 'v1/instances/u1/tier', {'tier': 'gold'})),
            (200, lambda c: c.update_domain('local:c1', bytes_sec=1),
             ('PATCH', 'v1/domains/local%3Ac1', {'bytes_sec': 1})),
            (200, lambda c: c.show_domain('d'), ('GET', 'v1/domains/d', None)),
            (200, lambda c: c.list_decisions(instance='u1', since=None,
                                             limit=2),
             ('GET', 'v1/decisions?instance=u1&limit=2', None)),
            (200, lambda c: c.list_decisions(),
             ('GET', 'v1/decisions', None)),
        ]
        for status, call, (method, url, body) in calls:
            self.answer(status, b'' if status == 204 else b'{"x": 1}')
            self.assertEqual({} if status == 204 else {'x': 1},
                             call(self.client))
            args, kwargs = self.request.call_args
            self.assertEqual((method, url), args)
            self.assertEqual(body, kwargs['body'] and json.loads(
                kwargs['body']))

    def test_unexpected_status_is_an_error(self):
        self.answer(200, b'{"tier": {}}')
        self.assertRaises(lib_exc.InvalidHttpSuccessCode,
                          self.client.create_tier, name='a')
        self.answer(200, b'{"tier": {"name": "a"}}')
        self.assertEqual({'name': 'a'},
                         self.client.show_tier('a')['tier'])
