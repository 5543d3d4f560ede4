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

import os
from unittest import mock

from oslo_config import cfg
import testtools

from iotguard.tests import base

try:
    from iotguard.tempest_plugin import plugin
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
            'module_path': 'iotguard.tempest_plugin.services.v1',
            'client_names': ['IotguardClient']}], clients)

    def test_test_dir_is_inside_top_dir(self):
        tests, top = plugin.IotguardTempestPlugin().load_tests()
        self.assertEqual(os.path.join('iotguard', 'tempest_plugin', 'tests'),
                         os.path.relpath(tests, top))
