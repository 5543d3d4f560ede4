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
  DB (every owned domain at once, :meth:`DomainLoop.run`), the newest
  sample of each disk from the :class:`SampleStore`. A disk with no
  sample, a sample without rates (gap) or a stale one is flagged
  ``stale``: its cap may be released or loosened, never tightened (a
  decision that would is dropped).
* **decide**: the domain's policy (``domain.policy`` with its ``params``,
  else ``[controller] default_policy``) on the columnar snapshot and the
  state it returned the round before. That state is the domain's, in the
  database (``policy_state``, with the name of the policy that wrote it):
  written at the end of every round where it changed, all the round's
  domains in one statement, and read at a domain's first decision on this
  controller (after a start or a takeover) and after a change of its
  policy's parameters (the policy keeps what still applies). Not in the
  first decision interval after a start or a takeover while a disk is
  still stale (not heard yet): those rounds, and urgent decisions, only
  renew the caps in force. For two leases after it, no cap is loosened
  while a floor-holder is still stale (:func:`unless_blind`).
* **act and record**: the caps cast to the agents, the audit trail, the
  caps in force, the rates for the API and the notifications
  (:mod:`~iotguard.controller.effects`).
* **learn**: the round fed to the domain's capacity estimator; when a fit
  is written, ``iotguard.domain.overcommitted`` /
  ``iotguard.domain.overcommit_cleared`` when the floors admitted stop /
  start again to fit in what the storage was learned to serve
  (:func:`iotguard.policy.admission.overcommit`; report only: no tier is
  changed, nothing refused).

Between rounds, a domain is decided at once when a disk an agent marked
urgent (its demand rose) or whose samples resumed (the first fresh one
after none: this controller's start, the broker's or the agent's return)
holds a floor it does not get (:meth:`DomainLoop.urgent`): the same
collect -> decide -> act -> record, at most once per ``[controller]
urgent_interval`` per domain. So the floors a lapsed cap left unkept are
decided on the first fresh samples, not at the next round.

One domain failing (DB, policy, messaging) is logged and the others go on;
its caps are then not renewed and lapse at their lease, back to the
static limits.
"""

import collections
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import json
import math
import time
from typing import Any

import numpy as np
from oslo_config import cfg
from oslo_log import log as logging

from iotguard.controller import effects
from iotguard.controller import notifications
from iotguard.controller import samples
from iotguard.db import api as db_api
from iotguard.db import caps as db_caps
from iotguard.db import disks as db_disks
from iotguard import policy as policy_mod
from iotguard.policy import admission
from iotguard.policy import base
from iotguard.policy import estimator
from iotguard.wire import caps
from iotguard.wire import rpcapi

LOG = logging.getLogger(__name__)

#: The disks of a round's domains are read in full at least this often
#: (seconds), whatever the database's disks version says.
FULL_READ_S = 60.0
_NO_TIER = base.Tier(name='')
#: Rounds between two writes of a domain's learned profile and estimator
#: state (a minute at the default 5 s).
LEARN_WRITE_ROUNDS = 12

Member = db_disks.Member
Key = tuple[str, str]
InForce = db_caps.InForce


def snapshot_of(domain: admission.Domain, interval_s: float,
                disks: Sequence[Member], in_force: Sequence[InForce | None],
                columns: base.SampleColumns) -> base.DomainSnapshot:
    """The columnar snapshot of a domain's disks and their samples.

    ``in_force`` (None: no cap) and ``columns``
    (:meth:`SampleStore.gather`) in the order of ``disks``. A stale disk
    keeps the rates its last sample had (0 where none), flagged ``stale``.
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
        domain.name, profile, interval_s,
        tuple('%s/%s' % (d.instance_uuid, d.dev) for d in disks), tiers,
        columns, cap_iops, cap_bytes_sec, cap_set_at)


def _calibrated(domain: admission.Domain) -> bool:
    return admission.profile_of(domain) is not None


def unless_blind(snapshot: base.DomainSnapshot,
                 decisions: list[base.Decision]) -> list[base.Decision]:
    """``decisions`` without those loosening a cap, while a floor is unheard.

    For two leases after this controller started or took the domain
    over: a floor-holder not heard yet (stale) may be the victim whose
    samples are still on their way (a hung controller holds its share of
    the agents' batches until the broker drops its connection); what it
    asks is unknown, and a cap raised or released on its silence lends its
    floor away. Cuts and new caps stand.
    """
    floors = (snapshot.floor_iops > 0) | (snapshot.floor_bytes_sec > 0)
    if not (snapshot.stale & floors).any():
        return decisions
    index = {disk_id: i for i, disk_id in enumerate(snapshot.disk_ids)}
    kept = []
    for decision in decisions:
        i = index.get(decision.disk_id)
        if i is not None and snapshot.capped[i] and (
                decision.action == base.RELEASE
                or decision.iops > snapshot.cap_iops[i]
                or decision.bytes_sec > snapshot.cap_bytes_sec[i]):
            LOG.info('Held back %s on %s: a floor-holder of the domain is '
                     'not heard yet', decision.reason, decision.disk_id)
            continue
        kept.append(decision)
    return kept


class DomainLoop:
    """Runs the rounds of the domains a controller owns.

    ``agent_api`` and ``notifier`` go to its
    :class:`~iotguard.controller.effects.Effects`. No I/O in the
    constructor.
    """

    def __init__(self, conf: cfg.ConfigOpts, db: db_api.Connection,
                 store: samples.SampleStore, agent_api: rpcapi.AgentAPI,
                 notifier: notifications.Notifier,
                 clock: Callable[[], float] = time.time,
                 load_policy: Callable[..., base.Policy] = policy_mod.load
                 ) -> None:
        self.interval_s: float = conf.controller.decision_interval
        self.urgent_s: float = conf.controller.urgent_interval
        self.default_policy = conf.controller.default_policy
        self.db = db
        self.store = store
        self.effects = effects.Effects(conf, db, agent_api, notifier)
        self._clock = clock
        self._load_policy = load_policy
        # (domains, disks version, read at, their disks) of the last read
        self._views: tuple[tuple[str, ...], object, float,
                           dict[str, list[Member]]] | None = None
        # by domain name:
        self._policies: dict[str, tuple[tuple[str, str], base.Policy]] = {}
        # what each policy returned last (absent: read it from the DB) ...
        self._states: dict[str, base.PolicyState | None] = {}
        # ... and what the DB holds of it, as last read or written here
        self._stored: dict[str, dict[str, Any] | None] = {}
        # ... and the state object that is the serialised form of: a
        # policy that returns the state it was given changed nothing
        self._synced: dict[str, object] = {}
        self._uncalibrated: set[str] = set()
        self._seen: dict[str, float] = {}       # first round here
        self._learning: dict[str, estimator.State] = {}
        self._learned_rounds: collections.Counter[str] = collections.Counter()
        self._overcommitted: dict[str, bool] = {}   # last verdict given
        self._urgent_at: dict[str, float] = {}   # last urgent decision
        self.max_commit_ratio: float = conf.admission.max_commit_ratio

    # -- the rounds ---------------------------------------------------------

    def run(self, domains: Sequence[admission.Domain], now: float | None = None
            ) -> list[effects.RoundResult]:
        """One round of every domain in ``domains``; failures are logged.

        The domains' disks are read at once, and the round's renewals and
        rates are written at its end, one transaction each.
        """
        now = self._clock() if now is None else now
        try:
            self.db.cap_delete_expired(effects.to_datetime(now))
        except Exception:
            LOG.exception('Could not drop the lapsed caps')
        views: dict[str, list[Member]] = {}
        in_force: dict[int, InForce] | None = None
        calibrated = [d.name for d in domains if _calibrated(d)]
        try:
            views, in_force = self._disks(calibrated, now)
        except Exception as e:
            self._views = None
            LOG.warning('Could not read the disks of %d domains at once (%s); '
                        'reading them domain by domain', len(calibrated), e)
        writes = effects.Writes()
        results = []
        for domain in domains:
            try:
                results.append(self.run_once(domain, now,
                                             views.get(domain.name),
                                             writes, in_force))
            except Exception:
                LOG.exception('Decision round of domain %s failed; its caps '
                              'lapse unless a later round renews them',
                              domain.name)
        self._flush(writes, now)
        self.store.prune(now)
        return results

    def _flush(self, writes: effects.Writes, now: float) -> None:
        """Write a round's writes, the policies' states among them."""
        self.effects.flush(writes, now)
        if not writes.policy_states:
            return
        try:
            self.db.domain_policy_states_update(writes.policy_states)
        except Exception:
            LOG.exception('Could not write the policy state of %d domains; '
                          'written again next round', len(
                              writes.policy_states))
            for name in writes.policy_states:
                self._stored.pop(name, None)
                self._synced.pop(name, None)

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

    def forget(self, names: Iterable[str]) -> None:
        """Drop per-domain state of domains no longer owned."""
        for name in names:
            self._policies.pop(name, None)
            self._states.pop(name, None)
            self._stored.pop(name, None)
            self._synced.pop(name, None)
            self.effects.forget(name)
            self._seen.pop(name, None)
            self._learning.pop(name, None)
            self._learned_rounds.pop(name, None)
            self._overcommitted.pop(name, None)
            self._urgent_at.pop(name, None)

    def urgent_due(self, name: str, now: float) -> float:
        """When the domain may have its next urgent decision (<= now: now).

        ``inf`` when urgent decisions are off (``urgent_interval`` 0).
        """
        if self.urgent_s <= 0:
            return math.inf
        return self._urgent_at.get(name, -math.inf) + self.urgent_s

    def urgent(self, marked: Mapping[str, tuple[admission.Domain,
                                                Iterable[Key]]],
               now: float) -> list[effects.RoundResult]:
        """Decide now the domains one of whose marked disks is short.

        ``marked``: ``{name: (domain, disks an agent marked urgent or
        whose samples resumed)}``.
        A domain is decided when it is due (:meth:`urgent_due`), had a
        round here (it is known to be this controller's), is calibrated
        and one of its marked disks holds a floor it does not reach
        (:func:`iotguard.policy.base.short`): the round of those
        domains alone (collect -> decide -> act -> record), their caps in
        force read and their writes written at once, as a round's. The
        results of the domains decided; the caller never runs this beside
        a round.
        """
        views = self._views[3] if self._views is not None else {}
        due = []
        for name, (domain, keys) in marked.items():
            if (self.urgent_due(name, now) > now or name not in self._seen
                    or not _calibrated(domain)):
                continue
            disks = views.get(name)
            if disks is None:
                disks = self.db.domain_disks(name)
            wanted = set(keys)
            held = [d for d in disks if (d.instance_uuid, d.dev) in wanted]
            if held and base.short(snapshot_of(
                    domain, self.interval_s, held, [None] * len(held),
                    self.store.gather([(d.instance_uuid, d.dev)
                                       for d in held], now))).any():
                due.append((domain, disks))
        if not due:
            return []
        in_force = self.db.domains_caps([domain.name for domain, _ in due])
        writes = effects.Writes()
        results = []
        for domain, disks in due:
            self._urgent_at[domain.name] = now
            try:
                results.append(self.run_once(domain, now, disks, writes,
                                             in_force))
            except Exception:
                LOG.exception('Urgent decision of domain %s failed; the '
                              'next round decides it', domain.name)
        self._flush(writes, now)
        return results

    def run_once(self, domain: admission.Domain, now: float,
                 disks: list[Member] | None = None,
                 writes: effects.Writes | None = None,
                 in_force: Mapping[int, InForce] | None = None
                 ) -> effects.RoundResult:
        """collect -> decide -> act -> record for one domain.

        ``disks`` and ``in_force``: the domain's disks and the round's caps
        in force when already read (else read here); ``writes``: where
        :meth:`run` gathers the round's writes (else they are written
        before this returns).
        """
        name = domain.name
        result = effects.RoundResult(domain=name)
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
        alone = writes is None
        writes = writes or effects.Writes()
        if disks and snapshot.stale.any() and \
                now - first_seen < self.interval_s:
            # Just started or taken over: this controller has not heard
            # every disk of the domain yet (its hosts' batches come one
            # by one). Renew what is in force until it has, for an
            # interval at most: a disk not heard has no demand to lend
            # (a floor-holder's would be lent away, a noisy disk's cap
            # loosened on its silence).
            decisions: list[base.Decision] = []
            result.skipped = 'warming up'
        else:
            decisions = self._decide(name, policy_name, policy, snapshot,
                                     now, writes) if disks else []
            if disks and now - first_seen < 2 * self.effects.lease_s:
                decisions = unless_blind(snapshot, decisions)
            if disks:
                self._learn(domain, snapshot, disks, result)
        result.decisions = len(decisions)
        capped = self.effects.act(name, policy_name, disks, caps_, snapshot,
                                  decisions, now, result, writes)
        self.effects.violations(name, disks, snapshot, now, result, capped)
        self.effects.write_rates(name, disks, snapshot, columns, now, writes)
        if alone:
            self._flush(writes, now)
        LOG.debug('Round of %s: %s', name, result)
        return result

    def _decide(self, name: str, policy_name: str, policy: base.Policy,
                snapshot: base.DomainSnapshot, now: float,
                writes: effects.Writes) -> list[base.Decision]:
        """The policy's decisions, from the domain's state and on to it.

        The state is read from the database at the domain's first
        decision here (that of another policy is not this one's); the one
        the policy returns goes into ``writes`` when it changed.
        """
        if name not in self._states:
            self._synced.pop(name, None)
            stored = self._stored[name] = self.db.domain_policy_state(name)
            try:
                self._states[name] = policy.restore(
                    stored['state'] if stored and stored.get('policy')
                    == policy_name else None)
            except (KeyError, TypeError, ValueError) as e:
                LOG.warning('Domain %s: the stored state of policy %s is '
                            'unreadable (%r); starting from none', name,
                            policy_name, e)
                self._states[name] = policy.restore(None)
        decisions, state = policy.decide(snapshot, self._states[name], now)
        self._states[name] = state
        if name in self._synced and self._synced[name] is state:
            # The state last serialised here, given back unchanged (a
            # policy returns the state it was given when nothing in it
            # moved): nothing to serialise or compare.
            return decisions
        stored = {'policy': policy_name,
                  'state': None if state is None else state.to_dict()}
        if stored != self._stored.get(name):
            self._stored[name] = writes.policy_states[name] = stored
        self._synced[name] = state
        return decisions

    def _learn(self, domain: admission.Domain, snapshot: base.DomainSnapshot,
               disks: list[Member], result: effects.RoundResult) -> None:
        """Feed the round to the domain's capacity estimator.

        Its state is read from the database when this controller first
        runs the domain; state and fit are written, and the floors of
        ``disks`` judged against the fit, every ``LEARN_WRITE_ROUNDS``
        rounds. A failure is logged: learning never stops a round.
        """
        name = domain.name
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
                self.db.domain_learned(name, fit, state.to_dict())
                if fit is not None:
                    LOG.debug('Domain %s learned %s', name, fit)
                self._judge(domain, disks, fit, result)
        except Exception:
            LOG.exception('Could not learn the capacity of domain %s', name)

    def _judge(self, domain: admission.Domain, disks: list[Member],
               fit: estimator.Fit | None, result: effects.RoundResult
               ) -> None:
        """Report a change of the domain's overcommit verdict (module doc).

        While ``fit`` gives no verdict the last one stands. The verdict
        goes into ``result`` too.
        """
        name = domain.name
        verdict = admission.overcommit(
            [d.tier for d in disks if d.tier],
            admission.profile_of(domain), fit, self.max_commit_ratio)
        result.committed = verdict.committed
        result.overcommitted = verdict.overcommitted
        if verdict.overcommitted is None:
            return
        was = self._overcommitted.get(name, False)
        self._overcommitted[name] = verdict.overcommitted
        if verdict.overcommitted != was:
            self.effects.overcommit(name, verdict.overcommitted,
                                    verdict.to_dict())

    # -- collect ------------------------------------------------------------

    def collect(self, domain: admission.Domain, now: float,
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
            disks = self.db.domain_disks(domain.name)
        if in_force is None:
            in_force = self.db.domains_caps([domain.name])
        caps_ = [in_force.get(d.id) for d in disks]
        caps_ = [c if c is None or c.lease_expires_at > now else None
                 for c in caps_]
        columns = self.store.gather(
            [(d.instance_uuid, d.dev) for d in disks], now)
        return disks, caps_, snapshot_of(domain, self.interval_s, disks,
                                         caps_, columns), columns

    # -- decide -------------------------------------------------------------

    def _policy(self, domain: admission.Domain) -> tuple[str, base.Policy]:
        name = domain.policy or self.default_policy
        params = domain.params
        key = (name, json.dumps(params, sort_keys=True))
        cached = self._policies.get(domain.name)
        if cached is None or cached[0] != key:
            cached = (key, self._load_policy(name, **params))
            self._policies[domain.name] = cached
            # the new policy goes on from the stored state
            self._states.pop(domain.name, None)
        return name, cached[1]
