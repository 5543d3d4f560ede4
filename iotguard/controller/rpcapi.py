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

"""Client side of the controller RPC API, used by the agents.

API version history:

* 1.0 - Initial version: ``report_samples(host, samples)`` and
  ``agent_heartbeat(host, info)``, both fanout casts.
"""

from iotguard import rpc

RPC_API_VERSION = '1.0'


class ControllerAPI:
    """Casts to every controller (fanout) on topic ``iotguard-controller``.

    Every controller receives every batch and keeps the disks of the
    domains it owns, so domain ownership can move between controllers
    without the agents knowing.
    """

    def __init__(self, transport, version_cap=RPC_API_VERSION):
        self.client = rpc.get_client(transport, rpc.TOPIC_CONTROLLER,
                                     version_cap)

    def report_samples(self, ctxt, host, samples):
        """One batch per host per interval; see iotguard.caps.SAMPLE_SCHEMA.

        ``samples`` is ``{"timestamp": <UNIX time>, "interval_s": <float>,
        "disks": [<sample>, ...]}``.
        """
        self.client.prepare(fanout=True, version='1.0').cast(
            ctxt, 'report_samples', host=host, samples=samples)

    def agent_heartbeat(self, ctxt, host, info):
        """``info``: driver, disk counts, caps in force, agent version."""
        self.client.prepare(fanout=True, version='1.0').cast(
            ctxt, 'agent_heartbeat', host=host, info=info)
