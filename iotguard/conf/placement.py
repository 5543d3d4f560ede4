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

"""Options of the domains' floors reported to Placement."""

from oslo_config import cfg

GROUP = 'placement'

OPTS: list[cfg.Opt] = [
    cfg.BoolOpt('enabled',
                default=False,
                help='Report each owned domain\'s committable floors to '
                     'Placement as inventory of a resource provider, at '
                     'every ``[membership] resync_interval``, with the '
                     '``[service_credentials]`` (which need Placement\'s '
                     'admin or service role); and have tier sync (the '
                     'command and the API\'s) write each tier\'s floor '
                     'into its flavors as ``resources:<resource_class>='
                     '<units>``, removed again when this is off.'),
    cfg.StrOpt('resource_class',
               default='CUSTOM_IOTGUARD_FLOOR',
               regex=r'^CUSTOM_[A-Z0-9_]+$',
               help='The custom resource class of the floors\' units.'),
    cfg.FloatOpt('unit_bytes_sec',
                 default=65536.0, min=4096.0,
                 help='What one floor unit is worth besides one '
                      'operation per second: a floor of ``min_iops`` and '
                      '``min_bytes_sec`` costs ``min_iops + min_bytes_sec '
                      '/ unit_bytes_sec`` units on every domain, and a '
                      'domain has ``max_commit_ratio * min(iops_4k, '
                      'bytes_sec / unit_bytes_sec)``. Set it near the '
                      'domains\' ``bytes_sec / iops_4k``: a domain whose '
                      'ratio is N times off has up to N times fewer '
                      'floors to offer through Placement, never more than '
                      'admission allows.'),
]
