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

"""Client side of the agent RPC API, used by the controllers.

API version history:

* 1.0 - Initial version: ``apply_caps(caps)`` (cast),
  ``release_caps(disks)`` (cast), ``get_state()`` (call).
"""

from iotguard import rpc

RPC_API_VERSION = '1.0'


class AgentAPI:
    """Talks to one agent per compute host: topic iotguard-agent, server=host.

    A cap is the dict of :mod:`iotguard.caps` (``instance_uuid``, ``dev``,
    ``limits``, ``lease_expires_at``, ``decision_id``); a disk in
    ``release_caps`` is ``{"instance_uuid", "dev"}``.
    """

    def __init__(self, transport, version_cap=RPC_API_VERSION, timeout=None):
        self.client = rpc.get_client(transport, rpc.TOPIC_AGENT,
                                     version_cap, timeout=timeout)

    def apply_caps(self, ctxt, host, caps):
        self.client.prepare(server=host, version='1.0').cast(
            ctxt, 'apply_caps', caps=caps)

    def release_caps(self, ctxt, host, disks):
        self.client.prepare(server=host, version='1.0').cast(
            ctxt, 'release_caps', disks=disks)

    def get_state(self, ctxt, host):
        """Every disk of the host: static limits, cap, lease, live iotune."""
        return self.client.prepare(server=host, version='1.0').call(
            ctxt, 'get_state')
