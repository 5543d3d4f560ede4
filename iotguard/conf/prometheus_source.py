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

"""Options of the controller's Prometheus source (Ceilometer's exporter).

Not ``[prometheus]``: that group is where iotguard serves its own
metrics.
"""

from oslo_config import cfg

GROUP = 'prometheus_source'

OPTS: list[cfg.Opt] = [
    cfg.BoolOpt('enabled',
                default=False,
                help='Read disk rates from a Prometheus server that '
                     'scrapes the Prometheus exporter of Ceilometer\'s '
                     'polling agents (``[polling] '
                     'enable_prometheus_exporter``): the '
                     '``ceilometer_disk_device_*`` series, for domains '
                     'whose hosts run no agent.'),
    cfg.URIOpt('url',
               schemes=['http', 'https'],
               help='Base URL of the Prometheus server (its HTTP API is '
                    'under /api/v1), e.g. http://prometheus:9090. '
                    'Required when enabled.'),
    cfg.StrOpt('matchers',
               default='',
               help='Extra PromQL label matchers for every series read, '
                    'e.g. ``job="ceilometer"`` when other jobs carry the '
                    'same metric names.'),
    cfg.FloatOpt('polling_interval',
                 default=300.0, min=1.0,
                 help='Seconds: the interval at which Ceilometer polls the '
                      'disk meters (its polling.yaml); never less. '
                      'Counters that have not moved for 1.5 intervals are '
                      'an idle disk, a disk Prometheus has not scraped for '
                      'one interval gives no sample, and each query reads '
                      'back three intervals. Prometheus must scrape the '
                      'exporter at least twice per interval.'),
    cfg.FloatOpt('query_interval',
                 default=30.0, min=1.0,
                 help='Seconds between two reads of Prometheus (one query '
                      'per disk metric for all the disks each time).'),
    cfg.FloatOpt('timeout',
                 default=10.0, min=0.1,
                 help='Seconds before a query gives up.'),
    cfg.StrOpt('username',
               help='User name, when Prometheus sits behind basic '
                    'authentication.'),
    cfg.StrOpt('password',
               secret=True,
               help='Password for basic authentication.'),
    cfg.StrOpt('cafile',
               help='CA bundle to verify an https URL (default: the '
                    'system\'s).'),
    cfg.BoolOpt('insecure',
                default=False,
                help='Do not verify the server\'s certificate (tests '
                     'only).'),
]
