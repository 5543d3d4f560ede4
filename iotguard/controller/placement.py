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

"""Each domain's committable floors as Placement inventory.

**Units.** A floor's cost depends on the domain's profile
(:func:`iotguard.policy.costmodel.committed_floor_load`), while a flavor
carries one amount wherever it lands. So a unit is the same on every
domain: a floor costs :func:`units` of it, priced as admission prices it
on a reference device of one operation per second and ``[placement]
unit_bytes_sec`` (:func:`reference`); a domain offers :func:`capacity`
units, ``max_commit_ratio`` of the most reference devices its profile
holds. A floor then takes at least as large a share of any domain in
Placement as in admission (both forms): Placement never admits more. A
tier's flavors ask for its units (:func:`flavor_request`, written by tier
sync).

**Providers** (:func:`wanted`, pure): a host-local domain
(``local:<host>``) is a child of the compute node's provider (found by the
host's name); any other domain is a provider with
``MISC_SHARES_VIA_AGGREGATE`` in an aggregate with the compute nodes of
the hosts its disks are on, and of the hosts whose image-backed disks go
there (``[membership] ephemeral_domains``; every compute node, by Nova's
``COMPUTE_NODE`` trait, for ``ephemeral_domain``): a host gets floors
there before its first disk does. Ids are uuid5 of the domain's name, so every
controller finds the same ones. :class:`Report` writes them through
keystoneauth, retrying generation conflicts, and compares Placement's
usage with the floors iotguard committed: each domain's numbers are
served to Prometheus (:meth:`Report.collect`); a difference is logged at
every sync and notified (``iotguard.placement.usage_differs``) once it is
seen at :data:`DIFFERING_SYNCS` syncs in a row, so that a server Nova
placed and membership has not recorded yet is not reported.
"""

import collections.abc
import dataclasses
import math
from typing import Any
from typing import Callable
import uuid

from keystoneauth1 import adapter
from keystoneauth1 import session as ks_session
from oslo_config import cfg
from oslo_log import log as logging
import requests

from iotguard import clients
from iotguard.controller import membership
from iotguard.controller import notifications
from iotguard.db import api as db_api
from iotguard.db import disks as disks_db
from iotguard.manage import tiersync
from iotguard import metrics
from iotguard.policy import admission
from iotguard.policy import base
from iotguard.policy import costmodel

LOG = logging.getLogger(__name__)

MICROVERSION = '1.39'
SHARES = 'MISC_SHARES_VIA_AGGREGATE'
#: The trait nova-compute gives its compute node providers.
COMPUTE_NODE = 'COMPUTE_NODE'
#: The namespace of the providers' and aggregates' uuid5 ids.
NAMESPACE = uuid.UUID('0b3c6f55-5c1e-4d8a-9e53-1f0c2b7a6d41')
#: Tries of a write that meets a concurrent update of the provider.
RETRIES = 3
#: Syncs in a row that must see a domain's usage differ to notify it.
DIFFERING_SYNCS = 2


def reference(unit_bytes_sec: float) -> base.Profile:
    """The device one floor unit per second is priced on."""
    return base.Profile(1.0, unit_bytes_sec, base.ADDITIVE)


def units(tier: base.Tier, ref: base.Profile) -> int:
    """A tier's floor in units, rounded up (a flavor's amount)."""
    return math.ceil(costmodel.committed_floor_load(
        tier.min_iops, tier.min_bytes_sec, ref) - admission.EPSILON)


def flavor_request(conf: cfg.ConfigOpts) -> tiersync.FloorRequest:
    """The ``resources:`` key tier sync writes (:func:`units` of a tier).

    Without units when ``[placement] enabled`` is off: the key goes.
    """
    ref = reference(conf.placement.unit_bytes_sec)
    return tiersync.FloorRequest(
        conf.placement.resource_class,
        (lambda tier: units(tier, ref)) if conf.placement.enabled else None)


def capacity(profile: base.Profile, ref: base.Profile,
             max_ratio: float) -> int:
    """The units a domain of ``profile`` may commit, rounded down."""
    return math.floor(max_ratio * min(profile.iops_4k / ref.iops_4k,
                                      profile.bytes_sec / ref.bytes_sec))


@dataclasses.dataclass(frozen=True)
class Provider:
    """The provider of one domain as iotguard wants it.

    ``parent``: the host whose compute node it is a child of (host-local
    domain); ``hosts``: those whose compute nodes share it (any other),
    every compute node too with ``every_node``; ``committed``: the units
    of its disks' floors.
    """

    domain: str
    total: int
    committed: int
    parent: str | None = None
    hosts: tuple[str, ...] = ()
    every_node: bool = False

    @property
    def uuid(self) -> str:
        return str(uuid.uuid5(NAMESPACE, self.domain))

    @property
    def name(self) -> str:
        return (self.parent + ':iotguard' if self.parent is not None
                else 'iotguard:' + self.domain)

    @property
    def aggregate(self) -> str:
        return str(uuid.uuid5(NAMESPACE, 'aggregate:' + self.domain))


def wanted(domains: collections.abc.Iterable[admission.Domain],
           members: collections.abc.Mapping[str, list[disks_db.Member]],
           ref: base.Profile, max_ratio: float,
           ephemeral: cfg.ConfigOpts.GroupAttr | None = None
           ) -> list[Provider]:
    """The providers of ``domains`` whose disks are ``members``.

    ``ephemeral``: the ``[membership]`` options naming the hosts'
    image-backed disks' domains. A domain without a profile, or too small
    for one unit, has none.
    """
    by_host = dict(ephemeral.ephemeral_domains) if ephemeral else {}
    everywhere = ephemeral.ephemeral_domain if ephemeral else None
    out = []
    for domain in domains:
        profile = admission.profile_of(domain)
        total = 0 if profile is None else capacity(profile, ref, max_ratio)
        if total < 1:
            LOG.info('Domain %s has no floors to offer Placement (%s)',
                     domain.name, 'no capacity profile' if profile is None
                     else 'less than one unit')
            continue
        disks = members.get(domain.name, [])
        committed = sum(units(d.tier, ref) for d in disks if d.tier)
        if domain.name.startswith(membership.LOCAL_PREFIX):
            host = domain.name[len(membership.LOCAL_PREFIX):]
            out.append(Provider(domain.name, total, committed, parent=host))
        else:
            hosts = {d.host for d in disks} | {
                h for h, name in by_host.items() if name == domain.name}
            out.append(Provider(domain.name, total, committed,
                                hosts=tuple(sorted(hosts)),
                                every_node=domain.name == everywhere))
    return out


@dataclasses.dataclass(frozen=True)
class Usage:
    """A provider at its last sync: inventory, Placement's usage, ours."""

    total: int
    used: int
    committed: int


class PlacementError(Exception):
    pass


def _conflict(resp: requests.Response) -> bool:
    return resp.status_code == 409 and any(
        e.get('code') == 'placement.concurrent_update'
        for e in resp.json().get('errors', []))


def _check(resp: requests.Response) -> requests.Response:
    if resp.status_code >= 400:
        raise PlacementError('%s %s: %d %s' % (
            resp.request.method, resp.url, resp.status_code, resp.text))
    return resp


class Report:
    """Keeps the owned domains' providers in Placement (module doc)."""

    def __init__(self, conf: cfg.ConfigOpts, db: db_api.Connection,
                 session: ks_session.Session | None = None,
                 notifier: notifications.Notifier | None = None) -> None:
        self._db = db
        self.notifier = notifier
        #: Domain -> its provider's :class:`Usage` at the last sync.
        self.usage: dict[str, Usage] = {}
        self._differing: dict[str, int] = {}   # syncs in a row
        self._rc: str = conf.placement.resource_class
        self._ref = reference(conf.placement.unit_bytes_sec)
        self._ratio: float = conf.admission.max_commit_ratio
        self._ephemeral = conf.membership
        self._interval: float = conf.membership.resync_interval
        self._due = 0.0
        self._api = adapter.Adapter(
            session or clients.get_session(conf), service_type='placement',
            interface=conf.service_credentials.interface,
            region_name=conf.service_credentials.region_name,
            default_microversion=MICROVERSION, raise_exc=False)

    def sync_due(self, domains: list[admission.Domain], now: float) -> None:
        """:meth:`sync` every ``[membership] resync_interval``; no raise."""
        if now < self._due:
            return
        self._due = now + self._interval
        try:
            self.sync(domains)
        except Exception as e:
            LOG.warning('Placement sync failed (%s); next try in %.0f s',
                        e, self._interval)

    def sync(self, domains: list[admission.Domain]) -> list[Provider]:
        """Write the providers of ``domains``; those written are returned.

        A provider that fails (its compute node missing, Placement
        refusing) is logged and tried again at the next sync; until then
        its domain has no :attr:`usage`.
        """
        members = self._db.domains_disks([d.name for d in domains])
        _check(self._api.put('/resource_classes/' + self._rc))
        self.usage = {}
        done = []
        for provider in wanted(domains, members, self._ref, self._ratio,
                               self._ephemeral):
            try:
                if self._provider(provider):
                    done.append(provider)
            except Exception as e:
                LOG.warning('Placement provider of domain %s not synced '
                            '(%s); tried again at the next resync',
                            provider.domain, e)
        names = {d.name for d in domains}
        self._differing = {d: n for d, n in self._differing.items()
                           if d in names}
        return done

    def collect(self) -> list[metrics.Family]:
        """The domains' units at the last sync, for Prometheus."""
        def per(field: str) -> dict[str, float]:
            return {d: getattr(u, field) for d, u in self.usage.items()}

        return [
            metrics.gauge('iotguard_placement_floor_units',
                          "The domain's floor inventory in Placement.",
                          per('total')),
            metrics.gauge('iotguard_placement_floor_used_units',
                          "Placement's usage of the domain's floor "
                          'inventory.', per('used')),
            metrics.gauge('iotguard_placement_floor_committed_units',
                          'The units of the floors iotguard committed in '
                          'the domain.', per('committed')),
        ]

    def _compare(self, p: Provider, used: int) -> None:
        """Keep, log and (module doc) notify Placement's usage vs ours."""
        self.usage[p.domain] = Usage(p.total, used, p.committed)
        before = self._differing.pop(p.domain, 0)
        payload = {'domain': p.domain, 'provider': p.uuid,
                   'resource_class': self._rc, 'total': p.total,
                   'placement_used': used, 'committed': p.committed}
        if used == p.committed:
            if before >= DIFFERING_SYNCS and self.notifier is not None:
                self.notifier.placement_usage_matches(payload)
            return
        LOG.warning('Domain %s: Placement counts %d %s used on provider '
                    '%s, iotguard committed floors of %d', p.domain,
                    used, self._rc, p.uuid, p.committed)
        self._differing[p.domain] = before + 1
        if before + 1 == DIFFERING_SYNCS and self.notifier is not None:
            self.notifier.placement_usage_differs(payload)

    def _node(self, host: str) -> str | None:
        """The uuid of ``host``'s compute node provider, logged if none."""
        found = _check(self._api.get('/resource_providers',
                                     params={'name': host})).json()
        if found['resource_providers']:
            node: str = found['resource_providers'][0]['uuid']
            return node
        LOG.warning('No compute node provider named %s in Placement', host)
        return None

    def _update(self, path: str, key: str,
                change: Callable[[Any], Any]) -> None:
        """PUT ``change(value)`` of ``key`` at ``path`` unless it is None.

        With the provider's generation read, read again on a conflict.
        """
        for _ in range(RETRIES):
            current = _check(self._api.get(path)).json()
            new = change(current[key])
            if new is None:
                return
            resp = self._api.put(path, json={
                key: new, 'resource_provider_generation':
                    current['resource_provider_generation']})
            if not _conflict(resp):
                _check(resp)
                return
        raise PlacementError('%s: %d generation conflicts in a row'
                             % (path, RETRIES))

    def _provider(self, p: Provider) -> bool:
        path = '/resource_providers/' + p.uuid
        parent = None
        if p.parent is not None:
            parent = self._node(p.parent)
            if parent is None:
                return False
        if self._api.get(path).status_code == 404:
            _check(self._api.post('/resource_providers', json={
                'uuid': p.uuid, 'name': p.name,
                'parent_provider_uuid': parent}))
            LOG.info('Created Placement provider %s (%s) of domain %s',
                     p.name, p.uuid, p.domain)
        if p.parent is None:
            self._update(path + '/traits', 'traits',
                         lambda t: None if SHARES in t else t + [SHARES])
            nodes = [self._node(h) for h in p.hosts] + [p.uuid]
            if p.every_node:
                nodes += [n['uuid'] for n in _check(self._api.get(
                    '/resource_providers', params={'required': COMPUTE_NODE})
                ).json()['resource_providers']]
            for node in dict.fromkeys(nodes):
                if node is not None:
                    self._update(
                        '/resource_providers/%s/aggregates' % node,
                        'aggregates', lambda a: None if p.aggregate in a
                        else a + [p.aggregate])
        inventory = {'total': p.total, 'reserved': 0, 'min_unit': 1,
                     'max_unit': p.total, 'step_size': 1,
                     'allocation_ratio': 1.0}
        self._update(path + '/inventories', 'inventories', lambda i: (
            None if i.get(self._rc) is not None and all(
                i[self._rc].get(k) == v for k, v in inventory.items())
            else dict(i, **{self._rc: inventory})))
        used = _check(self._api.get(path + '/usages')).json()['usages'].get(
            self._rc, 0)
        self._compare(p, used)
        return True
