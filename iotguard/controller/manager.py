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

"""The controller's RPC endpoint (topic ``iotguard-controller``).

Each controller keeps the samples of the disks in the domains it owns
(which disk is in which domain: the
:class:`~iotguard.controller.disk_index.DiskIndex` it shares with
membership), so ownership moves between controllers without the agents
knowing:

* ``report_samples(host, samples)``: an agent's batch reaches one
  controller, which checks it whole (:func:`iotguard.wire.batch.decode`;
  a malformed batch is refused whole), keeps the disks of the domains it
  owns and queues each other owner's share; the queue goes out as one
  ``store_samples`` cast per owner every ``FORWARD_S`` seconds, or as
  soon as it holds ``FORWARD_DISKS`` disks. With ``[controller]
  register_local_disks`` on, an unknown disk goes to the owner of the
  host's ephemeral domain, which may record it (below). The host's whole
  listing goes to
  :meth:`~iotguard.controller.disk_index.DiskIndex.listed`. Without
  coordination (one controller) nothing is routed.
* ``store_samples(batches)``: another controller's routed shares,
  ``[(host, samples)]``, checked again; ``host`` is None for the shares
  of known disks merged from several hosts
  (:func:`iotguard.wire.batch.merge`).
* ``agent_heartbeat(host, info)``: the agents table (written by the one
  controller that owns ``agent:<host>``).

Of a checked batch, the disks of domains owned by another controller (one
that moved away meanwhile) and disks nobody knows are dropped (counted in
``stats``; an unknown disk is logged once); an unknown image-backed disk
of the reporting host is recorded in the host's ephemeral domain when
``register_local_disks`` is on and this controller owns that domain. The
rest goes to the :class:`~iotguard.controller.samples.SampleStore`.
Nothing a message holds can stop the service: every error is logged and
the message dropped. The disks a stored batch marks urgent (RPC API 1.1)
go, by domain, to ``on_urgent`` (the service decides those domains at
once when one of them is short of its floor,
:meth:`iotguard.controller.service.ControllerService.urgent`), and so do
the disks whose samples resume: a fresh sample with rates where the
store held none to act on (this controller just started, the broker or
the agent is back after an outage, a disk restarted). The floors a
lapsed cap left unkept are then decided on the first fresh samples, not
at the next round.
"""

from collections.abc import Callable
import math
import threading
import time
from typing import Any

import numpy as np
from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging

from iotguard.controller import disk_index
from iotguard.controller import membership
from iotguard.controller import samples
from iotguard.db import api as db_api
from iotguard import exception
from iotguard.wire import batch as batch_mod
from iotguard.wire import rpcapi

LOG = logging.getLogger(__name__)

#: Routed shares wait at most this long (seconds) for more of the same
#: owner, or until they hold this many disks, before they are sent.
FORWARD_S = 0.25
FORWARD_DISKS = 2000


#: The largest count the agents table holds (a 32-bit signed integer).
_MAX_COUNT = 2 ** 31 - 1
#: The longest reporting interval taken as one (a day); NaN is none.
_MAX_INTERVAL_S = 86400.0

Key = tuple[str, str]
#: A routed share: ``(host, batch)``, host None for known disks.
Share = tuple[str | None, batch_mod.Batch]


def _count(value: object) -> int | None:
    return value if type(value) is int and 0 <= value <= _MAX_COUNT else None


def heartbeat_report(info: dict[str, Any]) -> dict[str, Any]:
    """What the agents table keeps of a heartbeat's ``info``.

    ``version``, ``interval_s``, ``disks`` and ``caps`` (see
    :meth:`iotguard.wire.rpcapi.ControllerAPI.agent_heartbeat`); a field
    that is missing or malformed is None, the heartbeat still counts.
    """
    version, interval = info.get('version'), info.get('interval_s', 0)
    return {
        'version': version[:64] if isinstance(version, str) else None,
        'interval_s': (float(interval) if type(interval) in (int, float)
                       and 0 < interval <= _MAX_INTERVAL_S else None),
        'disks': _count(info.get('disks')),
        'caps': _count(info.get('caps')),
    }


def _owns_everything(name: str) -> bool:
    return True


class ControllerManager:
    """RPC API of iotguard-controller (:mod:`iotguard.wire.rpcapi`).

    ``owns(name) -> bool`` says whether this controller owns a domain (or
    ``agent:<host>``); the default owns everything (one controller).
    """

    target = oslo_messaging.Target(version=rpcapi.CONTROLLER_RPC_API_VERSION)

    def __init__(self, conf: cfg.ConfigOpts, db: db_api.Connection,
                 store: samples.SampleStore,
                 owns: Callable[[str], bool] = _owns_everything,
                 clock: Callable[[], float] = time.time,
                 owner_of: Callable[[str], str | None] | None = None,
                 forward: Callable[[str, list[Share]], None] | None = None,
                 index: disk_index.DiskIndex | None = None,
                 on_urgent: Callable[[dict[str, list[Key]]], None] | None = (
                     None)) -> None:
        """The endpoint; ``owner_of`` and ``forward`` route batches.

        ``owner_of(domain)``: the member id owning it (None: unknown);
        ``forward(server, batches)``: casts ``store_samples`` there. Both
        None: nothing is routed (one controller). ``index``: the disk
        index shared with membership (None: one of its own).
        ``on_urgent({domain: [key]})``: the urgent disks of a stored batch.
        """
        self.db = db
        self.index = index or disk_index.DiskIndex(db, clock)
        self.store = store
        self.owns = owns
        self.owner_of = owner_of
        self.forward = forward
        self.on_urgent = on_urgent
        self._outbox: dict[str, list[Share]] = {}   # server -> to forward
        self._outbox_disks = 0
        self._outbox_since = 0.0
        self.register_local: bool = conf.controller.register_local_disks
        self._conf = conf
        self._clock = clock
        self._lock = threading.Lock()
        # One batch at a time: decoding holds the GIL, and batches of
        # the RPC server's threads decoded side by side cost twice the CPU
        # each (python -m benchmarks.broker); heartbeats do not wait.
        self._ingest = threading.Lock()
        self.stats = {'stored': 0, 'dropped': 0, 'foreign': 0,
                      'registered': 0, 'forwarded': 0}

    # -- RPC API ------------------------------------------------------------

    def report_samples(self, ctxt: dict[str, Any], host: object,
                       samples: object) -> None:
        """One host's batch: route the other owners' shares, store ours."""
        try:
            routed = self.forward is not None
            with self._ingest:
                self._report(host, samples, route=routed)
            if routed:
                self.flush_forwards()
        except Exception:
            LOG.exception('Dropped the samples of host %.255r', host)

    def store_samples(self, ctxt: dict[str, Any], batches: object) -> None:
        """Another controller's routed shares: ``[(host, samples)]``."""
        if not isinstance(batches, list):
            LOG.error('Malformed store_samples dropped: batches must be '
                      'a list')
            return
        for item in batches:
            if not (isinstance(item, (list, tuple)) and len(item) == 2):
                LOG.error('Malformed store_samples entry dropped')
                self._count('dropped')
                continue
            try:
                with self._ingest:
                    self._report(item[0], item[1], listing=False)
            except Exception:
                LOG.exception('Dropped the routed samples of host %.255r',
                              item[0])

    def agent_heartbeat(self, ctxt: dict[str, Any], host: object,
                        info: object) -> None:
        """Record that the agent on ``host`` is alive.

        Its stamp (its batch's reading) tells this controller the host's
        clock, whichever controller its batch went to
        (:class:`~iotguard.controller.samples.Clocks`).
        """
        try:
            if not isinstance(host, str) or not host or \
                    not isinstance(info, dict):
                LOG.error('Malformed agent_heartbeat from %.255r dropped',
                          host)
                return
            stamp: Any = info.get('timestamp')
            if type(stamp) in (int, float) and math.isfinite(stamp):
                # its batch's reading: the host's clock heard here too
                self.store.clocks.observe(host, float(stamp), self._clock())
            if not self.owns('agent:' + host):
                return
            self.db.agent_heartbeat(
                host[:255], str(info.get('driver', 'unknown'))[:64],
                clock_offset_s=self.store.clocks.offset(host),
                **heartbeat_report(info))
        except Exception as exc:
            away = db_api.unreachable(exc)
            if away is None:
                LOG.exception('agent_heartbeat of %.255r failed', host)
            else:
                LOG.error('agent_heartbeat of %.255r failed: database '
                          'unreachable (%s)', host, away)

    # -- internals ----------------------------------------------------------

    def _count(self, what: str, n: int = 1) -> None:
        if n:
            with self._lock:
                self.stats[what] += n

    def _route_away(self, host: str, batch: batch_mod.Batch, keys: list[Key]
                    ) -> list[int]:
        """Queue the other owners' shares of ``batch``; the rows kept here."""
        local = (membership.ephemeral_domain(self._conf, host)[0]
                 if self.register_local else None)
        assert self.owner_of is not None    # routed: forward and owner_of
        mine = []
        away: dict[tuple[str, str | None], list[int]] = {}
        owners: dict[str, str | None] = {}
        for i, key in enumerate(keys):
            found = self.index.get(key)
            domain = found[0] if found is not None else local
            if domain is None:
                mine.append(i)      # unknown: logged and dropped here
                continue
            if domain not in owners:
                owners[domain] = (None if self.owns(domain)
                                  else self.owner_of(domain))
            owner = owners[domain]
            if owner is None:
                mine.append(i)      # ours, or no owner known: kept here
            else:
                # a known disk's share needs no host: merged with others
                away.setdefault((owner, None if found else host),
                                []).append(i)
        if away:
            with self._lock:
                if not self._outbox:
                    self._outbox_since = time.monotonic()
                for (owner, unknown_of), rows in away.items():
                    self._outbox.setdefault(owner, []).append(
                        (unknown_of, batch.take(np.array(rows,
                                                         dtype=np.intp))))
                    self._outbox_disks += len(rows)
        return mine

    def flush_forwards(self, force: bool = False) -> None:
        """Send the routed shares when due (or ``force``).

        An owner's shares of known disks go merged into one batch; those
        of disks unknown here keep their host, which may record them.
        """
        with self._lock:
            if not self._outbox or not force and (
                    self._outbox_disks < FORWARD_DISKS and
                    time.monotonic() - self._outbox_since < FORWARD_S):
                return
            outbox, self._outbox, self._outbox_disks = self._outbox, {}, 0
        assert self.forward is not None     # shares are queued to forward
        for server, shares in outbox.items():
            known = [share for host, share in shares if host is None]
            batches: list[Share] = [(host, share) for host, share in shares
                                    if host is not None]
            if known:
                batches.insert(0, (None, batch_mod.merge(known)))
            n = sum(len(share) for _host, share in batches)
            try:
                self.forward(server, batches)
            except Exception as e:
                LOG.warning('Could not route %d samples to controller %s: '
                            '%s', n, server, e)
                self._count('dropped', n)
                continue
            self._count('forwarded', n)

    def _report(self, host: object, wire: object, listing: bool = True,
                route: bool = False) -> None:
        """Check and store a batch.

        ``listing``: it lists all the host's disks (not a routed share);
        ``route``: send the other owners their shares
        (:meth:`_route_away`), once it is checked.
        """
        received = self._clock()
        if not (isinstance(host, str) and host
                or host is None and not listing):
            LOG.error('Malformed report_samples dropped: no host (%.255r)',
                      host)
            self._count('dropped')
            return
        try:
            batch = batch_mod.decode(wire)
        except exception.Invalid as e:
            LOG.error('Dropped the samples of host %.255r: %s', host, e)
            self._count('dropped')
            return
        if listing and host:
            # from the agent itself: on this controller's clock from here
            batch = self.store.clocks.correct(host, batch, received)
        keys = batch.keys()
        if route and host:
            mine = self._route_away(host, batch, keys)
            if len(mine) < len(batch):
                batch = batch.take(np.array(mine, dtype=np.intp))
        self._keep(host, batch, received)
        if listing and host:
            self.index.listed(host, keys, membership.ephemeral_domain(
                self._conf, host)[0])

    def add_batch(self, batch: batch_mod.Batch,
                  received_at: float | None = None) -> int:
        """The sink of Ceilometer and Gnocchi; how many disks were stored.

        Only the disks the index knows, in domains owned here, are kept
        (no registration).
        """
        with self._ingest:
            return self._keep(None, batch, received_at)

    def _keep(self, host: str | None, batch: batch_mod.Batch,
              received: float | None) -> int:
        """Store the disks of ``batch`` this controller owns; how many."""
        owned: dict[str, bool] = {}
        keep = [i for i, key in enumerate(batch.keys())
                if self._route(key, host, batch.volume_id[i],
                               batch.project_id[i], owned)]
        if len(keep) < len(batch):
            batch = batch.take(np.array(keep, dtype=np.intp))
        keys = batch.keys()
        now = self._clock() if received is None else received
        # had a sample to act on before this batch (the urgent check)
        fresh = (self.store.fresh(keys, now) if keep and self.on_urgent
                 is not None else None)
        stored = self.store.add_batch(batch, received) if keep else 0
        self._count('stored', stored)
        self._count('dropped', len(keep) - stored)
        if stored and fresh is not None and self.on_urgent is not None:
            rows = set(batch.urgent_rows()) | set(np.flatnonzero(
                ~fresh & self.store.fresh(keys, now)).tolist())
            urgent: dict[str, list[Key]] = {}
            for i in sorted(rows):
                found = self.index.get(keys[i])
                if found is not None:
                    urgent.setdefault(found[0], []).append(keys[i])
            if urgent:
                self.on_urgent(urgent)
        return stored

    def _route(self, key: Key, host: str | None, volume_id: str | None,
               project_id: str | None, owned: dict[str, bool]) -> bool:
        """Whether ``key``'s sample is kept here; ``owned`` caches owns()."""
        found = self.index.get(key)
        if found is None:
            domain = self._register(host, key, volume_id, project_id)
            if domain is None:
                return False
        else:
            domain = found[0]
        mine = owned.get(domain)
        if mine is None:
            mine = owned[domain] = self.owns(domain)
        if not mine:
            self._count('foreign')
        return mine

    def _register(self, host: str | None, key: Key, volume_id: str | None,
                  project_id: str | None) -> str | None:
        """Record an unknown image-backed disk of ``host``; its domain."""
        domain, kind = membership.ephemeral_domain(self._conf, host or '')
        if (not self.register_local or not host or volume_id
                or not project_id or not self.owns(domain)):
            if self.index.missed(key):
                LOG.info('Sample of unknown disk %s/%s from %s dropped '
                         '(membership does not know it yet)', key[0],
                         key[1], host or 'a source')
            self._count('dropped')
            return None
        try:
            self.index.upsert(key[0], key[1], host, domain, kind, project_id)
        except Exception as e:
            LOG.warning('Could not record disk %s/%s of %s: %s', key[0],
                        key[1], host, e)
            self._count('dropped')
            return None
        LOG.info('Recorded disk %s/%s of %s in domain %s', key[0], key[1],
                 host, domain)
        self._count('registered')
        return domain
