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

"""Options of ``[coordination]``: how controllers share the domains."""

from oslo_config import cfg

GROUP = 'coordination'

OPTS: list[cfg.Opt] = [
    cfg.StrOpt('backend_url',
               secret=True,
               help='tooz backend URL shared by every iotguard-controller, '
                    'e.g. ``redis://127.0.0.1:6379``, '
                    '``etcd3+http://127.0.0.1:2379`` or '
                    '``zookeeper://127.0.0.1:2181``. Unset: this controller '
                    'owns every domain (run only one).'),
    cfg.StrOpt('group_name',
               default='iotguard-controller',
               help='tooz group the controllers of one deployment join. '
                    'Two deployments sharing one backend need two names.'),
    cfg.IntOpt('member_timeout',
               default=4, min=1,
               help='Seconds after its last heartbeat before a silent '
                    'controller is dropped from the group and its domains '
                    'move to the others; passed to tooz as the URL '
                    'parameter ``timeout`` unless the URL sets it. A dead '
                    "controller's domains move within member_timeout "
                    'plus one decision interval: keep it below one '
                    'decision interval to move them within two.'),
]
