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

"""oslo.messaging helpers: one transport per process, threading executor.

Every service passes its own ``ConfigOpts`` in (no global ``CONF``); the
transport URL is oslo.messaging's ``[DEFAULT] transport_url``. Contexts are
plain dicts and so are payloads.
"""

import importlib
from typing import Any

from oslo_config import cfg
import oslo_messaging
from oslo_messaging.rpc import dispatcher

TOPIC_AGENT = 'iotguard-agent'
TOPIC_CONTROLLER = 'iotguard-controller'
EXCHANGE = 'iotguard'

#: Reconnection attempts before a cast or call gives up. iotguard is
#: level-based: a lost cast is sent again by the next round, and a lapsed
#: lease is the fail-safe, so a message must not block its thread for the
#: whole of a broker outage (oslo.messaging retries forever by default).
SEND_RETRY = 2


def _register_global_only_opts(conf: cfg.ConfigOpts) -> None:
    # oslo.messaging registers its metrics and tracing options on the
    # global cfg.CONF only; with a private ConfigOpts a cast or call raises
    # NoSuchOptError (oslo_messaging_metrics / oslo_messaging_tracing).
    # Register them where we are, as oslo_messaging.conffixture does.
    for module, name in (('oslo_messaging._metrics.client',
                          'oslo_messaging_metrics'),
                         ('oslo_messaging._tracing.client',
                          'oslo_messaging_tracing')):
        try:
            opts = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
        conf.register_opts(opts, group=name)


def get_transport(conf: cfg.ConfigOpts,
                  url: str | None = None) -> oslo_messaging.Transport:
    """The RPC transport of ``conf`` (or of ``url`` when given).

    iotguard's exchange defaults to ``iotguard`` (``[DEFAULT]
    control_exchange``), as nova's is ``nova``.
    """
    _register_global_only_opts(conf)
    oslo_messaging.set_transport_defaults(control_exchange=EXCHANGE)
    return oslo_messaging.get_rpc_transport(conf, url=url)


def listener_pool(conf: cfg.ConfigOpts, source: str,
                  configured: str | None = None) -> str:
    """The pool (the queue) of one notification listener of a controller.

    ``configured`` when set, else ``iotguard-<source>.<[DEFAULT] host>``:
    one queue per controller and per source, so every controller gets every
    event, two listeners never take each other's messages, and none shares
    a queue with an RPC server (``iotguard-controller.<host>`` is the
    controller's own RPC queue).
    """
    return configured or 'iotguard-%s.%s' % (source, conf.host)


def topic_of(transport: oslo_messaging.Transport, name: str) -> str:
    """The topic ``name`` (:data:`TOPIC_AGENT`, ...) on ``transport``.

    RabbitMQ names a topic's queues after the topic alone, whatever the
    exchange: two iotguards on one broker (virtual host) with different
    ``control_exchange`` would take each other's casts from the shared
    queue. With an exchange other than ``iotguard``, the topic carries
    its name too, so each exchange is an iotguard of its own.
    """
    exchange = transport.conf.control_exchange
    return name if exchange == EXCHANGE else '%s-%s' % (name, exchange)


def get_client(transport: oslo_messaging.Transport, topic: str, version: str,
               timeout: float | None = None,
               retry: int = SEND_RETRY) -> oslo_messaging.RPCClient:
    """An RPC client for ``topic``; use ``prepare(server=...)`` per call.

    ``topic``: :data:`TOPIC_AGENT` or :data:`TOPIC_CONTROLLER`, made the
    transport's (:func:`topic_of`).
    """
    target = oslo_messaging.Target(topic=topic_of(transport, topic),
                                   version=version)
    return oslo_messaging.get_rpc_client(transport, target, timeout=timeout,
                                         retry=retry)


def get_server(transport: oslo_messaging.Transport, topic: str, server: str,
               endpoints: list[Any]) -> oslo_messaging.MessageHandlingServer:
    """A started-on-demand RPC server with the threading executor.

    ``topic`` as for :func:`get_client`.
    """
    target = oslo_messaging.Target(topic=topic_of(transport, topic),
                                   server=server)
    return oslo_messaging.get_rpc_server(
        transport, target, endpoints, executor='threading',
        access_policy=dispatcher.DefaultRPCAccessPolicy)
