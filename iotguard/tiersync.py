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

For every tier ``T`` (ARCHITECTURE.md, "Tiers meet Nova and Cinder"):

* a Cinder volume type ``<prefix>T`` with the extra spec
  ``iotguard:tier = T``, associated with
* a QoS spec ``<prefix>T`` (consumer ``both``): the ceilings as the
  front-end keys ``total_iops_sec`` / ``total_bytes_sec`` and the floor and
  ceiling as the back-end keys ``minIOPS`` / ``maxIOPS``;

and every flavor of ``[tiers] flavor_tiers`` gets ``iotguard:tier`` and the
tier ceilings as ``quota:disk_total_iops_sec`` /
``quota:disk_total_bytes_sec`` (removed when the tier has no ceiling).

:func:`plan` compares and returns the changes; applying them and planning
again gives no change (idempotent). Every call goes through openstacksdk.
"""

import dataclasses
import typing

from iotguard import exception

TIER_KEY = 'iotguard:tier'
FLAVOR_IOPS = 'quota:disk_total_iops_sec'
FLAVOR_BYTES = 'quota:disk_total_bytes_sec'


@dataclasses.dataclass
class Change:
    """One change to make: what it is, and how to make it."""

    what: str
    apply: typing.Callable[[], object]


def _limit(value):
    return str(int(round(value))) if value and value > 0 else None


def wanted_flavor_specs(tier):
    """Extra specs a flavor of ``tier`` must have (None = must not)."""
    return {TIER_KEY: tier['name'],
            FLAVOR_IOPS: _limit(tier['max_iops']),
            FLAVOR_BYTES: _limit(tier['max_bytes_sec'])}


def wanted_qos_specs(tier):
    """QoS keys of a tier's QoS spec (None = must not be there)."""
    return {'total_iops_sec': _limit(tier['max_iops']),
            'total_bytes_sec': _limit(tier['max_bytes_sec']),
            'minIOPS': _limit(tier['min_iops']),
            'maxIOPS': _limit(tier['max_iops'])}


def _diff(current, wanted):
    """(keys to set {k: v}, keys to delete [k]) to go from current."""
    current = current or {}
    to_set = {k: v for k, v in wanted.items()
              if v is not None and current.get(k) != v}
    to_delete = sorted(k for k, v in wanted.items()
                       if v is None and k in current)
    return to_set, to_delete


def _flavor_changes(conn, flavor_name, tier):
    compute = conn.compute
    flavor = compute.find_flavor(flavor_name, ignore_missing=True)
    if flavor is None:
        raise exception.NotFound(what='flavor %s' % flavor_name)
    current = compute.fetch_flavor_extra_specs(flavor).extra_specs
    to_set, to_delete = _diff(current, wanted_flavor_specs(tier))
    changes = []
    if to_set:
        changes.append(Change(
            'flavor %s: set %s' % (flavor_name, _show(to_set)),
            lambda: compute.create_flavor_extra_specs(flavor, to_set)))
    for key in to_delete:
        changes.append(Change(
            'flavor %s: unset %s' % (flavor_name, key),
            lambda key=key: compute.delete_flavor_extra_specs_property(
                flavor, key)))
    return changes


def _show(specs):
    return ', '.join('%s=%s' % kv for kv in sorted(specs.items()))


def _qos_changes(conn, name, tier):
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
    if to_set:
        changes.append(Change(
            'QoS spec %s: set %s' % (name, _show(to_set)),
            lambda: storage.update_qos_spec(qos, **to_set)))
    if to_delete:
        changes.append(Change(
            'QoS spec %s: unset %s' % (name, ', '.join(to_delete)),
            lambda: storage.delete_qos_spec_metadata(qos, to_delete)))
    return changes


def _type_changes(conn, name, tier):
    storage = conn.block_storage
    vtype = storage.find_type(name, ignore_missing=True)
    if vtype is None:
        return [Change(
            'volume type %s: create, %s=%s' % (name, TIER_KEY, tier['name']),
            lambda: storage.create_type(
                name=name, description='iotguard tier %s' % tier['name'],
                extra_specs={TIER_KEY: tier['name']}))]
    if (vtype.extra_specs or {}).get(TIER_KEY) != tier['name']:
        return [Change(
            'volume type %s: set %s=%s' % (name, TIER_KEY, tier['name']),
            lambda: storage.update_type_extra_specs(
                vtype, **{TIER_KEY: tier['name']}))]
    return []


def _association_changes(conn, name):
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

    def associate():
        new_qos = storage.find_qos_spec(name, ignore_missing=False)
        new_type = storage.find_type(name, ignore_missing=False)
        for other in others:
            storage.disassociate_qos_spec(other, new_type.id)
        storage.associate_qos_spec(new_qos, new_type.id)

    return [Change('volume type %s: associate QoS spec %s%s' % (
        name, name, ''.join(' (instead of %s)' % o.name for o in others)),
        associate)]


def plan(conn, tiers, flavor_tiers, prefix):
    """Every change that would bring Nova and Cinder in step."""
    by_name = {t['name']: t for t in tiers}
    changes = []
    for flavor_name, tier_name in sorted(flavor_tiers.items()):
        if tier_name not in by_name:
            raise exception.NotFound(what='tier %s (of flavor %s)'
                                     % (tier_name, flavor_name))
        changes += _flavor_changes(conn, flavor_name, by_name[tier_name])
    for tier in sorted(tiers, key=lambda t: t['name']):
        name = prefix + tier['name']
        changes += _qos_changes(conn, name, tier)
        changes += _type_changes(conn, name, tier)
        changes += _association_changes(conn, name)
    return changes


def sync(conn, tiers, flavor_tiers, prefix, dry_run=False):
    """Plan and (unless ``dry_run``) apply; returns what changed."""
    changes = plan(conn, tiers, flavor_tiers, prefix)
    if not dry_run:
        for change in changes:
            change.apply()
    return [c.what for c in changes]
