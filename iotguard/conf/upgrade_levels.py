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

"""Options of ``[upgrade_levels]``: RPC versions during a rolling upgrade."""

from oslo_config import cfg

GROUP = 'upgrade_levels'

OPTS = [
    cfg.StrOpt('controller',
               regex=r'^\d+\.\d+$',
               help='The newest RPC API version every iotguard-controller '
                    'of the deployment speaks, as Nova\'s '
                    '``[upgrade_levels]``: an agent sends nothing newer. '
                    'Unset: the agent\'s own version. Upgrade the '
                    'controllers first; an agent upgraded before them '
                    'runs with their version until they are: ``1.0`` '
                    '(samples as a dict per disk, to every controller), '
                    '``1.1`` (in columns, to every controller), ``1.2`` '
                    '(in columns, to one controller, which routes them '
                    'to their domains\' owners).'),
]
