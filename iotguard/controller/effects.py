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

"""What a domain's round does once decided: casts, records, notifications.

* **act**: per host one ``apply_caps`` cast with the new or changed caps
  and the renewals due (:func:`iotguard.engine.plan.renew_due`), each
  leased until ``now + [controller] lease_seconds`` (this controller's
  clock; :class:`~iotguard.wire.rpcapi.AgentAPI` sends it on the host's,
  :meth:`iotguard.controller.samples.Clocks.lease_offset`), and one
  ``release_caps`` cast with the releases; which decisions are carried out
  is :func:`iotguard.engine.plan.plan`'s (the simulator's too).
* **record**: every cap and release carried out is one row of the
  ``decisions`` table (domain, policy, disk, project, the policy's reason,
  the numbers it saw and computed, the limits before and after), written
  before anything is sent; once sent, the caps in force are written and
  ``iotguard.cap.apply`` / ``iotguard.cap.release`` notified. One
  transaction per step and domain round; the renewals and the rates for
  the API once per round, for all its domains (:meth:`Effects.flush`).
* **notify** ``iotguard.guarantee.violation`` when a disk starts to fall
  below its floor with unmet demand, and the loop's overcommit verdicts.
"""

import collections
from collections.abc import Mapping
import dataclasses
import datetime
import math
from typing import Any
import zlib

import numpy as np
from oslo_config import cfg
from oslo_log import log as logging

from iotguard.controller import notifications
from iotguard.controller import record as record_mod
from iotguard.db import api as db_api
from iotguard.db import caps as db_caps
from iotguard.db import disks as db_disks
from iotguard.engine import plan as plan_mod
from iotguard import metrics
from iotguard.policy import base
from iotguard.policy import guarantee
from iotguard.wire import caps
from iotguard.wire import rpcapi

LOG = logging.getLogger(__name__)

#: A disk below (1 - this) x its floor is below its floor.
FLOOR_TOLERANCE = 0.05
#: How often the records' minutes past the retention are deleted.
PURGE_EVERY_S = 3600.0

Member = db_disks.Member
InForce = db_caps.InForce
#: A decision carried out: ``(disk, decision, decision id, old limits)``.
Record = tuple[Member, base.Decision, int, Mapping[str, int]]
#: What a round left: each disk's cap (None: none), the new caps' reasons.
Capped = tuple[list[caps.Limits | None], dict[int, str]]


@dataclasses.dataclass
class RoundResult:
    """What one round of one domain did (for logs, tests and the bench)."""

    domain: str
    disks: int = 0
    stale: int = 0
    decisions: int = 0
    applied: int = 0
    released: int = 0
    renewed: int = 0
    dropped: int = 0
    casts: int = 0
    violations: int = 0
    #: fresh disks with a floor, and the domain's load (of its capacity)
    floored: int = 0
    load: float | None = None
    #: the overcommit verdict, on the rounds that judge it (loop._judge)
    committed: float | None = None
    overcommitted: bool | None = None
    skipped: str | None = None
    #: each disk's round ([prometheus] per_disk_series), else None
    per_disk: list[metrics.DiskRound] | None = None


@dataclasses.dataclass
class Writes:
    """What a round writes once all its domains went through it."""

    renewed: list[int] = dataclasses.field(default_factory=list)  # disk ids
    renewing: list[RoundResult] = dataclasses.field(default_factory=list)
    rates: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    #: what the domains' policies remember, by domain (written by the loop)
    policy_states: dict[str, dict[str, Any]] = dataclasses.field(
        default_factory=dict)


def to_datetime(timestamp: float) -> datetime.datetime:
    """UNIX seconds -> the naive UTC datetime the DB columns hold."""
    return datetime.datetime.fromtimestamp(
        timestamp, datetime.timezone.utc).replace(tzinfo=None)


def to_timestamp(value: datetime.datetime) -> float:
    """A naive UTC datetime from the DB -> UNIX seconds."""
    return value.replace(tzinfo=datetime.timezone.utc).timestamp()


def cap_of(instance_uuid: str, dev: str, limits: Mapping[str, int],
           lease_expires_at: float, decision_id: int | None,
           lift: bool = False) -> caps.Cap:
    """The :class:`iotguard.wire.caps.Cap` on a disk."""
    return caps.Cap(instance_uuid, dev, limits, lease_expires_at,
                    str(decision_id) if decision_id is not None else None,
                    lift)


def rates_offset(name: str, interval_s: float) -> float:
    """Where, within each ``interval_s``, a domain writes its rates.

    Spread by the domain's name, so that the domains of a controller do
    not all write in the same round (not even the first one).
    """
    return (zlib.crc32(name.encode()) % 1000) / 1000.0 * interval_s


def violations(snapshot: base.DomainSnapshot, latency_ms: float
               ) -> tuple[base.BoolArray, base.FloatArray, base.FloatArray]:
    """Which disks are below their floor with unmet demand (bool array).

    Fresh disks only: below ``1 - FLOOR_TOLERANCE`` of their floor (as
    the guarantee policy loads it, :class:`~iotguard.policy.guarantee.Loads`),
    operations slower than ``latency_ms`` and, by Little's law, always busy
    (the guarantee policy's default ``busy_depth``).
    """
    snap = snapshot
    loads = guarantee.Loads.of(snap)
    busy = (snap.iops * snap.latency_ms / 1000.0
            >= guarantee.DEFAULTS['busy_depth'])
    result = (~snap.stale & (loads.floor > 0)
              & (loads.u < loads.floor * (1.0 - FLOOR_TOLERANCE))
              & (snap.latency_ms > latency_ms) & busy)
    return result, loads.u, loads.floor


def _value(number: float) -> float | None:
    """A column's value as the database takes it (None for nan)."""
    return None if math.isnan(number) else float(number)


class Effects:
    """Carries out and records the rounds of the domains a controller owns."""

    def __init__(self, conf: cfg.ConfigOpts, db: db_api.Connection,
                 agent_api: rpcapi.AgentAPI,
                 notifier: notifications.Notifier) -> None:
        self.interval_s: float = conf.controller.decision_interval
        self.lease_s: float = conf.controller.lease_seconds
        self.violation_latency_ms = conf.controller.violation_latency_ms
        self.rates_write_s = conf.controller.rates_write_interval
        if self.lease_s < 2 * self.interval_s:
            LOG.warning('[controller] lease_seconds (%.1f) is below two '
                        'decision intervals (%.1f s): one late round lets '
                        'caps lapse', self.lease_s, 2 * self.interval_s)
        self.db = db
        self.agent_api = agent_api
        self.notifier = notifier
        # by domain name:
        self._violating: dict[str, set[str]] = {}   # disk ids
        self._rates_slot: dict[str, int] = {}   # rates_write_interval slot
        self.recorder = record_mod.Recorder(self.interval_s)
        self.record_keep_s = conf.controller.record_retention * 3600.0
        self.per_disk_series: bool = conf.prometheus.per_disk_series
        self._purged_at = 0.0

    def forget(self, name: str) -> None:
        self._violating.pop(name, None)
        self._rates_slot.pop(name, None)

    # -- act and record -----------------------------------------------------

    def act(self, name: str, policy_name: str, disks: list[Member],
            in_force: list[InForce | None], snapshot: base.DomainSnapshot,
            decisions: list[base.Decision], now: float, result: RoundResult,
            writes: Writes) -> Capped:
        """Plan the decisions, record the changes, cast them per host.

        The renewals sent are written to the database by :meth:`flush`.
        Returns each disk's cap after the round (None: uncapped) and, for
        the caps set or changed, the reason their tenant reads
        (:mod:`iotguard.controller.record`).
        """
        plan = plan_mod.plan(snapshot, decisions, in_force, now,
                             self.lease_s, self.interval_s)
        for unknown in plan.unknown:
            LOG.warning('Policy %s decided on unknown disk %s; ignored',
                        policy_name, unknown)
        for decision in plan.dropped:
            LOG.warning('Dropped %s on %s: its samples are stale, a cap '
                        'is never tightened on stale data',
                        decision.reason, decision.disk_id)
        result.dropped += len(plan.dropped)
        olds = [c.limits if c else {} for c in in_force]
        after: list[caps.Limits | None] = [
            c.limits if c else None for c in in_force]
        reasons = {}
        for c in plan.changes:
            after[c.disk] = c.limits
            if c.limits is not None:
                reasons[c.disk] = record_mod.cap_reason(
                    olds[c.disk], c.limits, snapshot.iops[c.disk],
                    snapshot.bytes_sec[c.disk])
        ids = self.db.decisions_create([{
            'domain': name, 'policy': policy_name,
            'instance_uuid': disks[c.disk].instance_uuid,
            'dev': disks[c.disk].dev,
            'project_id': disks[c.disk].project_id,
            'action': c.decision.action, 'old_limits': olds[c.disk],
            'new_limits': c.limits or {}, 'reason': c.decision.reason,
            'numbers': c.decision.numbers, 'created_at': to_datetime(now)}
            for c in plan.changes]) if plan.changes else []
        lease = now + self.lease_s
        # by host: new caps and renewals (with the disk's row id), releases
        sends: dict[str, list[tuple[caps.Cap, Record | int]]] = (
            collections.defaultdict(list))
        releases: dict[str, list[tuple[caps.Disk, Record]]] = (
            collections.defaultdict(list))
        for change, decision_id in zip(plan.changes, ids):
            disk = disks[change.disk]
            record: Record = (disk, change.decision, decision_id,
                              olds[change.disk])
            if change.limits is None:
                releases[disk.host].append(
                    (caps.Disk(disk.instance_uuid, disk.dev), record))
            else:
                sends[disk.host].append((cap_of(
                    disk.instance_uuid, disk.dev, change.limits, lease,
                    decision_id, change.decision.lift), record))
        for i in plan.renewals:
            disk, held = disks[i], in_force[i]
            assert held is not None    # renewals are of caps in force
            sends[disk.host].append((cap_of(
                disk.instance_uuid, disk.dev, held.limits, lease,
                held.decision_id), disk.id))
        applied: list[tuple[caps.Cap, Record]] = []
        renewed: list[int] = []
        ctxt: dict[str, Any] = {}
        for host, items in sends.items():
            try:
                self.agent_api.apply_caps(
                    ctxt, host, [c.to_wire() for c, _ in items])
            except Exception as e:
                LOG.error('apply_caps to %s failed (%s); its caps are sent '
                          'again next round', host, e)
                continue
            result.casts += 1
            for cap, what in items:
                if isinstance(what, int):
                    renewed.append(what)
                else:
                    applied.append((cap, what))
        released: list[Record] = []
        for host, gone in releases.items():
            try:
                self.agent_api.release_caps(
                    ctxt, host, [d.to_wire() for d, _ in gone])
            except Exception as e:
                LOG.error('release_caps to %s failed (%s); tried again next '
                          'round', host, e)
                continue
            result.casts += 1
            released.extend(record for _disk, record in gone)
        if applied:
            self.db.caps_set([{
                'instance_uuid': cap.instance_uuid, 'dev': cap.dev,
                'limits': cap.limits, 'decision_id': record[2],
                'lease_expires_at': to_datetime(cap.lease_expires_at)}
                for cap, record in applied])
            for cap, record in applied:
                self.notifier.cap_apply(dict(
                    self._payload(name, policy_name, record),
                    limits=dict(cap.limits),
                    lease_expires_at=cap.lease_expires_at))
            result.applied = len(applied)
        if released:
            self.db.caps_release([(record[0].instance_uuid, record[0].dev)
                                  for record in released])
            for record in released:
                self.notifier.cap_release(
                    self._payload(name, policy_name, record))
            result.released = len(released)
        if renewed:
            writes.renewed.extend(renewed)
            writes.renewing.append(result)
            result.renewed = len(renewed)
        return after, reasons

    @staticmethod
    def _payload(domain: str, policy: str, record: Record) -> dict[str, Any]:
        disk, decision, decision_id, old_limits = record
        return {'domain': domain, 'policy': policy,
                'instance_uuid': disk.instance_uuid, 'dev': disk.dev,
                'host': disk.host, 'project_id': disk.project_id,
                'decision_id': decision_id, 'reason': decision.reason,
                'old_limits': old_limits, 'numbers': decision.numbers}

    def write_rates(self, name: str, disks: list[Member],
                    snapshot: base.DomainSnapshot,
                    columns: base.SampleColumns, now: float,
                    writes: Writes) -> None:
        """Every rates_write_interval: the fresh rates, for the API."""
        if not self.rates_write_s:
            return
        slot = math.floor((now - rates_offset(name, self.rates_write_s))
                          / self.rates_write_s)
        if self._rates_slot.setdefault(name, slot) == slot:
            return   # written in this slot, or first seen in it
        self._rates_slot[name] = slot
        c = columns
        for i in np.flatnonzero(~c.stale):
            writes.rates.append({
                'id': disks[i].id,
                'sampled_at': to_datetime(float(c.timestamp[i])),
                'read_iops': _value(c.read_iops[i]),
                'write_iops': _value(c.write_iops[i]),
                'read_bytes_sec': _value(c.read_bytes_sec[i]),
                'write_bytes_sec': _value(c.write_bytes_sec[i]),
                'latency_ms': float(snapshot.latency_ms[i]),
                # NULL where the agent measured none: never the mean
                'latency_p99_ms': (None if c.p99_ms is None
                                   else _value(c.p99_ms[i]))})

    def flush(self, writes: Writes, now: float) -> None:
        """Write a round's renewals and rates (each logged on failure)."""
        if writes.renewed:
            try:
                self.db.caps_renew(writes.renewed,
                                   to_datetime(now + self.lease_s))
            except Exception:
                LOG.exception('Could not record the renewal of %d caps; the '
                              'agents have them, the next round renews them '
                              'again', len(writes.renewed))
                for result in writes.renewing:
                    result.renewed = 0
        if writes.rates:
            try:
                self.db.disk_rates_bulk_update(writes.rates)
            except Exception:
                LOG.exception('Could not write the rates of %d disks',
                              len(writes.rates))
        minutes = self.recorder.closed(now)
        try:
            if minutes:
                self.db.disk_minutes_add(minutes)
            if now - self._purged_at >= PURGE_EVERY_S:
                self._purged_at = now
                self.db.disk_minutes_purge(to_datetime(
                    now - self.record_keep_s))
        except Exception:
            LOG.exception('Could not write %d minutes of the disks\' '
                          'records', len(minutes))

    # -- notify -------------------------------------------------------------

    def violations(self, name: str, disks: list[Member],
                   snapshot: base.DomainSnapshot, now: float,
                   result: RoundResult, capped: Capped) -> None:
        """Notify the guarantees that start to be violated now.

        ``capped``: what :meth:`act` returned; with the violations it
        goes into the disks' records.
        """
        violated, load, floor = violations(snapshot,
                                           self.violation_latency_ms)
        self.recorder.add(disks, snapshot, violated, floor, *capped, now)
        if self.per_disk_series:
            result.per_disk = record_mod.disk_rounds(
                snapshot, violated, floor, capped[0], self.interval_s)
        fresh = ~snapshot.stale
        result.floored = int((fresh & (floor > 0)).sum())
        result.load = float(np.nansum(load[fresh]))
        before = self._violating.get(name, set())
        now_violating = set()
        for i in np.flatnonzero(violated):
            key = snapshot.disk_ids[i]
            now_violating.add(key)
            if key in before:
                continue
            disk = disks[i]
            numbers = base.audit_numbers(
                load=load[i], floor=floor[i], iops=snapshot.iops[i],
                bytes_sec=snapshot.bytes_sec[i],
                latency_ms=snapshot.latency_ms[i])
            LOG.warning('Guarantee violated on %s in domain %s: %s', key,
                        name, numbers)
            self.notifier.guarantee_violation({
                'domain': name, 'instance_uuid': disk.instance_uuid,
                'dev': disk.dev, 'host': disk.host,
                'project_id': disk.project_id,
                'tier': disk.tier.name if disk.tier else None,
                'since': now, 'numbers': numbers})
        self._violating[name] = now_violating
        result.violations = len(now_violating)

    def overcommit(self, domain: str, overcommitted: bool,
                   numbers: dict[str, Any]) -> None:
        """A domain's floors start, or stop, to exceed its learned capacity."""
        if overcommitted:
            LOG.warning('Domain %s is overcommitted: its floors cost %.3f of '
                        'the learned capacity (max_commit_ratio %.2f; %.3f '
                        'with the profile in use, confidence %.2f); nothing '
                        'is changed, the admin decides', domain,
                        numbers['committed_learned'],
                        numbers['max_commit_ratio'],
                        numbers['committed'] or 0.0, numbers['confidence'])
            self.notifier.domain_overcommitted(dict(numbers, domain=domain))
        else:
            LOG.info('Domain %s is no longer overcommitted: its floors cost '
                     '%.3f of the learned capacity', domain,
                     numbers['committed_learned'])
            self.notifier.domain_overcommit_cleared(
                dict(numbers, domain=domain))
