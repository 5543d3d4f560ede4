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

"""The cap wire format, shared by the controller and the agents.

A cap is a :class:`Cap` record; on the wire (``apply_caps``) its
:meth:`Cap.to_wire` dict::

    {"instance_uuid": "<nova instance uuid>", "dev": "vda",
     "limits": {"total_iops_sec": 500, "total_bytes_sec": 52428800},
     "lease_expires_at": 1795000000.0,     # UNIX time, seconds (UTC)
     "decision_id": "<uuid of the audited decision>"}

and :meth:`Cap.from_wire` the one way back, checked. A disk is a
:class:`Disk` (``release_caps`` sends its wire form). Their JSON schemas
(:data:`CAP_SCHEMA`, :data:`DISK_SCHEMA`) are generated from the records'
fields (:func:`record_schema`), so a field is declared once.

``limits`` holds libvirt iotune keys (the same keys Nova's flavor
``quota:disk_*`` extra specs set): the six base keys and their ``*_max``
burst forms; integers, ``0`` means "no limit", a missing key is ``0``.
A consistent set (:func:`check_limits`):

* ``total_X`` is never combined with ``read_X``/``write_X`` of the same kind
  (``bytes_sec`` or ``iops_sec``): libvirt refuses it, and QEMU silently
  drops the read/write values when a total is set;
* a burst ``X_max`` needs its base ``X`` and is never below it.

:func:`effective` combines a cap with a disk's static limits (the values
Nova or Cinder put in the domain XML): the one rule the agent applies and
the simulator's throttles enforce. Pure module: no oslo, no libvirt.
"""

import collections.abc
import dataclasses
import math
from typing import Any
from typing import cast

import jsonschema
from jsonschema import protocols

from iotguard import exception

KINDS = ('bytes_sec', 'iops_sec')
DIRECTIONS = ('total', 'read', 'write')
BASE_KEYS = tuple('%s_%s' % (d, k) for k in KINDS for d in DIRECTIONS)
MAX_KEYS = tuple(key + '_max' for key in BASE_KEYS)
IOTUNE_KEYS = BASE_KEYS + MAX_KEYS

#: libvirt takes unsigned long long, QEMU int64.
_MAX_VALUE = 2 ** 63 - 1

Schema = dict[str, Any]
#: An iotune set as given (0 or missing: no limit).
Limits = collections.abc.Mapping[str, float]
_UUID = ('^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-'
         '[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$')

LIMITS_SCHEMA: Schema = {
    'type': 'object',
    'properties': {key: {'type': 'integer', 'minimum': 0,
                         'maximum': _MAX_VALUE} for key in IOTUNE_KEYS},
    'additionalProperties': False,
}


def _field(schema: Schema | None, required: bool = True,
           default: Any = dataclasses.MISSING) -> Any:
    """A record's field and its JSON schema (see :func:`record_schema`).

    ``schema`` None: the field is not on the wire's schema.
    """
    return dataclasses.field(default=default, metadata={
        'schema': schema, 'required': required})


def record_schema(record: type, closed: bool = True) -> Schema:
    """The JSON schema of a record's wire form, from its fields.

    ``closed``: no other property is allowed.
    """
    fields = [f for f in dataclasses.fields(record)
              if f.metadata['schema'] is not None]
    schema: Schema = {
        'type': 'object',
        'properties': {f.name: f.metadata['schema'] for f in fields},
        'required': [f.name for f in fields if f.metadata['required']],
    }
    if closed:
        schema['additionalProperties'] = False
    return schema


_UUID_SCHEMA: Schema = {'type': 'string', 'pattern': _UUID}
_DEV_SCHEMA: Schema = {'type': 'string',
                       'pattern': '^[a-zA-Z][a-zA-Z0-9_-]{0,31}$'}


@dataclasses.dataclass(frozen=True)
class Disk:
    """One disk of an instance: ``release_caps``' entry."""

    instance_uuid: str = _field(_UUID_SCHEMA)
    dev: str = _field(_DEV_SCHEMA)

    def to_wire(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, obj: object) -> 'Disk':
        """The disk of a wire dict, or raise InvalidCap (the reason)."""
        valid = _checked(_disk_validator, obj)
        return cls(valid['instance_uuid'], valid['dev'])


@dataclasses.dataclass(frozen=True)
class Cap:
    """A dynamic cap on one disk, with its lease: ``apply_caps``' entry.

    ``limits``: iotune keys (0 or missing: no limit); ``decision_id``: the
    audited decision that set it (None: none recorded).
    """

    instance_uuid: str = _field(_UUID_SCHEMA)
    dev: str = _field(_DEV_SCHEMA)
    limits: collections.abc.Mapping[str, int] = _field(LIMITS_SCHEMA)
    lease_expires_at: float = _field(
        {'type': 'number', 'exclusiveMinimum': 0})
    decision_id: str | None = _field(
        {'type': ['string', 'null'], 'maxLength': 255})
    #: the limits replace the disk's static ones while the lease lasts (a
    #: burst above the tier's ceiling); lapsed, the static limits are back
    lift: bool = _field({'type': 'boolean'}, required=False, default=False)

    @property
    def key(self) -> tuple[str, str]:
        return self.instance_uuid, self.dev

    def to_wire(self) -> dict[str, Any]:
        return dict(dataclasses.asdict(self), limits=dict(self.limits))

    @classmethod
    def from_wire(cls, obj: object) -> 'Cap':
        """The cap of a wire dict, or raise InvalidCap (the reason).

        Its ``limits`` then hold all twelve keys (:func:`full`).
        """
        valid = _checked(_cap_validator, obj)
        check_limits(valid['limits'])
        return cls(valid['instance_uuid'], valid['dev'],
                   full(valid['limits']), float(valid['lease_expires_at']),
                   valid['decision_id'], bool(valid.get('lift', False)))


DISK_SCHEMA: Schema = record_schema(Disk, closed=False)
CAP_SCHEMA: Schema = record_schema(Cap)

#: The largest rate (IOPS, bytes/s) or latency (ms) a sample may carry
#: (:func:`iotguard.wire.batch.decode`), far above any device: sums of them
#: over a domain's disks (its load in the admin view, the controller's
#: arithmetic) stay finite.
MAX_RATE = 1e15

_cap_validator = jsonschema.Draft202012Validator(CAP_SCHEMA)
_disk_validator = jsonschema.Draft202012Validator(DISK_SCHEMA)


def _checked(validator: protocols.Validator, obj: Any) -> dict[str, Any]:
    """``obj`` if the schema of ``validator`` takes it, else InvalidCap."""
    error = jsonschema.exceptions.best_match(validator.iter_errors(obj))
    if error is not None:
        where = '/'.join(str(p) for p in error.absolute_path) or '(top)'
        raise exception.InvalidCap(reason='%s: %s' % (where, error.message))
    return cast(dict[str, Any], obj)   # an object, the schema says


def full(limits: Limits) -> dict[str, int]:
    """All twelve keys, missing ones as 0."""
    return {key: int(limits.get(key, 0)) for key in IOTUNE_KEYS}


def check_limits(limits: Limits) -> None:
    """Raise InvalidCap unless ``limits`` is a consistent iotune set."""
    for kind in KINDS:
        total = 'total_' + kind
        for side in ('read_' + kind, 'write_' + kind):
            if ((limits.get(total, 0) or limits.get(total + '_max', 0)) and
                    (limits.get(side, 0) or limits.get(side + '_max', 0))):
                raise exception.InvalidCap(
                    reason='%s cannot be combined with %s' % (total, side))
    for key in BASE_KEYS:
        base, burst = limits.get(key, 0), limits.get(key + '_max', 0)
        if burst and not base:
            raise exception.InvalidCap(
                reason='%s_max=%d needs %s' % (key, burst, key))
        if burst and burst < base:
            raise exception.InvalidCap(
                reason='%s_max=%d is below %s=%d' % (key, burst, key, base))


def inf_if_zero(value: float) -> float:
    """A limit as the core reads it: ``inf`` for "no limit" (0 on the wire).

    :func:`iotguard.policy.base.wire_value` is the way back.
    """
    return value if value > 0 else math.inf


def limit(limits: Limits | None, key: str) -> float:
    """One iotune key of ``limits`` as the core reads it (``inf``: none)."""
    return inf_if_zero(float((limits or {}).get(key, 0)))


def _get(limits: Limits, key: str) -> float:
    """One key of ``limits`` as :func:`inf_if_zero` reads it (no rounding)."""
    return inf_if_zero(limits.get(key, 0))


def ceiling(static: Limits, kind: str) -> float:
    """A disk's static total ceiling of ``kind`` (``inf`` when none).

    ``static`` holds iotune keys; ``kind`` is ``iops_sec`` or
    ``bytes_sec``. Read and write ceilings add up when both are set (one
    of them alone bounds only its direction: no total ceiling).
    """
    total = static.get('total_' + kind, 0)
    if total:
        return float(total)
    read, write = static.get('read_' + kind, 0), static.get('write_' + kind, 0)
    return float(read + write) if read and write else math.inf


def _wire(value: float) -> int:
    return 0 if math.isinf(value) else int(value)


def form(limits: Limits, kind: str) -> str | None:
    """Which keys of ``kind`` a set uses: ``'rw'``, ``'total'`` or None.

    Burst keys count with their base key. A set that mixes both forms
    (which :func:`check_limits` refuses) counts as ``'rw'``: the read/write
    keys are the more specific choice.
    """
    def uses(direction: str) -> bool:
        key = '%s_%s' % (direction, kind)
        return bool(limits.get(key, 0) or limits.get(key + '_max', 0))

    if uses('read') or uses('write'):
        return 'rw'
    if uses('total'):
        return 'total'
    return None


def _mode(limits: Limits, kind: str) -> str | None:
    if limits.get('total_' + kind, 0):
        return 'total'
    if limits.get('read_' + kind, 0) or limits.get('write_' + kind, 0):
        return 'rw'
    return None


def effective(cap: Limits, static: Limits, lift: bool = False
              ) -> dict[str, int]:
    """The iotune set to apply for a cap over a disk's static limits.

    Both are iotune dicts (0: no limit); the result has all twelve keys
    and is consistent. Per kind:

    * no cap: the static limits;
    * the cap and the static limits in the same form (or no static
      limit): the key-wise minimum;
    * a ``total`` cap over read/write static limits: QEMU holds one form
      per kind, so a cap below the sum of the read and write ceilings (a
      missing one: no ceiling) is applied as ``total = min(cap, read +
      write)`` without the per-direction values while it is in force. The
      cap then holds exactly (a ``read = write = cap`` pair would let a
      mixed workload do twice the cap), the disk never gets more in total
      than its ceilings allow, and one direction can pass its own ceiling
      only while the cap is above it. A cap at or above the sum leaves the
      static limits as they are;
    * read/write caps over a ``total`` static limit:
      ``total = min(static total, read cap + write cap)``.

    A burst (``*_max``) is the smaller of the two given bursts of its key,
    never below the base value. A ``lift`` cap (:attr:`Cap.lift`) replaces
    the static limits of each kind it sets.
    """
    if lift:
        static = {k: v for k, v in static.items()
                  if not any(kind in k and _mode(cap, kind) for kind in KINDS)}
    out = dict.fromkeys(IOTUNE_KEYS, 0)
    for kind in KINDS:
        keys = total, read, write = ['%s_%s' % (d, kind) for d in DIRECTIONS]
        s_mode, c_mode = _mode(static, kind), _mode(cap, kind)
        if c_mode is None or (
                s_mode == 'rw' and c_mode == 'total' and _get(cap, total)
                >= _get(static, read) + _get(static, write)):
            source = {k: _get(static, k) for k in keys}
        elif s_mode is None or s_mode == c_mode:
            source = {k: min(_get(static, k), _get(cap, k)) for k in keys}
        elif s_mode == 'rw':
            source = {total: _get(cap, total), read: math.inf,
                      write: math.inf}
        else:
            source = {total: min(_get(static, total),
                                 _get(cap, read) + _get(cap, write)),
                      read: math.inf, write: math.inf}
        for key, value in source.items():
            base = _wire(value)
            out[key] = base
            if base:
                burst = min(_get(static, key + '_max'),
                            _get(cap, key + '_max'))
                out[key + '_max'] = max(base, _wire(burst)) if \
                    math.isfinite(burst) else 0
    return out


def with_bursts(limits: Limits) -> dict[str, int]:
    """A full set where every set base key has ``*_max`` >= its value.

    The libvirt test driver compares every value with its burst, 0
    included (QEMU reads 0 as "no burst"): this set passes both.
    """
    out = full(limits)
    for key in BASE_KEYS:
        if out[key]:
            out[key + '_max'] = max(out[key + '_max'], out[key])
        else:
            out[key + '_max'] = 0
    return out
