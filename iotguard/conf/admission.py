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

"""Options of tier admission control."""

from oslo_config import cfg

GROUP = 'admission'

OPTS: list[cfg.Opt] = [
    cfg.FloatOpt('max_commit_ratio',
                 default=0.9, min=0.0, max=1.0,
                 help='A tier choice is admitted only while the '
                      'cost-weighted floors committed in the disk\'s '
                      'domain stay within this fraction of the domain\'s '
                      'capacity (1.0 device-second per second).'),
    cfg.BoolOpt('unified_limits',
                default=False,
                help='Also refuse a tier choice through the API that would '
                     'take its project beyond its Keystone unified limit '
                     'of committed floor units (``iotguard_floor_units_'
                     'local`` for host-local domains, ``iotguard_floor_'
                     'units_shared`` for the others; units as ``[placement]'
                     ' unit_bytes_sec`` prices them), read through '
                     'oslo.limit as the ``[oslo_limit]`` section of the '
                     'same configuration files says (the endpoint whose '
                     'service and region the limits are registered for, '
                     'and credentials allowed to read limits). A resource '
                     'without a registered limit counts as a limit of 0.'),
]
