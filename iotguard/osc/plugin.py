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

"""The python-openstackclient plugin: ``openstack iotguard ...``.

openstackclient finds this module through the ``openstack.cli.extension``
entry point and the commands through ``openstack.iotguard.v1``.

The endpoint is the catalog's ``resource-guarantee`` service (public
interface unless ``--os-interface`` says otherwise), or ``--os-iotguard-url``
(``OS_IOTGUARD_URL``). With ``--os-auth-type none`` against an API running
``[api] auth_strategy = noauth`` the identity the API trusts is sent as
headers from ``--os-iotguard-noauth-user``, ``-project`` and ``-roles``.
"""

import argparse
from typing import Any

from osc_lib import clientmanager
from osc_lib import exceptions
from osc_lib import utils

from iotguard.osc import client

DEFAULT_API_VERSION = '1'
API_VERSION_OPTION = 'os_iotguard_api_version'
API_NAME = 'iotguard'
API_VERSIONS = {'1': 'iotguard.osc.client.Client'}

NOAUTH_HEADERS = (('noauth_user', 'X-User-Id'),
                  ('noauth_project', 'X-Project-Id'),
                  ('noauth_roles', 'X-Roles'))


def noauth(config: dict[str, Any]) -> bool:
    """Whether osc runs with ``--os-auth-type none`` (no Keystone)."""
    return config.get('auth_type') == 'none'


def check_api_version(check_version: str) -> bool:
    """openstackclient's hook: refuse a version iotguard does not have.

    Returns True (osc then skips its own check, a mere warning).
    """
    if str(check_version) not in API_VERSIONS:
        raise exceptions.UnsupportedVersion(
            'iotguard API version %s is not supported (supported: %s); '
            'see --os-iotguard-api-version' % (
                check_version, ', '.join(sorted(API_VERSIONS))))
    return True


def make_client(instance: clientmanager.ClientManager) -> client.Client:
    """The iotguard client for osc's ClientManager ``instance``."""
    config = instance.get_configuration()
    instance.setup_auth()
    # The identity headers for a ``none`` auth type only.
    headers = {header: config['iotguard_' + key]
               for key, header in NOAUTH_HEADERS
               if noauth(config) and config.get('iotguard_' + key)}
    return client.Client(instance.session,
                         endpoint=config.get('iotguard_url'),
                         interface=instance.interface,
                         region_name=instance.region_name,
                         headers=headers)


def build_option_parser(
        parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The global options of the plugin."""
    parser.add_argument(
        '--os-iotguard-api-version', metavar='<iotguard-api-version>',
        default=utils.env('OS_IOTGUARD_API_VERSION',
                          default=DEFAULT_API_VERSION),
        help='iotguard API version, default=%s (Env: '
             'OS_IOTGUARD_API_VERSION)' % DEFAULT_API_VERSION)
    parser.add_argument(
        '--os-iotguard-url', metavar='<url>',
        default=utils.env('OS_IOTGUARD_URL'),
        help='iotguard-api endpoint, instead of the catalog\'s %s '
             'service, e.g. http://127.0.0.1:9737 (Env: OS_IOTGUARD_URL)'
             % client.SERVICE_TYPE)
    for key, header in NOAUTH_HEADERS:
        option = key.replace('noauth_', 'noauth-')
        env = 'OS_IOTGUARD_%s' % key.upper()
        parser.add_argument(
            '--os-iotguard-%s' % option, metavar='<%s>' % option,
            default=utils.env(env),
            help='With --os-auth-type none only: the %s header for an '
                 'iotguard-api running auth_strategy = noauth (Env: %s)'
                 % (header, env))
    return parser
