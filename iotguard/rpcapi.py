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

"""The RPC API between the agents and the controllers: both clients.

Part of the contract the two services share (with :mod:`iotguard.caps`,
the wire records, and :mod:`iotguard.rates`, the rate math): the agent
imports :class:`ControllerAPI` and the controller :class:`AgentAPI` from
here, and neither imports the other's package. Each side's endpoint (its
``manager.py``) takes its ``target`` version from here.

Agent API (topic ``iotguard-agent``, server = host), version history:

* 1.0 - Initial version: ``apply_caps(caps)`` (cast),
  ``release_caps(disks)`` (cast), ``get_state()`` (call).

Controller API (topic ``iotguard-controller``), version history:

* 1.0 - Initial version: ``report_samples(host, samples)`` and
  ``agent_heartbeat(host, info)``, both fanout casts.
* 1.1 - ``report_samples``' batch may hold columns (:mod:`iotguard.batch`:
  one list per field instead of one dict per disk).
* 1.2 - ``report_samples(host, samples, route=True)`` is cast to **one**
  controller (no fanout), which keeps the disks of the domains it owns
  and sends each other owner its share with ``store_samples(batches)``
  (a cast to that controller alone, ``server`` = its tooz member id):
  every controller receives about its own share of the samples instead
  of all of them.

A controller of 1.2 takes batches of every form. An agent sends the newest
form its version cap allows (``[upgrade_levels] controller``, Nova's
pattern: unset means the newest), so the controllers are upgraded first,
then the agents; an agent upgraded before its controllers runs with
``[upgrade_levels] controller`` set to their version until they are.
"""

from typing import Any

import oslo_messaging

from iotguard import batch as batch_mod
from iotguard import rpc

AGENT_RPC_API_VERSION = '1.0'
CONTROLLER_RPC_API_VERSION = '1.2'

#: An RPC request context (a plain dict) and a payload (plain dicts).
Context = dict[str, Any]
Payload = dict[str, Any]


class AgentAPI:
    """Talks to one agent per compute host: topic iotguard-agent, server=host.

    A cap is the dict of :mod:`iotguard.caps` (``instance_uuid``, ``dev``,
    ``limits``, ``lease_expires_at``, ``decision_id``); a disk in
    ``release_caps`` is ``{"instance_uuid", "dev"}``.
    """

    def __init__(self, transport: oslo_messaging.Transport,
                 version_cap: str = AGENT_RPC_API_VERSION,
                 timeout: float | None = None) -> None:
        self.client = rpc.get_client(transport, rpc.TOPIC_AGENT,
                                     version_cap, timeout=timeout)

    def apply_caps(self, ctxt: Context, host: str,
                   caps: list[Payload]) -> None:
        self.client.prepare(server=host, version='1.0').cast(
            ctxt, 'apply_caps', caps=caps)

    def release_caps(self, ctxt: Context, host: str,
                     disks: list[Payload]) -> None:
        self.client.prepare(server=host, version='1.0').cast(
            ctxt, 'release_caps', disks=disks)

    def get_state(self, ctxt: Context, host: str) -> Payload:
        """Every disk of the host: static limits, cap, lease, live iotune."""
        state: Payload = self.client.prepare(
            server=host, version='1.0').call(ctxt, 'get_state')
        return state


class ControllerAPI:
    """Casts to the controllers on topic ``iotguard-controller``.

    An agent's batch goes to one controller (1.2), which routes each disk
    to its domain's owner, or to every controller (fanout, 1.1 and 1.0),
    each keeping the disks of the domains it owns: either way domain
    ownership can move between controllers without the agents knowing.
    """

    def __init__(self, transport: oslo_messaging.Transport,
                 version_cap: str | None = None) -> None:
        """A client; ``version_cap``: what every controller speaks.

        ``[upgrade_levels] controller``; None: this version.
        """
        self.client = rpc.get_client(
            transport, rpc.TOPIC_CONTROLLER, '1.0',
            version_cap=version_cap or CONTROLLER_RPC_API_VERSION)

    def sends_columns(self) -> bool:
        """Whether ``report_samples`` goes out in columns (1.1)."""
        return bool(self.client.can_send_version('1.1'))

    def report_samples(self, ctxt: Context, host: str,
                       samples: batch_mod.Batch | Payload) -> None:
        """One batch per host per interval, in columns (:mod:`iotguard.batch`).

        ``samples``: a :class:`iotguard.batch.Batch`, or its wire form
        ``{"timestamp": <UNIX time>, "interval_s": <float>,
        "disks": {<field>: [<value per disk>, ...], ...}}``; sent
        to one controller, which routes it (1.2), or to every controller
        (1.1) or, when the version cap is 1.0, as ``"disks": [<sample>,
        ...]`` (:data:`iotguard.caps.SAMPLE_SCHEMA`) to every controller.
        """
        if isinstance(samples, batch_mod.Batch):
            samples = samples.to_wire()
        if self.client.can_send_version('1.2'):
            self.client.prepare(version='1.2').cast(
                ctxt, 'report_samples', host=host, samples=samples,
                route=True)
            return
        if self.sends_columns():
            version = '1.1'
        else:
            version, samples = '1.0', batch_mod.to_samples(samples)
        self.client.prepare(fanout=True, version=version).cast(
            ctxt, 'report_samples', host=host, samples=samples)

    def store_samples(self, ctxt: Context, server: str,
                      batches: list[tuple[str, Payload]]) -> None:
        """Hand one controller (``server``) its share of some batches.

        ``batches``: ``[(host, samples), ...]`` in the 1.1 form, the disks
        of the domains ``server`` owns (controller to controller, 1.2).
        """
        self.client.prepare(server=server, version='1.2').cast(
            ctxt, 'store_samples', batches=batches)

    def agent_heartbeat(self, ctxt: Context, host: str,
                        info: Payload) -> None:
        """``info``: driver, disk counts, caps in force, agent version."""
        self.client.prepare(fanout=True, version='1.0').cast(
            ctxt, 'agent_heartbeat', host=host, info=info)
