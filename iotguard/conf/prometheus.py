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

"""Options of ``[prometheus]``: where the services serve their metrics."""

from oslo_config import cfg

GROUP = 'prometheus'

OPTS: list[cfg.Opt] = [
    cfg.HostAddressOpt('host',
                       default='127.0.0.1',
                       help='Address the metrics endpoints listen on.'),
    cfg.PortOpt('controller_port',
                default=0,
                help='Port of iotguard-controller\'s Prometheus endpoint '
                     '(/metrics). 0: none.'),
    cfg.PortOpt('agent_port',
                default=0,
                help='Port of iotguard-agent\'s Prometheus endpoint '
                     '(/metrics). 0: none.'),
    cfg.BoolOpt('per_disk_series',
                default=False,
                help='Whether iotguard-controller also serves series per '
                     'disk (iotguard_disk_*: its rates, floor, cap and '
                     'floor-seconds kept, labelled by domain and disk, '
                     '<instance uuid>/<dev>): 8 series per disk of the '
                     'domains it owns. Off: per domain only.'),
]
