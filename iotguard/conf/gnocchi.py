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

"""Options of the controller's Gnocchi source (history and agentless)."""

from oslo_config import cfg

GROUP = 'gnocchi'

OPTS: list[cfg.Opt] = [
    cfg.BoolOpt('enabled',
                default=False,
                help='Read disk rates from Gnocchi (POST /v1/aggregates '
                     'over instance_disk resources), for domains whose '
                     'hosts run no agent and for history.'),
    cfg.StrOpt('auth_mode',
               default='keystone',
               choices=[('keystone', 'a keystoneauth session from '
                                     '[service_credentials]'),
                        ('basic', "Gnocchi's basic auth (user "
                                  '[gnocchi] user, no password)'),
                        ('noauth', "Gnocchi's noauth headers "
                                   '(tests only)')],
               help='How to authenticate to Gnocchi.'),
    cfg.URIOpt('endpoint',
               help='Gnocchi URL, e.g. http://gnocchi:8041. Required '
                    'unless auth_mode is keystone, where it defaults to '
                    'the catalog entry of the metric service.'),
    cfg.StrOpt('user',
               default='admin',
               help='User name for basic and noauth modes.'),
    cfg.IntOpt('granularity',
               default=300, min=1,
               help='Seconds: the archive-policy granularity to read. '
                    'It must exist in the archive policy of the disk '
                    'metrics; with the rate:mean method it must also '
                    "equal Ceilometer's polling interval."),
    cfg.StrOpt('rate_method',
               default='rateofchangesec',
               choices=[('rateofchangesec',
                         'per-second rate of the bucket means of the '
                         'counters (needs only "mean" in the archive '
                         'policy)'),
                        ('rate:mean',
                         'the archive policy\'s rate:mean divided by the '
                         'granularity (needs "rate:mean" in the archive '
                         'policy and one measure per bucket)')],
               help='How a cumulative counter becomes a per-second rate. '
                    "Gnocchi's rate:mean is the change between "
                    'consecutive measures, not per second.'),
    cfg.IntOpt('lookback_buckets',
               default=3, min=2,
               help='How many buckets back a poll of the latest rates '
                    'looks.'),
    cfg.FloatOpt('timeout',
                 default=10.0, min=0.1,
                 help='Seconds before a Gnocchi request gives up.'),
]
