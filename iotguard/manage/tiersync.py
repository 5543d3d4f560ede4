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

"""Keep Nova flavors and Cinder volume types in step with the tiers.

For every tier ``T`` (doc/source/admin/tiers.rst, "Keeping Nova and Cinder
in step"):

* a Cinder volume type ``<prefix>T`` with the extra spec
  ``iotguard:tier = T``, public or, for a private tier, private with
  access for exactly the tier's projects, associated with
* a QoS spec ``<prefix>T`` (consumer ``both``): the ceilings as the
  front-end keys ``total_iops_sec`` / ``total_bytes_sec`` (a ceiling per
  GiB as Cinder's capacity-based keys, :func:`wanted_qos_specs`) and the
  floor and ceiling as the back-end keys ``minIOPS`` / ``maxIOPS``;

and every flavor of ``[tiers] flavor_tiers`` gets ``iotguard:tier`` and the
tier ceilings as ``quota:disk_*`` extra specs in the flavor's own form
(:func:`wanted_flavor_specs`; a tier per GiB priced at the flavor's root
disk size), never one libvirt refuses
(:func:`iotguard.wire.caps.check_limits`), and, given a
:class:`FloorRequest`, the tier's floor as ``resources:<class>=<units>``
(Nova's scheduler asks Placement for it; doc/source/admin/scheduler.rst).

Volume types and QoS specs of tiers that no longer exist are deleted when
no volume uses them; what is kept, and flavors that name a missing tier,
are reported (:attr:`Plan.notices`), never changed. A side whose service
is not in the catalog is skipped (:attr:`Plan.skipped`).

Applying :func:`plan`'s changes and planning again gives none.
"""

from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import functools
import logging
import math
import typing
from typing import Any

from keystoneauth1 import exceptions as ksa_exceptions

from iotguard.db.tiers import Tier
from iotguard import exception
from iotguard.wire import caps

TIER_KEY = 'iotguard:tier'
FLAVOR_PREFIX = 'quota:disk_'
#: iotune kind -> the tier field that is its ceiling.
CEILINGS = {'iops_sec': 'max_iops', 'bytes_sec': 'max_bytes_sec'}
#: Cinder's capacity-based QoS keys sync writes (or removes).
PER_GB_KEYS = tuple('total_%s%s' % (kind, suffix) for kind in CEILINGS
                    for suffix in ('_per_gb', '_per_gb_min'))
#: Keys sync writes into a QoS spec besides the front-end iotune keys.
BACK_END_KEYS = ('minIOPS', 'maxIOPS')
#: Lists every volume type or flavor, public and private (admin).
ALL = 'None'

Specs = Mapping[str, str]
Wanted = dict[str, str | None]
#: A flavor extra spec Nova turns into a Placement request.
RESOURCES_PREFIX = 'resources:'


@dataclasses.dataclass(frozen=True)
class FloorRequest:
    """What the tiers' flavors ask Placement for.

    ``units`` prices a tier's floor
    (:func:`iotguard.controller.placement.flavor_request`); None when the
    floors are not in Placement: the flavors must not ask for them.
    """

    resource_class: str
    units: typing.Callable[[Tier], int] | None = None

    def wanted(self, tier: Tier) -> Wanted:
        """``resources:<class>``: the tier's units, None without a floor."""
        amount = self.units(tier) if self.units is not None else 0
        return {RESOURCES_PREFIX + self.resource_class:
                str(amount) if amount > 0 else None}


@dataclasses.dataclass
class Change:
    what: str
    apply: typing.Callable[[], object]


@dataclasses.dataclass
class Plan:
    """What sync would do (``changes``), leave alone and skip."""

    changes: list[Change] = dataclasses.field(default_factory=list)
    #: Things left as they are that an operator should look at.
    notices: list[str] = dataclasses.field(default_factory=list)
    #: A side not synced at all, and why.
    skipped: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Report:
    """What sync changed (or, with ``dry_run``, would change)."""

    changes: list[str]
    notices: list[str]
    skipped: list[str]


def _limit(value: float | None) -> str | None:
    return str(int(round(value))) if value and value > 0 else None


def _show(specs: Specs) -> str:
    return ', '.join('%s=%s' % kv for kv in sorted(specs.items()))


def _number(value: str) -> int:
    """An iotune value of an extra spec; unreadable ones count as set."""
    try:
        return max(0, int(float(value)))
    except (TypeError, ValueError):
        return 1


def flavor_limits(specs: Specs) -> dict[str, int]:
    """The iotune set of a flavor's ``quota:disk_*`` extra specs."""
    return {key: _number(specs[FLAVOR_PREFIX + key])
            for key in caps.IOTUNE_KEYS if FLAVOR_PREFIX + key in specs}


def wanted_flavor_specs(tier: Tier, current: Specs,
                        floor: FloorRequest | None = None) -> Wanted:
    """Extra specs a flavor of ``tier`` must have (None = must not).

    Per kind (IOPS, bytes/s) the flavor keeps its form: when it has read or
    write keys (``quota:disk_read_*`` / ``quota:disk_write_*``) the ceiling
    is split in two equal halves, read and write, so that reads plus writes
    stay within the tier ceiling as a ``total`` key would; otherwise it is
    the ``quota:disk_total_*`` key. The keys of the other form and the burst
    (``*_max``) keys of that kind go: a burst would lift the disk above the
    tier ceiling. A kind without ceiling has none of its keys. With
    ``floor``, its ``resources:`` key too (:meth:`FloorRequest.wanted`);
    without, that key is not looked at.
    """
    limits = flavor_limits(current)
    wanted: Wanted = {TIER_KEY: tier.name}
    for kind, field in sorted(CEILINGS.items()):
        values = dict.fromkeys(k for k in caps.IOTUNE_KEYS if kind in k)
        ceiling = _limit(getattr(tier, field))
        if ceiling is not None:
            if caps.form(limits, kind) == 'rw':
                half = str(max(1, int(ceiling) // 2))
                values['read_' + kind] = values['write_' + kind] = half
            else:
                values['total_' + kind] = ceiling
        wanted.update((FLAVOR_PREFIX + k, v) for k, v in values.items())
    if floor is not None:
        wanted.update(floor.wanted(tier))
    return wanted


def wanted_qos_specs(tier: Tier) -> Wanted:
    """QoS keys of a tier's QoS spec (None = must not be there).

    The spec is iotguard's: of the front-end iotune keys it has the
    ``total_*`` ceilings only, never a read/write key next to them. A
    ceiling per GiB is Cinder's ``total_*_per_gb`` (a whole number,
    rounded up), with the tier's floor minimum as ``total_*_per_gb_min``
    and its ``max_*`` as ``total_*_max``: what Cinder's volume manager
    makes of them at a volume's size is the tier's ceiling there
    (:meth:`iotguard.policy.base.Tier.at`).
    """
    wanted = dict.fromkeys(caps.IOTUNE_KEYS + PER_GB_KEYS)
    for kind, field in CEILINGS.items():
        key, per_gb = 'total_' + kind, getattr(tier, field + '_per_gb')
        if per_gb:
            wanted[key + '_per_gb'] = str(math.ceil(per_gb))
            wanted[key + '_per_gb_min'] = _limit(
                getattr(tier, 'min' + field[3:]))
            wanted[key + '_max'] = _limit(getattr(tier, field))
        else:
            wanted[key] = _limit(getattr(tier, field))
    wanted.update(minIOPS=_limit(tier.min_iops),
                  maxIOPS=_limit(tier.max_iops))
    return wanted


def _diff(current: Specs | None,
          wanted: Wanted) -> tuple[dict[str, str], list[str]]:
    """(keys to set {k: v}, keys to delete [k]) to go from current."""
    current = current or {}
    to_set = {k: v for k, v in wanted.items()
              if v is not None and current.get(k) != v}
    to_delete = sorted(k for k, v in wanted.items()
                       if v is None and k in current)
    return to_set, to_delete


def _check(what: str, result: caps.Limits) -> None:
    """Refuse a set libvirt would refuse (caps.check_limits)."""
    try:
        caps.check_limits(result)
    except exception.InvalidCap as exc:
        raise exception.TierSyncFailed(reason='%s would be refused by '
                                       'libvirt: %s' % (what, exc.message))


def _flavor_changes(conn: Any, flavor: Any, tier: Tier,
                    floor: FloorRequest | None) -> list[Change]:
    compute = conn.compute
    current = compute.fetch_flavor_extra_specs(flavor).extra_specs or {}
    to_set, to_delete = _diff(current, wanted_flavor_specs(
        tier.at(flavor.disk), current, floor))
    result = dict(current, **to_set)
    for key in to_delete:
        del result[key]
    _check('flavor %s' % flavor.name, flavor_limits(result))
    changes = []
    if to_set:
        changes.append(Change(
            'flavor %s: set %s' % (flavor.name, _show(to_set)),
            lambda: compute.create_flavor_extra_specs(flavor, to_set)))
    for key in to_delete:
        changes.append(Change(
            'flavor %s: unset %s' % (flavor.name, key),
            functools.partial(compute.delete_flavor_extra_specs_property,
                              flavor, key)))
    return changes


def _compute_plan(conn: Any, by_name: Mapping[str, Tier],
                  flavor_tiers: Mapping[str, str],
                  floor: FloorRequest | None, out: Plan) -> None:
    compute = conn.compute
    named = set()
    for flavor_name, tier_name in sorted(flavor_tiers.items()):
        named.add(flavor_name)
        flavor = compute.find_flavor(flavor_name, ignore_missing=True)
        if flavor is None:
            out.notices.append(
                'flavor %s of [tiers] flavor_tiers: not found in Nova, '
                'skipped' % flavor_name)
        elif tier_name not in by_name:
            out.notices.append(
                'flavor %s: [tiers] flavor_tiers names tier %s, which does '
                'not exist; flavor left unchanged' % (flavor_name, tier_name))
        else:
            out.changes += _flavor_changes(conn, flavor, by_name[tier_name],
                                           floor)
    for flavor in sorted(compute.flavors(is_public=ALL),
                         key=lambda f: f.name):
        if flavor.name in named:
            continue
        specs = flavor.extra_specs
        if specs is None:       # before compute API 2.61
            specs = compute.fetch_flavor_extra_specs(flavor).extra_specs
        named_tier = (specs or {}).get(TIER_KEY)
        if named_tier is not None and named_tier not in by_name:
            out.notices.append(
                'flavor %s: %s=%s names no tier (deleted?); flavor left '
                'unchanged, remove the key or name another tier'
                % (flavor.name, TIER_KEY, named_tier))


def _qos_changes(conn: Any, name: str, tier: Tier) -> list[Change]:
    storage = conn.block_storage
    wanted = wanted_qos_specs(tier)
    qos = storage.find_qos_spec(name, ignore_missing=True)
    if qos is None:
        specs = {k: v for k, v in wanted.items() if v is not None}
        return [Change(
            'QoS spec %s: create, consumer both, %s' % (name, _show(specs)),
            lambda: storage.create_qos_spec(name=name, consumer='both',
                                            **specs))]
    changes = []
    if qos.consumer != 'both':
        changes.append(Change(
            'QoS spec %s: consumer %s -> both' % (name, qos.consumer),
            lambda: storage.update_qos_spec(qos, consumer='both')))
    to_set, to_delete = _diff(qos.specs, wanted)
    result = {k: v for k, v in dict(qos.specs or {}, **to_set).items()
              if k not in to_delete}
    # Cinder takes a per-GiB key's _max as its cap, not libvirt's burst.
    _check('QoS spec %s' % name, {
        k: _number(v) for k, v in result.items() if k in caps.IOTUNE_KEYS
        and k.removesuffix('_max') + '_per_gb' not in result})
    if to_set:
        changes.append(Change(
            'QoS spec %s: set %s' % (name, _show(to_set)),
            lambda: storage.update_qos_spec(qos, **to_set)))
    if to_delete:
        changes.append(Change(
            'QoS spec %s: unset %s' % (name, ', '.join(to_delete)),
            lambda: storage.delete_qos_spec_metadata(qos, to_delete)))
    return changes


def _set_public(storage: Any, vtype_name: str, is_public: bool) -> None:
    # openstacksdk's update_type sends os-volume-type-access:is_public,
    # which Cinder's update refuses: it takes is_public.
    from openstack import exceptions as sdk_exceptions
    vtype = storage.find_type(vtype_name, ignore_missing=False)
    sdk_exceptions.raise_from_response(storage.put(
        '/types/%s' % vtype.id, raise_exc=False,
        json={'volume_type': {'is_public': is_public}}))


def _access_changes(conn: Any, name: str, vtype: Any,
                    projects: set[str]) -> list[Change]:
    """Grant and revoke access so that exactly ``projects`` have it."""
    storage = conn.block_storage
    if vtype is not None and vtype.is_public:
        # Cinder keeps the access list of a type made public and shows it
        # only once the type is private again: compare then.
        def follow() -> None:
            new = storage.find_type(name, ignore_missing=False)
            current = {a['project_id'] for a in storage.get_type_access(new)}
            for project in sorted(projects - current):
                storage.add_type_access(new, project)
            for project in sorted(current - projects):
                storage.remove_type_access(new, project)

        return [Change('volume type %s: access for exactly project(s) %s'
                       % (name, ', '.join(sorted(projects)) or '(none)'),
                       follow)]
    current = {a['project_id'] for a in (
        storage.get_type_access(vtype) if vtype is not None else ())}
    changes = []
    for project in sorted(projects - current):
        changes.append(Change(
            'volume type %s: grant access to project %s' % (name, project),
            functools.partial(lambda p: storage.add_type_access(
                storage.find_type(name, ignore_missing=False), p), project)))
    for project in sorted(current - projects):
        changes.append(Change(
            'volume type %s: revoke access of project %s' % (name, project),
            functools.partial(storage.remove_type_access, vtype, project)))
    return changes


def _type_changes(conn: Any, name: str, tier: Tier) -> list[Change]:
    storage = conn.block_storage
    is_public = tier.is_public
    vtype = storage.find_type(name, ignore_missing=True)
    changes = []
    if vtype is None:
        changes.append(Change(
            'volume type %s: create, %s, %s=%s' % (
                name, 'public' if is_public else 'private', TIER_KEY,
                tier.name),
            lambda: storage.create_type(
                name=name, description='iotguard tier %s' % tier.name,
                is_public=is_public, extra_specs={TIER_KEY: tier.name})))
    else:
        if (vtype.extra_specs or {}).get(TIER_KEY) != tier.name:
            changes.append(Change(
                'volume type %s: set %s=%s' % (name, TIER_KEY, tier.name),
                lambda: storage.update_type_extra_specs(
                    vtype, **{TIER_KEY: tier.name})))
        if bool(vtype.is_public) != is_public:
            changes.append(Change(
                'volume type %s: make %s' % (
                    name, 'public' if is_public else 'private'),
                lambda: _set_public(storage, name, is_public)))
    if not is_public:
        changes += _access_changes(conn, name, vtype,
                                   set(tier.projects))
    return changes


def _association_changes(conn: Any, name: str) -> list[Change]:
    """Associate QoS spec and type of the same name (looked up late)."""
    storage = conn.block_storage
    qos = storage.find_qos_spec(name, ignore_missing=True)
    vtype = storage.find_type(name, ignore_missing=True)
    if qos is not None and vtype is not None:
        if vtype.id in {a.id for a in storage.qos_spec_associations(qos)}:
            return []
        # A type has one QoS spec: drop another one's association first.
        others = [other for other in storage.qos_specs()
                  if other.id != qos.id and vtype.id in {
                      a.id for a in storage.qos_spec_associations(other)}]
    else:
        others = []

    def associate() -> None:
        new_qos = storage.find_qos_spec(name, ignore_missing=False)
        new_type = storage.find_type(name, ignore_missing=False)
        for other in others:
            storage.disassociate_qos_spec(other, new_type.id)
        storage.associate_qos_spec(new_qos, new_type.id)

    return [Change('volume type %s: associate QoS spec %s%s' % (
        name, name, ''.join(' (instead of %s)' % o.name for o in others)),
        associate)]


def _volumes_by_type(storage: Any) -> dict[str, int]:
    """{volume type name or id: number of volumes}, every project."""
    count: dict[str, int] = {}
    for volume in storage.volumes(all_projects=True):
        for key in {volume.volume_type,
                    getattr(volume, 'volume_type_id', None)} - {None}:
            count[key] = count.get(key, 0) + 1
    return count


def _stale_changes(conn: Any, names: set[str], prefix: str,
                   out: Plan) -> None:
    """Types and QoS specs of tiers that are gone (not in ``names``).

    A volume type is one sync made when it is ``<prefix>T`` with
    ``iotguard:tier = T``; a QoS spec when it is ``<prefix>T``, consumer
    ``both``, with only keys sync writes. Anything else is left alone.
    """
    storage = conn.block_storage
    if not prefix:
        out.notices.append('[tiers] volume_type_prefix is empty: volume '
                           'types and QoS specs of deleted tiers are not '
                           'looked for')
        return

    def stale(name: str) -> bool:
        return name.startswith(prefix) and name not in names

    vtypes = [t for t in storage.types(is_public=ALL) if stale(t.name) and
              (t.extra_specs or {}).get(TIER_KEY) == t.name[len(prefix):]]
    used = _volumes_by_type(storage) if vtypes else {}
    deleted = set()
    for vtype in sorted(vtypes, key=lambda t: t.name):
        in_use = used.get(vtype.id, 0) or used.get(vtype.name, 0)
        if in_use:
            out.notices.append(
                'volume type %s: tier %s no longer exists, but %d volume(s) '
                'use the type; kept (retype them, then sync again)'
                % (vtype.name, vtype.name[len(prefix):], in_use))
            continue
        deleted.add(vtype.id)
        out.changes.append(Change(
            'volume type %s: delete (tier %s no longer exists)'
            % (vtype.name, vtype.name[len(prefix):]),
            functools.partial(storage.delete_type, vtype,
                              ignore_missing=True)))
    ours = set(caps.IOTUNE_KEYS) | set(BACK_END_KEYS)
    for qos in sorted(storage.qos_specs(), key=lambda q: q.name):
        if not stale(qos.name):
            continue
        kept = sorted(
            a.name for a in storage.qos_spec_associations(qos)
            if a.id not in deleted)
        foreign = sorted(set(qos.specs or {}) - ours)
        if qos.consumer != 'both':
            foreign.append('consumer %s' % qos.consumer)
        if kept:
            out.notices.append(
                'QoS spec %s: tier %s no longer exists; kept, associated '
                'with volume type(s) %s' % (qos.name, qos.name[len(prefix):],
                                            ', '.join(kept)))
        elif foreign:
            out.notices.append(
                'QoS spec %s: tier %s no longer exists; kept, it has what '
                'tier sync does not write (%s)' % (
                    qos.name, qos.name[len(prefix):], ', '.join(foreign)))
        else:
            out.changes.append(Change(
                'QoS spec %s: delete (tier %s no longer exists)'
                % (qos.name, qos.name[len(prefix):]),
                functools.partial(storage.delete_qos_spec, qos,
                                  ignore_missing=True)))


def _block_storage_plan(conn: Any, tiers: Sequence[Tier], prefix: str,
                        out: Plan) -> None:
    for tier in sorted(tiers, key=lambda t: t.name):
        name = prefix + tier.name
        out.changes += _qos_changes(conn, name, tier)
        out.changes += _type_changes(conn, name, tier)
        out.changes += _association_changes(conn, name)
    _stale_changes(conn, {prefix + t.name for t in tiers}, prefix, out)


def _in_catalog(conn: Any, service_type: str) -> bool:
    # Without openstacksdk's warning when it is missing: the plan says so.
    def quiet(record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(
            'Keystone catalog entry not found')

    logger = logging.getLogger('openstack.config')
    logger.addFilter(quiet)
    try:
        return bool(conn.has_service(service_type))
    finally:
        logger.removeFilter(quiet)


def plan(conn: Any, tiers: Sequence[Tier], flavor_tiers: Mapping[str, str],
         prefix: str, floor: FloorRequest | None = None) -> Plan:
    """Every change that would bring Nova and Cinder in step (a Plan)."""
    by_name = {t.name: t for t in tiers}
    out = Plan()
    if _in_catalog(conn, 'compute'):
        _compute_plan(conn, by_name, flavor_tiers, floor, out)
    else:
        out.skipped.append('Nova (compute) is not in the service catalog: '
                           'flavors not synced')
    if _in_catalog(conn, 'block-storage'):
        _block_storage_plan(conn, tiers, prefix, out)
    else:
        out.skipped.append('Cinder (block-storage) is not in the service '
                           'catalog: volume types and QoS specs not synced')
    return out


def cloud_errors() -> tuple[type[Exception], ...]:
    """The exceptions an openstacksdk call raises for a failed call."""
    from openstack import exceptions as sdk_exceptions
    return sdk_exceptions.SDKException, ksa_exceptions.ClientException


def sync(conn: Any, tiers: Sequence[Tier], flavor_tiers: Mapping[str, str],
         prefix: str, dry_run: bool = False,
         floor: FloorRequest | None = None) -> Report:
    """Plan and (unless ``dry_run``) apply; returns a :class:`Report`.

    ``floor``: the flavors' ``resources:`` key (:class:`FloorRequest`);
    None leaves that key as it is.

    A failed call to Nova or Cinder raises TierSyncFailed; its ``done``
    attribute lists the changes made before it.
    """
    done: list[str] = []
    what = 'reading Nova and Cinder'
    try:
        todo = plan(conn, tiers, flavor_tiers, prefix, floor)
        for change in [] if dry_run else todo.changes:
            what = change.what
            change.apply()
            done.append(what)
    except cloud_errors() as exc:
        failure = exception.TierSyncFailed(reason='%s: %s' % (what, exc))
        failure.done = done
        raise failure from exc
    return Report([c.what for c in todo.changes], todo.notices, todo.skipped)
