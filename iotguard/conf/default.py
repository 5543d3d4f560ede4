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

"""Options of the ``[DEFAULT]`` group shared by every iotguard service."""

import socket

from oslo_config import cfg

#: None is oslo.config's [DEFAULT] group.
GROUP = None

OPTS: list[cfg.Opt] = [
    cfg.HostDomainOpt('host',
                      default=socket.gethostname(),
                      sample_default='<current_hostname>',
                      help='Name of this node, as nova-compute knows it '
                           '(Nova\'s ``[DEFAULT] host``). The agent serves '
                           'RPC with server=host and reports its samples '
                           'under this name.'),
]
