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

"""Options of iotguard-api."""

from oslo_config import cfg

GROUP = 'api'

OPTS: list[cfg.Opt] = [
    cfg.StrOpt('auth_strategy',
               default='keystone',
               choices=[('keystone', 'keystonemiddleware auth_token '
                                     '(configure [keystone_authtoken])'),
                        ('noauth', 'trust the X-User-Id, X-Project-Id and '
                                   'X-Roles headers: tests and all-in-one '
                                   'only, never in production')],
               help='How API requests are authenticated.'),
    cfg.BoolOpt('nova_metadata_sync',
                default=True,
                help='After a tier choice is admitted, set the instance '
                     'metadata key iotguard:tier in Nova (through '
                     'openstacksdk with the [service_credentials] '
                     'credentials) so Nova and iotguard agree. Disable it '
                     'only where no Nova is reachable (tests, '
                     'simulations).'),
    cfg.BoolOpt('tier_sync',
                default=True,
                help='After a tier is created, changed or deleted through '
                     'the API, bring Nova flavors and Cinder volume types '
                     'in step with every tier, as iotguard-manage tier '
                     'sync does, with the [service_credentials] '
                     'credentials (not attempted when they name no '
                     'auth_type). A failure is logged and answered as '
                     'cloud_sync failed; the tier change stands.'),
    cfg.IntOpt('max_request_body_bytes',
               default=65536, min=1024,
               help='Largest request body accepted; larger ones get 413.'),
    cfg.IntOpt('max_limit',
               default=1000, min=1,
               help='Largest page a list call returns, whatever limit the '
                    'client asks for.'),
    cfg.HostAddressOpt('dev_server_host',
                       default='127.0.0.1',
                       help='Address the development server iotguard-api '
                            'listens on. Production deployments run '
                            'iotguard.wsgi.api:application under uWSGI or '
                            'mod_wsgi instead.'),
    cfg.PortOpt('dev_server_port',
                default=9737,
                help='Port of the development server iotguard-api.'),
]
