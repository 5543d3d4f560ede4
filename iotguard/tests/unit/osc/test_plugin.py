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

"""Unit tests of the OSC plugin's global options and client factory."""

import argparse
from unittest import mock

import fixtures
from osc_lib import exceptions

from iotguard.osc import client
from iotguard.osc import plugin
from iotguard.tests import base


class TestPlugin(base.TestCase):

    def test_options_and_environment(self):
        for name, value in (('OS_IOTGUARD_URL', 'http://api:9737'),
                            ('OS_IOTGUARD_NOAUTH_ROLES', 'admin'),
                            ('OS_IOTGUARD_API_VERSION', None)):
            self.useFixture(fixtures.EnvironmentVariable(name, value))
        parser = plugin.build_option_parser(argparse.ArgumentParser())
        args = parser.parse_args(['--os-iotguard-noauth-project', 'p1'])
        self.assertEqual('http://api:9737', args.os_iotguard_url)
        self.assertEqual('p1', args.os_iotguard_noauth_project)
        self.assertEqual('admin', args.os_iotguard_noauth_roles)
        self.assertIsNone(args.os_iotguard_noauth_user)
        self.assertEqual('1', args.os_iotguard_api_version)
        self.assertIn(args.os_iotguard_api_version, plugin.API_VERSIONS)
        self.assertEqual('os_iotguard_api_version', plugin.API_VERSION_OPTION)

    def test_noauth_headers_only_without_auth(self):
        config = {'iotguard_noauth_user': 'u', 'iotguard_noauth_project': 'p',
                  'iotguard_noauth_roles': None}
        for auth_type, headers in (
                ('none', {'X-User-Id': 'u', 'X-Project-Id': 'p'}),
                ('password', {})):
            instance = mock.Mock()
            instance.get_configuration.return_value = dict(
                config, auth_type=auth_type)
            self.assertEqual(headers, plugin.make_client(
                instance).http.additional_headers)

    def test_make_client(self):
        instance = mock.Mock(interface='internal', region_name='R1')
        instance.get_configuration.return_value = {
            'auth_type': 'none', 'iotguard_url': 'http://api:9737',
            'iotguard_noauth_project': 'p'}
        made = plugin.make_client(instance)
        instance.setup_auth.assert_called_once_with()
        self.assertIs(instance.session, made.http.session)
        self.assertEqual('http://api:9737', made.http.endpoint_override)
        self.assertEqual('resource-guarantee', made.http.service_type)
        self.assertEqual('internal', made.http.interface)
        self.assertEqual('R1', made.http.region_name)
        self.assertEqual({'X-Project-Id': 'p'},
                         made.http.additional_headers)

    def test_catalog_when_no_url(self):
        instance = mock.Mock(interface='public', region_name=None)
        instance.get_configuration.return_value = {'auth_type': 'password'}
        made = plugin.make_client(instance)
        self.assertIsNone(made.http.endpoint_override)
        self.assertEqual({}, made.http.additional_headers)
        self.assertEqual(client.SERVICE_TYPE, made.http.service_type)

    def test_api_version_checked(self):
        self.assertTrue(plugin.check_api_version('1'))
        exc = self.assertRaises(exceptions.UnsupportedVersion,
                                plugin.check_api_version, '2')
        self.assertIn('iotguard API version 2 is not supported '
                      '(supported: 1)', str(exc))
