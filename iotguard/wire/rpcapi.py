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

Part of the contract the two services share (with :mod:`iotguard.wire.batch`,
the sample record, :mod:`iotguard.wire.caps`, the cap records, and
:mod:`iotguard.wire.rates`, the rate math): the agent
imports :class:`ControllerAPI` and the controller :class:`AgentAPI` from
here, and neither imports the other's package. Each side's endpoint (its
``manager.py``) takes its ``target`` version from here.

Agent API (topic ``iotguard-agent``, server = host), version history:

* 1.0 - Initial version: ``apply_caps(caps)`` (cast),
  ``release_caps(disks)`` (cast), ``get_state()`` (call).

Controller API (topic ``iotguard-controller``), version history:

* 1.0 - Initial version: ``report_samples(host, samples)``, cast to one
  controller, which keeps the disks of the domains it owns and sends each
  other owner its share with ``store_samples(batches)`` (a cast to that
  controller alone, ``server`` = its tooz member id); and
  ``agent_heartbeat(host, info)``, a fanout cast. A batch of samples is
  the wire form of :class:`iotguard.wire.batch.Batch`, in both methods.
* 1.1 - A batch may mark some disks ``urgent`` (their demand rose): the
  owner of their domain may decide it at once. An agent sends such a
  batch as 1.1 (an older controller refuses it), any other as 1.0.
* 1.2 - A batch may carry each disk's 99th percentile latency
  (``p99_ms``, ``[agent] latency_histograms``). Such a batch is sent as
  1.2, else as 1.1 or 1.0 as before.
"""

from collections.abc import Callable
from typing import Any

import oslo_messaging

from iotguard.wire import batch as batch_mod
from iotguard.wire import rpc

AGENT_RPC_API_VERSION = '1.0'
CONTROLLER_RPC_API_VERSION = '1.2'

#: An RPC request context (a plain dict) and a payload (plain dicts).
Context = dict[str, Any]
Payload = dict[str, Any]


class AgentAPI:
    """Talks to one agent per compute host: topic iotguard-agent, server=host.

    A cap is the wire dict of :class:`iotguard.wire.caps.Cap`, a disk in
    ``release_caps`` that of :class:`iotguard.wire.caps.Disk`.
    ``host_offset(host)``: seconds the host's clock is ahead of the
    caller's (:meth:`iotguard.controller.samples.Clocks.lease_offset`);
    the leases go out on the host's clock, for its agent to check them
    on its own.
    """

    def __init__(self, transport: oslo_messaging.Transport,
                 version_cap: str = AGENT_RPC_API_VERSION,
                 timeout: float | None = None,
                 host_offset: Callable[[str], float] | None = None) -> None:
        self.client = rpc.get_client(transport, rpc.TOPIC_AGENT,
                                     version_cap, timeout=timeout)
        self.host_offset = host_offset

    def apply_caps(self, ctxt: Context, host: str,
                   caps: list[Payload]) -> None:
        offset = self.host_offset(host) if self.host_offset else 0.0
        if offset:
            caps = [dict(cap, lease_expires_at=cap['lease_expires_at']
                         + offset) for cap in caps]
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


def _version(batches: list[batch_mod.Batch]) -> str:
    """The oldest controller RPC API version that takes ``batches``."""
    if any(b.p99_ms is not None for b in batches):
        return '1.2'
    return '1.1' if any(b.urgent is not None for b in batches) else '1.0'


class ControllerAPI:
    """Casts to the controllers on topic ``iotguard-controller``."""

    def __init__(self, transport: oslo_messaging.Transport) -> None:
        self.client = rpc.get_client(transport, rpc.TOPIC_CONTROLLER,
                                     CONTROLLER_RPC_API_VERSION)

    def report_samples(self, ctxt: Context, host: str,
                       samples: batch_mod.Batch) -> None:
        """One batch per host per interval, to one controller (routed)."""
        self.client.prepare(version=_version([samples])).cast(
            ctxt, 'report_samples', host=host, samples=samples.to_wire())

    def store_samples(self, ctxt: Context, server: str,
                      batches: list[tuple[str | None, batch_mod.Batch]]
                      ) -> None:
        """Hand one controller (``server``) its share of some batches.

        ``batches``: ``[(host, samples), ...]``, the disks of the domains
        ``server`` owns (controller to controller); ``host`` is None for
        the known disks of several hosts in one batch.
        """
        self.client.prepare(
            server=server, version=_version([b for _host, b in batches])
        ).cast(
            ctxt, 'store_samples', batches=[
                (host, batch.to_wire()) for host, batch in batches])

    def agent_heartbeat(self, ctxt: Context, host: str,
                        info: Payload) -> None:
        """``info``: driver, disk counts, caps in force, agent version."""
        self.client.prepare(fanout=True).cast(
            ctxt, 'agent_heartbeat', host=host, info=info)
