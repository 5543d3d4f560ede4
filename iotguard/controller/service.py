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

"""The controller process wired together: RPC server, partition, loop.

Threads only (no eventlet): the RPC server (topic ``iotguard-controller``;
with coordination its ``server`` is this controller's tooz member id, to
which the other controllers route samples) and the Ceilometer and
membership listeners use oslo.messaging's ``threading`` executor; with
coordination a thread sends the samples routed from here every
``FORWARD_S``; one thread runs :meth:`ControllerService.tick` every
``[controller] decision_interval``. A failing round is logged and the
next one runs on time. With ``[controller] urgent_interval`` above 0, one
more thread decides at once the domains whose disks the agents marked
urgent or whose samples resumed (after this controller's start, the
broker's or an agent's return: :mod:`~iotguard.controller.manager`),
when one of them is short of its floor
(:meth:`ControllerService.urgent`), never beside a round.
"""

from collections.abc import Callable
import functools
import math
import threading
import time
import typing
from wsgiref import simple_server

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging

from iotguard.controller import effects
from iotguard.controller import loop as loop_mod
from iotguard.controller import manager as manager_mod
from iotguard.controller import membership as membership_mod
from iotguard.controller import notifications
from iotguard.controller import partition as partition_mod
from iotguard.controller import placement
from iotguard.controller import samples as samples_mod
from iotguard.controller.sources import gnocchi as gnocchi_mod
from iotguard.controller.sources import prometheus as prometheus_mod
from iotguard.db import api as db_api
from iotguard import metrics
from iotguard.policy import admission
from iotguard.policy import base
from iotguard import service
from iotguard.wire import rpc
from iotguard.wire import rpcapi

LOG = logging.getLogger(__name__)

Server: typing.TypeAlias = oslo_messaging.MessageHandlingServer


class ControllerService:
    """One iotguard-controller; ``start()`` connects, ``stop()`` leaves."""

    def __init__(self, conf: cfg.ConfigOpts,
                 transport: oslo_messaging.Transport | None = None,
                 notification_transport: (
                     oslo_messaging.Transport | None) = None,
                 db: db_api.Connection | None = None,
                 member_id: str | None = None, group: bytes | None = None,
                 clock: Callable[[], float] = time.time,
                 timer: bool = True) -> None:
        # ``clock`` and ``timer=False``: the all-in-one runs the rounds on
        # simulated time by calling tick(now) itself.
        self.conf = conf
        self._clock = clock
        self._timer = timer
        self.host = conf.host
        self.interval_s: float = conf.controller.decision_interval
        self.transport = transport
        self.notification_transport = notification_transport
        self.db = db if db is not None else db_api.Connection(conf)
        self.store = samples_mod.SampleStore(
            self.interval_s, clock=clock,
            clock_warning_s=conf.controller.clock_offset_warning)
        self.partition = partition_mod.Partition(conf, member_id=member_id,
                                                 group=group)
        self.manager: manager_mod.ControllerManager   # by start()
        self.loop: loop_mod.DomainLoop                # by start()
        self.server: Server | None = None
        self.listener: Server | None = None
        self.gnocchi: gnocchi_mod.GnocchiSource | None = None
        self.prometheus: prometheus_mod.PrometheusSource | None = None
        self.membership: membership_mod.Membership | None = None
        self.notifier: notifications.Notifier | None = None
        self.membership_listener: Server | None = None
        self.placement = (placement.Report(conf, self.db)
                          if conf.placement.enabled else None)
        self._membership_due = 0.0
        self._moved: set[str] = set()   # instances a host reported elsewhere
        self.owned: set[str] = set()
        self.last_results: list[effects.RoundResult] = []
        self.rounds = metrics.Rounds(self.interval_s)
        self.metrics_server: simple_server.WSGIServer | None = None
        self._due: dict[str, float] = {}   # next poll of a read source
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._flusher: threading.Thread | None = None
        # One decision at a time: a round, or one domain's urgent one.
        self._deciding = threading.Lock()
        self._domains: dict[str, admission.Domain] = {}  # owned, last round
        # urgent disks by domain, waiting for the urgent thread, and how
        # many more decisions they may have
        self._urgent: dict[str, tuple[set[manager_mod.Key], int]] = {}
        self._urgent_ready = threading.Condition()
        self._urgent_thread: threading.Thread | None = None

    def start(self) -> None:
        conf = self.conf
        if self.transport is None:
            self.transport = rpc.get_transport(conf)
        if self.notification_transport is None:
            self.notification_transport = (
                oslo_messaging.get_notification_transport(conf))
        self.notifier = notifications.Notifier(
            conf, self.notification_transport)
        if self.placement is not None:
            self.placement.notifier = self.notifier
        self.partition.start()
        routed = self.partition.coordinated
        controllers = rpcapi.ControllerAPI(self.transport)
        self.manager = manager_mod.ControllerManager(
            conf, self.db, self.store, owns=self.partition.owns,
            clock=self._clock,
            owner_of=self.partition.owner_of if routed else None,
            forward=(functools.partial(controllers.store_samples, {})
                     if routed else None),
            on_urgent=(self.urgent if self._timer
                       and conf.controller.urgent_interval > 0 else None))
        self.loop = loop_mod.DomainLoop(
            conf, self.db, self.store, rpcapi.AgentAPI(
                self.transport, host_offset=self.store.clocks.lease_offset),
            self.notifier, clock=self._clock)
        try:
            self.manager.index.refresh()
        except Exception:
            LOG.exception('Could not read the disks yet; retrying every '
                          'round')
        self._start_sources()
        self._start_membership()
        self.server = rpc.get_server(
            self.transport, rpc.TOPIC_CONTROLLER,
            self.partition.member_id.decode() if routed else self.host,
            [self.manager])
        self.server.start(
            override_pool_size=conf.controller.rpc_thread_pool_size)
        self.metrics_server = metrics.serve(
            conf.prometheus.host, conf.prometheus.controller_port,
            self.collect_metrics)
        if self._timer:
            self._thread = threading.Thread(target=self._run,
                                            name='iotguard-controller-loop',
                                            daemon=True)
            self._thread.start()
        if self.manager.on_urgent is not None:
            self._urgent_thread = threading.Thread(
                target=self._run_urgent, name='iotguard-controller-urgent',
                daemon=True)
            self._urgent_thread.start()
        if routed:
            self._flusher = threading.Thread(
                target=self._flush_forwards, name='iotguard-controller-route',
                daemon=True)
            self._flusher.start()
        LOG.info('iotguard-controller on %s started (every %.1f s, leases '
                 '%.1f s, %s)', self.host, self.interval_s,
                 self.conf.controller.lease_seconds,
                 'coordinated' if self.partition.coordinated
                 else 'owning every domain')

    def _flush_forwards(self) -> None:
        """Send the routed samples that waited ``FORWARD_S`` (a thread)."""
        while not self._stop.wait(manager_mod.FORWARD_S):
            try:
                self.manager.flush_forwards()
            except Exception:
                LOG.exception('Routing samples to the other controllers '
                              'failed')

    def _start_sources(self) -> None:
        conf = self.conf
        if conf.ceilometer.enabled:
            from iotguard.controller.sources import ceilometer
            self.listener = ceilometer.get_listener(
                conf, self.notification_transport, self.manager.add_batch)
            self.listener.start()
            LOG.info('Listening to Ceilometer samples on topic %s',
                     conf.ceilometer.topic)
        if conf.gnocchi.enabled:
            self.gnocchi = gnocchi_mod.GnocchiSource(conf)
        if conf.prometheus_source.enabled:
            self.prometheus = prometheus_mod.PrometheusSource(conf)
            LOG.info('Reading Ceilometer\'s disk meters from Prometheus at '
                     '%s', conf.prometheus_source.url)

    def _start_membership(self) -> None:
        """Nova and Cinder membership, when iotguard may talk to them.

        On when ``[service_credentials] auth_type`` is set: Nova and Cinder
        notifications update it, and the controller that owns the key
        ``membership`` resyncs it in full every ``[membership]
        resync_interval``. Off: disks come from the agents
        (``[controller] register_local_disks``) and the database.
        """
        if not self.conf.service_credentials.auth_type:
            LOG.info('No [service_credentials] auth_type: membership is '
                     'not read from Nova and Cinder')
            return
        self.membership = membership_mod.Membership(
            self.conf, self.manager.index, on_rebuilt=self.rebuilt,
            notifier=self.notifier)
        self.manager.index.on_moved = self._moved.add
        self.membership_listener = membership_mod.get_listener(
            self.conf, self.notification_transport, self.membership)
        self.membership_listener.start()

    def _refresh_membership(self, now: float) -> None:
        if (self.membership is None or now < self._membership_due
                or not self.partition.owns('membership')):
            return
        self._membership_due = now + self.conf.membership.resync_interval
        try:
            LOG.info('Membership resynced: %s', self.membership.refresh())
        except Exception as e:
            LOG.warning('Membership resync failed (%s); keeping what is '
                        'known, next try in %.0f s', e,
                        self.conf.membership.resync_interval)

    def _follow_moves(self) -> None:
        """Resync the instances a host reported elsewhere; send their caps.

        See :meth:`~iotguard.controller.disk_index.DiskIndex.listed`.
        """
        while self._moved and self.membership is not None:
            uuid = self._moved.pop()
            try:
                self.membership.refresh_instance(uuid)
                self.membership.rebuilt(uuid)
            except Exception as e:
                LOG.warning('Could not resync moved instance %s: %s', uuid,
                            e)

    def rebuilt(self, instance_uuid: str, host: str) -> None:
        """Nova rebuilt the instance's domain: send its caps again now.

        The agent also re-applies them on the libvirt lifecycle event;
        this covers an agent that missed it.
        """
        caps = []
        for disk in self.db.disk_list(instance_uuid=instance_uuid):
            cap = disk.get('cap')
            if cap is None or disk['host'] != host:
                continue
            lease = effects.to_timestamp(cap['lease_expires_at'])
            if lease <= self._clock():
                continue
            caps.append(effects.cap_of(disk['instance_uuid'], disk['dev'],
                                       cap['limits'], lease,
                                       cap['decision_id']))
        if caps:
            self.loop.effects.agent_api.apply_caps(
                {}, host, [c.to_wire() for c in caps])
            LOG.info('Sent the %d cap(s) of rebuilt instance %s to %s again',
                     len(caps), instance_uuid, host)

    def _poll(self, name: str, source: typing.Any, every_s: float,
              now: float) -> None:
        """Poll a source that is read, not listened to, when it is due."""
        if source is None or now < self._due.get(name, 0.0):
            return
        self._due[name] = now + every_s
        try:
            source.poll(self.manager.add_batch)
        except Exception as e:
            LOG.warning('%s poll failed (%s); next poll in %.0f s', name, e,
                        every_s)

    def _poll_gnocchi(self, now: float) -> None:
        self._poll('Gnocchi', self.gnocchi,
                   self.conf.gnocchi.granularity / 2.0, now)

    def _poll_prometheus(self, now: float) -> None:
        self._poll('Prometheus', self.prometheus,
                   self.conf.prometheus_source.query_interval, now)

    def tick(self, now: float | None = None) -> None:
        """One round over the owned domains; never raises.

        Follows the tooz group, resyncs membership and reloads the disk
        index when due, polls Gnocchi and Prometheus when enabled, then
        runs the loop.
        """
        started = time.monotonic()
        self.last_results = []
        try:
            now = self._clock() if now is None else now
            domains = self.db.domain_list()
            names = set(self.partition.my_domains([d.name for d in domains]))
            domains = [d for d in domains if d.name in names]
            if names != self.owned:
                for name in sorted(names - self.owned):
                    LOG.info('Took over domain %s', name)
                for name in sorted(self.owned - names):
                    LOG.info('Handed over domain %s', name)
                LOG.info('Now owning %d domains', len(names))
                self.loop.forget(self.owned - names)
                self.rounds.forget(names)
                self.owned = names
            self._refresh_membership(now)
            if self.placement is not None:
                self.placement.sync_due(domains, now)
            self._follow_moves()
            if self.manager.index.due(now):
                self.manager.index.refresh()
            self._poll_gnocchi(now)
            self._poll_prometheus(now)
            self._domains = {d.name: d for d in domains}
            with self._deciding:
                self.last_results = self.loop.run(domains, now)
        except Exception as exc:
            away = db_api.unreachable(exc)
            if away is None:
                LOG.exception('Decision round failed; retrying next '
                              'interval')
            else:
                LOG.error('Decision round failed: database unreachable '
                          '(%s); retrying next interval', away)
        self.rounds.add(self.last_results, time.monotonic() - started)

    def urgent(self, disks: dict[str, list[manager_mod.Key]]) -> None:
        """Urgent disks by domain (an RPC thread): decided soon, not here."""
        with self._urgent_ready:
            for name, keys in disks.items():
                held = self._urgent.get(name, (set(), 0))[0]
                self._urgent[name] = (held | set(keys),
                                      base.URGENT_FOLLOW_UPS)
            self._urgent_ready.notify()

    def _run_urgent(self) -> None:
        """Decide the domains of urgent disks as soon as each is due.

        A domain not due yet (``[controller] urgent_interval``) keeps its
        urgent disks until it is; one owned by no round of this
        controller, or none of whose urgent disks is short of its floor,
        drops them (:meth:`~iotguard.controller.loop.DomainLoop.urgent`).
        A domain decided keeps them for up to
        :data:`~iotguard.policy.base.URGENT_FOLLOW_UPS` more decisions,
        one per ``urgent_interval`` while one is still short:
        a first cap may not be enough (the policy moves in steps), and the
        disk, still short, is not marked again while nothing changes.
        """
        while not self._stop.is_set():
            with self._urgent_ready:
                wait = None
                while not self._stop.is_set():
                    now = self._clock()
                    due = {name: self.loop.urgent_due(name, now)
                           for name in self._urgent}
                    ready = [n for n, at in due.items() if at <= now]
                    if ready:
                        break
                    wait = min(due.values(), default=math.inf) - now
                    self._urgent_ready.wait(None if math.isinf(wait)
                                            else wait)
                else:
                    return
                todo = {name: self._urgent.pop(name) for name in ready}
            marked = {name: (self._domains[name], keys)
                      for name, (keys, _more) in todo.items()
                      if name in self._domains}
            with self._deciding:
                try:
                    results = self.loop.urgent(marked, self._clock())
                except Exception:
                    LOG.exception('Urgent decisions of %d domains failed; '
                                  'the next round decides them', len(marked))
                    continue
            self.rounds.urgent(results)
            for result in results:
                LOG.debug('Urgent decision of %s: %s', result.domain, result)
            with self._urgent_ready:
                for result in results:
                    keys, more = todo[result.domain]
                    if more > 0:
                        # newer urgent disks of the domain reset the count
                        self._urgent.setdefault(result.domain,
                                                (keys, more - 1))

    def collect_metrics(self) -> list[metrics.Family]:
        """What Prometheus reads from this controller (:mod:`metrics`)."""
        return self.rounds.collect(self.manager.stats, self.store.rejected) + (
            self.placement.collect() if self.placement is not None else [])

    def _run(self) -> None:
        service.run_every(self.interval_s, self._stop, self.tick)

    def stop(self) -> None:
        self._stop.set()
        with self._urgent_ready:
            self._urgent_ready.notify()
        for server in (self.server, self.listener,
                       self.membership_listener):
            if server is not None:
                server.stop()
                server.wait()
        if self.membership is not None:
            self.membership.stop()
        if self._thread is not None:
            self._thread.join(timeout=60)
        if self._flusher is not None:
            self._flusher.join(timeout=5)
        if self._urgent_thread is not None:
            self._urgent_thread.join(timeout=60)
        self.partition.stop()
        if self.metrics_server is not None:
            self.metrics_server.shutdown()

    def wait(self) -> None:
        self._stop.wait()
