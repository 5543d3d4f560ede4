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

"""The decision loop: collect -> decide -> act -> record, per domain.

Level-based (every round recomputes from the current state, nothing is
carried over that the DB and the sample store do not hold), so any
controller can take over a domain at any round:

* **collect**: the domain's disks, their tiers and caps in force from the
  DB (:meth:`DomainLoop.run` reads every owned domain at once, and reads
  the disks and tiers again only when the database says they changed; the
  caps in force every round), the newest sample of each disk from the
  :class:`SampleStore`'s columns. A disk with no sample, a sample without
  rates (gap) or a stale one is flagged ``stale``: the policy may release
  or loosen its cap, never tighten it (and the loop drops any decision
  that would).
* **decide**: the domain's policy (``domain.policy`` with its ``params``,
  else ``[controller] default_policy``) on the columnar snapshot. Not in
  the first round after a start or a takeover when every disk is still
  stale (no sample heard yet): that round only renews the caps in force.
* **act**: per host one ``apply_caps`` cast with the new or changed caps
  and the renewals of the caps in force (each with
  ``lease_expires_at = now + [controller] lease_seconds``), and one
  ``release_caps`` cast with the releases. Unchanged caps are not sent
  again until their renewal is due (every round, see
  :func:`iotguard.engine.plan.renew_due`); which decisions are carried
  out is :func:`iotguard.engine.plan.plan`'s, the simulator's too.
* **record**: each decision in the audit trail before it is sent, the
  caps in force after (the renewals and the rates for the API once per
  round, for all its domains), notifications ``iotguard.cap.apply`` /
  ``iotguard.cap.release``, and ``iotguard.guarantee.violation`` when a
  disk falls below its floor with unmet demand.
* **learn**: the round fed to the domain's capacity estimator; when a fit
  is written, ``iotguard.domain.overcommitted`` /
  ``iotguard.domain.overcommit_cleared`` when the floors admitted stop /
  start again to fit in what the storage was learned to serve
  (:func:`iotguard.policy.admission.overcommit`; report only).

One domain failing (DB, policy, messaging) is logged and the others go on;
its caps are then not renewed and lapse at their lease, back to the
static limits.
"""

import collections
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import json
import math
import time
from typing import Any
import zlib

import numpy as np
from oslo_config import cfg
from oslo_log import log as logging

from iotguard.controller import audit as audit_mod
from iotguard.controller import samples
from iotguard.db import api as db_api
from iotguard.db import caps as db_caps
from iotguard.db import disks as db_disks
from iotguard.engine import plan as plan_mod
from iotguard import policy as policy_mod
from iotguard.policy import admission
from iotguard.policy import base
from iotguard.policy import costmodel
from iotguard.policy import estimator
from iotguard.policy import guarantee
from iotguard.wire import caps
from iotguard.wire import rpcapi

LOG = logging.getLogger(__name__)

#: A disk below (1 - this) x its floor is below its floor.
FLOOR_TOLERANCE = 0.05
#: The disks of a round's domains are read in full at least this often
#: (seconds), whatever the database's disks version says.
FULL_READ_S = 60.0
_NO_TIER = base.Tier(name='')
#: Rounds between two writes of a domain's learned profile and estimator
#: state (a minute at the default 5 s).
LEARN_WRITE_ROUNDS = 12

Member = db_disks.Member
InForce = db_caps.InForce
#: By host, what a round sends: new caps, renewals, releases.
Applies = dict[str, list[tuple[caps.Cap, audit_mod.Record]]]
Renewals = dict[str, list[tuple[caps.Cap, int]]]   # with the disk's row id
Releases = dict[str, list[tuple[caps.Disk, audit_mod.Record]]]


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
    skipped: str | None = None


def disk_id(disk: Member) -> str:
    return '%s/%s' % (disk.instance_uuid, disk.dev)


def snapshot_of(domain: dict[str, Any], interval_s: float,
                disks: Sequence[Member], in_force: Sequence[InForce | None],
                columns: base.SampleColumns) -> base.DomainSnapshot:
    """The columnar snapshot of a domain's disks and their samples.

    ``disks``: the domain's :class:`iotguard.db.disks.Member` records;
    ``in_force``: the cap in force on each (an
    :class:`iotguard.db.caps.InForce` or None); ``columns``: their samples
    (:meth:`SampleStore.gather`), all in the same order. A stale disk keeps
    the rates its last sample had (0 where none), flagged ``stale``.
    Built by :meth:`iotguard.policy.base.DomainSnapshot.of_samples`, as
    the simulator's.
    """
    profile = admission.profile_of(domain)
    assert profile is not None    # a round runs on calibrated domains only
    tiers = [d.tier or _NO_TIER for d in disks]
    cap_iops = np.full(len(disks), math.inf)
    cap_bytes_sec = np.full(len(disks), math.inf)
    cap_set_at = np.full(len(disks), math.nan)
    for i, cap in enumerate(in_force):
        if cap is not None:
            cap_iops[i] = caps.limit(cap.limits, 'total_iops_sec')
            cap_bytes_sec[i] = caps.limit(cap.limits, 'total_bytes_sec')
            if cap.set_at is not None:
                cap_set_at[i] = cap.set_at
    return base.DomainSnapshot.of_samples(
        domain['name'], profile, interval_s,
        tuple(disk_id(d) for d in disks), tiers, columns, cap_iops,
        cap_bytes_sec, cap_set_at)


def violations(snapshot: base.DomainSnapshot, latency_ms: float
               ) -> tuple[base.BoolArray, base.FloatArray, base.FloatArray]:
    """Which disks are below their floor with unmet demand (bool array).

    Fresh disks only: below ``1 - FLOOR_TOLERANCE`` of their floor
    (:func:`iotguard.policy.guarantee.floor_and_ceiling`), operations
    slower than ``latency_ms`` and, by Little's law, always busy (the
    guarantee policy's default ``busy_depth``).
    """
    snap = snapshot
    size = costmodel.mean_io_size(snap.iops, snap.bytes_sec)
    load = costmodel.load(snap.iops, snap.bytes_sec, snap.profile)
    floor, _ceiling = guarantee.floor_and_ceiling(
        snap, size, costmodel.op_cost(size, snap.profile))
    busy = (snap.iops * snap.latency_ms / 1000.0
            >= guarantee.DEFAULTS['busy_depth'])
    result = (~snap.stale & (floor > 0)
              & (load < floor * (1.0 - FLOOR_TOLERANCE))
              & (snap.latency_ms > latency_ms) & busy)
    return result, load, floor


def rates_offset(name: str, interval_s: float) -> float:
    """Where, within each ``interval_s``, a domain writes its rates.

    Spread by the domain's name, so that the domains of a controller do
    not all write in the same round (not even the first one).
    """
    return (zlib.crc32(name.encode()) % 1000) / 1000.0 * interval_s


def cap_of(instance_uuid: str, dev: str, limits: Mapping[str, int],
           lease_expires_at: float, decision_id: int | None) -> caps.Cap:
    """The :class:`iotguard.wire.caps.Cap` on a disk."""
    return caps.Cap(instance_uuid, dev, limits, lease_expires_at,
                    str(decision_id) if decision_id is not None else None)


def _calibrated(domain: dict[str, Any]) -> bool:
    return admission.profile_of(domain) is not None


def _value(number: float) -> float | None:
    """A column's value as the database takes it (None for nan)."""
    return None if math.isnan(number) else float(number)


@dataclasses.dataclass
class _Writes:
    """What a round writes once all its domains went through it."""

    renewed: list[int] = dataclasses.field(default_factory=list)  # disk ids
    renewing: list[RoundResult] = dataclasses.field(default_factory=list)
    rates: list[dict[str, Any]] = dataclasses.field(default_factory=list)


class DomainLoop:
    """Runs the rounds of the domains a controller owns.

    ``db`` is :class:`iotguard.db.api.Connection`, ``store`` the
    :class:`~iotguard.controller.samples.SampleStore`, ``agent_api``
    :class:`iotguard.wire.rpcapi.AgentAPI` and ``audit``
    :class:`~iotguard.controller.audit.Audit`. No I/O in the constructor.
    """

    def __init__(self, conf: cfg.ConfigOpts, db: db_api.Connection,
                 store: samples.SampleStore, agent_api: rpcapi.AgentAPI,
                 audit: audit_mod.Audit,
                 clock: Callable[[], float] = time.time,
                 load_policy: Callable[..., base.Policy] = policy_mod.load
                 ) -> None:
        self.interval_s: float = conf.controller.decision_interval
        self.lease_s: float = conf.controller.lease_seconds
        self.default_policy = conf.controller.default_policy
        self.violation_latency_ms = conf.controller.violation_latency_ms
        self.rates_write_s = conf.controller.rates_write_interval
        if self.lease_s < 2 * self.interval_s:
            LOG.warning('[controller] lease_seconds (%.1f) is below two '
                        'decision intervals (%.1f s): one late round lets '
                        'caps lapse', self.lease_s, 2 * self.interval_s)
        self.db = db
        self.store = store
        self.agent_api = agent_api
        self.audit = audit
        self._clock = clock
        self._load_policy = load_policy
        # (domains, disks version, read at, their disks) of the last read
        self._views: tuple[tuple[str, ...], object, float,
                           dict[str, list[Member]]] | None = None
        # by domain name:
        self._policies: dict[str, tuple[tuple[str, str], base.Policy]] = {}
        self._violating: dict[str, set[str]] = {}   # disk ids
        self._uncalibrated: set[str] = set()
        self._rates_slot: dict[str, int] = {}   # rates_write_interval slot
        self._seen: dict[str, float] = {}       # first round here
        self._learning: dict[str, estimator.State] = {}
        self._learned_rounds: collections.Counter[str] = collections.Counter()
        self._overcommitted: dict[str, bool] = {}   # last verdict given
        self.max_commit_ratio: float = conf.admission.max_commit_ratio

    # -- the rounds ---------------------------------------------------------

    def run(self, domains: Sequence[dict[str, Any]], now: float | None = None
            ) -> list[RoundResult]:
        """One round of every domain in ``domains``; failures are logged.

        The domains' disks are read at once, and the round's renewals and
        rates are written at its end, one transaction each.
        """
        now = self._clock() if now is None else now
        try:
            self.db.cap_delete_expired(audit_mod.to_datetime(now))
        except Exception:
            LOG.exception('Could not drop the lapsed caps')
        views: dict[str, list[Member]] = {}
        in_force: dict[int, InForce] | None = None
        calibrated = [d['name'] for d in domains if _calibrated(d)]
        try:
            views, in_force = self._disks(calibrated, now)
        except Exception as e:
            self._views = None
            LOG.warning('Could not read the disks of %d domains at once (%s); '
                        'reading them domain by domain', len(calibrated), e)
        writes = _Writes()
        results = []
        for domain in domains:
            try:
                results.append(self.run_once(domain, now,
                                             views.get(domain['name']),
                                             writes, in_force))
            except Exception:
                LOG.exception('Decision round of domain %s failed; its caps '
                              'lapse unless a later round renews them',
                              domain.get('name'))
        self._flush(writes, now)
        self.store.prune(now)
        return results

    def _disks(self, names: list[str], now: float
               ) -> tuple[dict[str, list[Member]], dict[int, InForce]]:
        """The disks of the domains ``names`` and their caps, for a round.

        ``({name: [Member]}, {disk id: InForce})``. The disks are read
        again when they or their tiers changed
        (:meth:`~iotguard.db.api.Connection.disks_version`), when the set
        of domains did, and at least every ``FULL_READ_S``; the caps in
        force every round.
        """
        version = self.db.disks_version()
        key = tuple(sorted(names))
        cached = self._views
        if (cached is None or cached[0] != key or cached[1] != version
                or now - cached[2] >= FULL_READ_S or now < cached[2]):
            cached = self._views = (key, version, now,
                                    self.db.domains_disks(names))
        return cached[3], self.db.domains_caps(names)

    def _flush(self, writes: _Writes, now: float) -> None:
        """Write a round's renewals and rates (each logged on failure)."""
        if writes.renewed:
            try:
                self.db.caps_renew(writes.renewed, audit_mod.to_datetime(
                    now + self.lease_s))
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

    def forget(self, names: Iterable[str]) -> None:
        """Drop per-domain state of domains no longer owned."""
        for name in names:
            self._policies.pop(name, None)
            self._violating.pop(name, None)
            self._rates_slot.pop(name, None)
            self._seen.pop(name, None)
            self._learning.pop(name, None)
            self._learned_rounds.pop(name, None)
            self._overcommitted.pop(name, None)

    def run_once(self, domain: dict[str, Any], now: float,
                 disks: list[Member] | None = None,
                 writes: _Writes | None = None,
                 in_force: Mapping[int, InForce] | None = None
                 ) -> RoundResult:
        """collect -> decide -> act -> record for one domain.

        ``disks`` and ``in_force``: the domain's disks and the round's caps
        in force when already read (else read here); ``writes``: where
        :meth:`run` gathers the round's writes (else they are written
        before this returns).
        """
        name = domain['name']
        result = RoundResult(domain=name)
        if not _calibrated(domain):
            result.skipped = 'no capacity profile'
            if name not in self._uncalibrated:   # once, not every round
                self._uncalibrated.add(name)
                LOG.warning('Domain %s has no capacity profile; nothing is '
                            'decided for it until it has one '
                            '(iotguard-manage domain calibrate)', name)
            return result
        self._uncalibrated.discard(name)
        policy_name, policy = self._policy(domain)
        disks, caps_, snapshot, columns = self.collect(domain, now, disks,
                                                       in_force)
        result.disks, result.stale = len(disks), int(snapshot.stale.sum())
        first_seen = self._seen.setdefault(name, now)
        if disks and snapshot.stale.all() and \
                now - first_seen < self.interval_s:
            # Just started or taken over: this controller has heard no
            # sample of the domain yet. Renew what is in force, decide
            # from the next round on (nothing is loosened blindly).
            decisions: list[base.Decision] = []
            result.skipped = 'warming up'
        else:
            decisions = policy.decide(snapshot, now) if disks else []
            if disks:
                self._learn(domain, snapshot, disks)
        result.decisions = len(decisions)
        alone = writes is None
        writes = writes or _Writes()
        self._act(name, policy_name, disks, caps_, snapshot, decisions, now,
                  result, writes)
        self._violations(name, disks, snapshot, now, result)
        self._write_rates(name, disks, snapshot, columns, now, writes)
        if alone:
            self._flush(writes, now)
        LOG.debug('Round of %s: %s', name, result)
        return result

    def _learn(self, domain: dict[str, Any], snapshot: base.DomainSnapshot,
               disks: list[Member]) -> None:
        """Feed the round to the domain's capacity estimator.

        Its state is read from the database when this controller first
        runs the domain; state and fit are written every
        ``LEARN_WRITE_ROUNDS`` rounds, and the floors of ``disks`` are
        then judged against the new fit (:meth:`_judge`). A failure is
        logged: learning never stops a round.
        """
        name = domain['name']
        try:
            state = self._learning.get(name)
            if state is None:
                state = self._learning[name] = estimator.State.from_dict(
                    self.db.domain_estimator_state(name) or {})
            prior = admission.manual_profile(domain)
            estimator.observe_snapshot(state, snapshot, snapshot.profile,
                                       prior)
            self._learned_rounds[name] += 1
            if self._learned_rounds[name] >= LEARN_WRITE_ROUNDS:
                self._learned_rounds[name] = 0
                fit = estimator.fit(state, prior)
                self.db.domain_learned(
                    name, fit.to_dict() if fit else None, state.to_dict())
                if fit is not None:
                    LOG.debug('Domain %s learned %s', name, fit)
                self._judge(domain, disks, fit)
        except Exception:
            LOG.exception('Could not learn the capacity of domain %s', name)

    def _judge(self, domain: dict[str, Any], disks: list[Member],
               fit: estimator.Fit | None) -> None:
        """Report floors admitted beyond what the storage was learned to do.

        :func:`iotguard.policy.admission.overcommit` on the domain's tiers, the
        profile in use and ``fit``; ``iotguard.domain.overcommitted`` (and
        a warning) when the domain becomes overcommitted,
        ``iotguard.domain.overcommit_cleared`` when it no longer is. While
        the fit gives no verdict the last one stands. Report only: no tier
        is changed, nothing refused.
        """
        name = domain['name']
        verdict = admission.overcommit(
            [d.tier for d in disks if d.tier],
            admission.profile_of(domain), fit, self.max_commit_ratio)
        if verdict.overcommitted is None:
            return
        was = self._overcommitted.get(name, False)
        self._overcommitted[name] = verdict.overcommitted
        if verdict.overcommitted and not was:
            self.audit.overcommitted(name, verdict.to_dict())
        elif was and not verdict.overcommitted:
            self.audit.overcommit_cleared(name, verdict.to_dict())

    # -- collect ------------------------------------------------------------

    def collect(self, domain: dict[str, Any], now: float,
                disks: list[Member] | None = None,
                in_force: Mapping[int, InForce] | None = None
                ) -> tuple[list[Member], list[InForce | None],
                           base.DomainSnapshot, base.SampleColumns]:
        """The domain's disks, their caps in force, snapshot and columns.

        ``disks`` and ``in_force`` (``{disk id: InForce}``) are read here
        unless given; a cap whose lease lapsed is not in force (the agent
        restored the static limits).
        """
        if disks is None:
            disks = self.db.domain_disks(domain['name'])
        if in_force is None:
            in_force = self.db.domains_caps([domain['name']])
        caps_ = [in_force.get(d.id) for d in disks]
        caps_ = [c if c is None or c.lease_expires_at > now else None
                 for c in caps_]
        columns = self.store.gather(
            [(d.instance_uuid, d.dev) for d in disks], now)
        return disks, caps_, snapshot_of(domain, self.interval_s, disks,
                                         caps_, columns), columns

    # -- decide -------------------------------------------------------------

    def _policy(self, domain: dict[str, Any]) -> tuple[str, base.Policy]:
        name = domain.get('policy') or self.default_policy
        params = domain.get('params') or {}
        key = (name, json.dumps(params, sort_keys=True))
        cached = self._policies.get(domain['name'])
        if cached is None or cached[0] != key:
            cached = (key, self._load_policy(name, **params))
            self._policies[domain['name']] = cached
        return name, cached[1]

    # -- act and record -----------------------------------------------------

    def _act(self, name: str, policy_name: str, disks: list[Member],
             in_force: list[InForce | None], snapshot: base.DomainSnapshot,
             decisions: list[base.Decision], now: float, result: RoundResult,
             writes: _Writes) -> None:
        """Plan the decisions, audit the changes, cast them per host."""
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
        ids = self.audit.decisions(
            name, policy_name, [(disks[c.disk], c, olds[c.disk])
                                for c in plan.changes],
            now) if plan.changes else []
        lease = now + self.lease_s
        applies: Applies = collections.defaultdict(list)
        renewals: Renewals = collections.defaultdict(list)
        releases: Releases = collections.defaultdict(list)
        for change, decision_id in zip(plan.changes, ids):
            disk = disks[change.disk]
            record = (disk, change.decision, decision_id, olds[change.disk])
            if change.limits is None:
                releases[disk.host].append(
                    (caps.Disk(disk.instance_uuid, disk.dev), record))
            else:
                applies[disk.host].append((cap_of(
                    disk.instance_uuid, disk.dev, change.limits, lease,
                    decision_id), record))
        for i in plan.renewals:
            disk, cap = disks[i], in_force[i]
            assert cap is not None    # renewals are of caps in force
            renewals[disk.host].append((cap_of(
                disk.instance_uuid, disk.dev, cap.limits, lease,
                cap.decision_id), disk.id))
        self._send(name, policy_name, applies, renewals, releases, result,
                   writes)

    def _send(self, name: str, policy_name: str, applies: Applies,
              renewals: Renewals, releases: Releases, result: RoundResult,
              writes: _Writes) -> None:
        """Cast per host; record what was sent, renew the leases sent.

        A host's new caps and renewals go in one ``apply_caps`` cast.
        """
        renewed: list[int] = []
        applied: list[tuple[caps.Cap, audit_mod.Record]] = []
        released: list[audit_mod.Record] = []
        ctxt: dict[str, Any] = {}
        for host in dict.fromkeys([*applies, *renewals]):
            new, renew = applies.get(host, []), renewals.get(host, [])
            try:
                self.agent_api.apply_caps(
                    ctxt, host, [c.to_wire() for c, _ in new + renew])
            except Exception as e:
                LOG.error('apply_caps to %s failed (%s); its caps are sent '
                          'again next round', host, e)
                continue
            result.casts += 1
            applied.extend(new)
            renewed.extend(row_id for _cap, row_id in renew)
        for host, items in releases.items():
            try:
                self.agent_api.release_caps(
                    ctxt, host, [d.to_wire() for d, _ in items])
            except Exception as e:
                LOG.error('release_caps to %s failed (%s); tried again next '
                          'round', host, e)
                continue
            result.casts += 1
            released.extend(record for _disk, record in items)
        if applied:
            self.audit.caps_applied(name, policy_name, applied)
            result.applied = len(applied)
        if released:
            self.audit.caps_released(name, policy_name, released)
            result.released = len(released)
        if renewed:
            writes.renewed.extend(renewed)
            writes.renewing.append(result)
            result.renewed = len(renewed)

    def _write_rates(self, name: str, disks: list[Member],
                     snapshot: base.DomainSnapshot,
                     columns: base.SampleColumns, now: float,
                     writes: _Writes) -> None:
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
                'sampled_at': audit_mod.to_datetime(float(c.timestamp[i])),
                'read_iops': _value(c.read_iops[i]),
                'write_iops': _value(c.write_iops[i]),
                'read_bytes_sec': _value(c.read_bytes_sec[i]),
                'write_bytes_sec': _value(c.write_bytes_sec[i]),
                'latency_ms': float(snapshot.latency_ms[i])})

    def _violations(self, name: str, disks: list[Member],
                    snapshot: base.DomainSnapshot, now: float,
                    result: RoundResult) -> None:
        violated, load, floor = violations(snapshot,
                                           self.violation_latency_ms)
        before = self._violating.get(name, set())
        now_violating = set()
        for i in np.flatnonzero(violated):
            key = disk_id(disks[i])
            now_violating.add(key)
            if key in before:
                continue
            self.audit.violation(name, disks[i], base.audit_numbers(
                load=load[i], floor=floor[i], iops=snapshot.iops[i],
                bytes_sec=snapshot.bytes_sec[i],
                latency_ms=snapshot.latency_ms[i]), now)
        self._violating[name] = now_violating
        result.violations = len(now_violating)
