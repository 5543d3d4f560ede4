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

"""Tempest options of the iotguard plugin.

These are tempest's options (read by tempest from tempest.conf), not
iotguard's: they cannot live in iotguard/conf/, which the plugin must not
import, hence the I302 exemptions.
"""

from oslo_config import cfg

service_option = cfg.BoolOpt(  # noqa: I302
    'iotguard', default=False,
    help='Whether iotguard (service type resource-guarantee) is expected '
         'to be available.')

iotguard_group = cfg.OptGroup(name='iotguard', title='iotguard options')

IotguardGroup = [  # noqa: I302
    cfg.StrOpt('catalog_type', default='resource-guarantee',
               help='Catalog service type of iotguard-api.'),
    cfg.StrOpt('endpoint_type', default='publicURL',
               choices=['public', 'admin', 'internal', 'publicURL',
                        'adminURL', 'internalURL'],
               help='Catalog endpoint type of iotguard-api.'),
    cfg.StrOpt('region', default='',
               help='Catalog region of iotguard-api (empty: the identity '
                    'region).'),
    cfg.IntOpt('build_timeout', default=300,
               help='Seconds to wait for iotguard to learn about a new '
                    'server, or for a decision in the scenario tests.'),
    cfg.IntOpt('build_interval', default=5,
               help='Seconds between two polls while waiting.'),
    cfg.FloatOpt('max_commit_ratio', default=0.9,
                 help="The cloud's [admission] max_commit_ratio."),
    cfg.FloatOpt('decision_interval', default=5.0,
                 help="The cloud's [controller] decision_interval "
                      '(seconds).'),
    cfg.FloatOpt('rates_write_interval', default=30.0,
                 help="The cloud's [controller] rates_write_interval: how "
                      'stale the rates the API shows may be (seconds).'),
    cfg.FloatOpt('scenario_profile_bytes_sec', default=24 * 1024 * 1024,
                 help='Capacity profile (bytes/s) the scenario test gives '
                      "the servers' domain for the time of the test, low "
                      'enough for two writers to make it busy (the test '
                      'puts back the profile it found).'),
]

iotguard_feature_group = cfg.OptGroup(
    name='iotguard_feature_enabled', title='iotguard features')

IotguardFeatureGroup: list[cfg.Opt] = [  # noqa: I302
    cfg.BoolOpt('agent', default=False,
                help='An iotguard agent runs next to every nova-compute '
                     '(the devstack plugin does this); the scenario tests '
                     'need it.'),
]
