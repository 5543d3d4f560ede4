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

"""Options of tiers: the default and the Nova/Cinder mapping."""

from oslo_config import cfg

GROUP = 'tiers'

OPTS: list[cfg.Opt] = [
    cfg.StrOpt('default_tier',
               help='Tier of a disk that has none from instance metadata, '
                    'flavor or volume type. Unset: such disks have no '
                    'floor (best effort).'),
    cfg.DictOpt('flavor_tiers',
                default={},
                help='Nova flavors iotguard-manage tier sync keeps in '
                     'step, as flavor:tier pairs: the flavor gets the extra '
                     'spec iotguard:tier and the tier ceilings as '
                     'quota:disk_total_iops_sec and '
                     'quota:disk_total_bytes_sec, or, for a kind the flavor '
                     'already limits by read and write keys, as '
                     'quota:disk_read_* and quota:disk_write_* of half the '
                     'ceiling each.'),
    cfg.StrOpt('volume_type_prefix',
               default='iotguard-',
               help='tier sync names the Cinder volume type (and its QoS '
                    'spec) of a tier <prefix><tier>.'),
]
