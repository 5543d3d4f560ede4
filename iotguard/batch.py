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

"""A host's samples in columns: the ``report_samples`` batch of RPC 1.1.

Part of the contract the agent and the controller share. Where RPC 1.0
sends one dict per disk (:data:`iotguard.caps.SAMPLE_SCHEMA`), 1.1 sends
one list per field, by position::

    {"timestamp": 1795000000.0,      # UNIX time of the host's reading
     "interval_s": 5.0,              # the agent's sampling interval
     "disks": {
        "instance_uuid": ["...", ...], "dev": ["vda", ...],
        "volume_id": [null, ...], "project_id": ["...", ...],
        "interval_s": [5.01, ...],   # the measured interval of each disk
        "gap": [null, ...],          # why a disk has no rates, or null
        "read_iops": [12.5, ...],    # ... every rate of SAMPLE_SCHEMA
        "static": {"total_iops_sec": [500, ...]},  # 0: no limit
        "cap": {"total_iops_sec": [100, ...]},
        "lease_expires_at": [null, ...],  # null: no cap in force
        "decision_id": [null, ...]}}

Every list has one entry per disk. The fields, their types and bounds
are those of the per-disk form, read from :data:`iotguard.caps.
SAMPLE_SCHEMA` (and :data:`iotguard.caps.LIMITS_SCHEMA` for each iotune
key of ``static`` and ``cap``), so the schema is written once;
:data:`COLUMNS_SCHEMA` is generated from it. :func:`decode` checks a
whole batch at once (lengths, types, patterns, finite numbers in range)
and returns a :class:`Batch` of NumPy columns; a batch with one bad
value is refused whole. It is a little stricter than the schema: no
string may hold a line break (the schema's ``$`` lets one trailing
newline through) and an iotune value is an integer, never ``1.0``.
:meth:`Batch.of_pass` is the agent's side of the same record and
:meth:`Batch.to_wire` its wire form (as :class:`iotguard.caps.Cap`'s);
:func:`to_samples` turns a batch into the 1.0 form for an older
controller. Pure module: no oslo.
"""

import dataclasses
import functools
import math
import re
import typing
from typing import Any

import numpy as np
import numpy.typing as npt

from iotguard import caps
from iotguard import exception
from iotguard import rates

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

RATES = rates.RATE_FIELDS
#: What :meth:`iotguard.rates.Table.update` gives (``Batch.rates`` hides
#: the module's name in the class).
RateColumns = rates.Columns
#: The per-disk fields of the 1.0 form that are lists here (``timestamp``
#: is the batch's; ``static`` and ``cap`` are a list per iotune key).
STRINGS = ('instance_uuid', 'dev', 'volume_id', 'project_id', 'gap',
           'decision_id')
NUMBERS = ('interval_s',) + RATES + ('lease_expires_at',)
LIMITS = ('static', 'cap')
#: A list of each disk's own time of reading, in a batch merged from
#: several hosts' (:func:`merge`); else the batch's ``timestamp``.
STAMPS = 'timestamp'
#: Lists a batch may leave out (all null then).
OPTIONAL = frozenset(('volume_id', 'project_id', 'interval_s',
                      'lease_expires_at', 'decision_id'))

_PROPERTIES = caps.SAMPLE_SCHEMA['properties']
_LIMIT_ITEM = caps.LIMITS_SCHEMA['properties']['total_iops_sec']


def _array_of(item: caps.Schema) -> caps.Schema:
    return {'type': 'array', 'items': item}


#: The 1.1 batch as a JSON schema, generated from the per-disk one (for
#: documentation and tests; :func:`decode` applies the same rules at once).
COLUMNS_SCHEMA: caps.Schema = {
    'type': 'object',
    'properties': {
        'timestamp': _PROPERTIES['timestamp'],
        'interval_s': _PROPERTIES['interval_s'],
        'disks': {
            'type': 'object',
            'properties': dict(
                {name: _array_of(_PROPERTIES[name])
                 for name in STRINGS + NUMBERS + (STAMPS,)},
                **{name: {'type': 'object',
                          'properties': {key: _array_of(_LIMIT_ITEM)
                                         for key in caps.IOTUNE_KEYS},
                          'additionalProperties': False}
                   for name in LIMITS}),
            'required': sorted(set(STRINGS + NUMBERS + LIMITS) - OPTIONAL),
        },
    },
    'required': ['timestamp', 'disks'],
}

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    'string': (str,), 'number': (int, float), 'integer': (int,),
    'null': (type(None),)}


@functools.lru_cache
def _python_types(kinds: str | tuple[str, ...]) -> frozenset[type]:
    names = [kinds] if isinstance(kinds, str) else kinds
    return frozenset(t for name in names for t in _JSON_TYPES[name])


def _types(schema: caps.Schema) -> frozenset[type]:
    kinds = schema['type']
    return _python_types(kinds if isinstance(kinds, str) else tuple(kinds))


def _invalid(where: str, why: str) -> exception.Invalid:
    return exception.Invalid(reason='sample batch: %s: %s' % (where, why))


def _list(disks: dict[str, Any], name: str, n: int | None) -> list[Any]:
    values = disks.get(name)
    if values is None and name in OPTIONAL and n is not None:
        return [None] * n
    if type(values) is not list:
        raise _invalid(name, 'not a list')
    if n is not None and len(values) != n:
        raise _invalid(name, '%d values for %d disks' % (len(values), n))
    return values


def _check_types(where: str, values: list[Any], schema: caps.Schema) -> None:
    wrong = set(map(type, values)) - _types(schema)
    if wrong:
        raise _invalid(where, 'not %s: %s' % (
            schema['type'], ', '.join(sorted(t.__name__ for t in wrong))))


def _check_pattern(where: str, values: list[Any], schema: caps.Schema,
                   pattern: re.Pattern[str] | None) -> None:
    if pattern is None:
        return
    present = [v for v in values if v is not None]
    # one match over all of them: no value may hold the separator
    joined = '\n'.join(present)
    if present and (joined.count('\n') != len(present) - 1
                    or not pattern.fullmatch(joined)):
        raise _invalid(where, 'does not match %s' % schema['pattern'])


def _pattern(schema: caps.Schema) -> re.Pattern[str] | None:
    if 'pattern' not in schema:
        return None
    one = schema['pattern'].lstrip('^').rstrip('$')
    return re.compile('(?:%s)(?:\n(?:%s))*' % (one, one))


_PATTERNS = {name: _pattern(_PROPERTIES[name]) for name in STRINGS}


def _numbers(names: list[str], lists: list[list[Any]],
             schemas: list[caps.Schema],
             dtype: type[np.float64] | type[np.int64]) -> Any:
    """Some columns of numbers, checked at once: a ``len(names) x n`` array.

    ``None`` becomes ``nan`` (where the schema allows it).
    """
    for name, values, schema in zip(names, lists, schemas):
        _check_types(name, values, schema)
    if not lists:
        return np.zeros((0, 0), dtype=dtype)
    try:
        array = np.array(lists, dtype=dtype)
    except (OverflowError, ValueError, TypeError):
        for name, values in zip(names, lists):
            try:
                np.array(values, dtype=dtype)
            except (OverflowError, ValueError, TypeError):
                raise _invalid(name, 'out of range')
        raise
    if dtype is np.float64:
        bad = ~np.isfinite(array)
        if bad.any():
            for name, values, count in zip(names, lists, bad.sum(axis=1)):
                if count and count != values.count(None):
                    raise _invalid(name, 'not a finite number')
    low = np.array([s.get('minimum', -math.inf) for s in schemas])
    high = np.array([s.get('maximum', math.inf) for s in schemas])
    with np.errstate(invalid='ignore'):
        out = ((array < low[:, None]) | (array > high[:, None])).any(axis=1)
    if out.any():
        i = int(np.flatnonzero(out)[0])
        raise _invalid(names[i], 'not within [%s, %s]' % (
            schemas[i].get('minimum'), schemas[i].get('maximum')))
    return array


def _limits(disks: dict[str, Any], name: str, n: int) -> IntArray:
    given = disks.get(name)
    if type(given) is not dict:
        raise _invalid(name, 'not an object of iotune keys')
    unknown = set(given) - set(caps.IOTUNE_KEYS)
    if unknown:
        raise _invalid(name, 'unknown keys: %s' % ', '.join(
            sorted(map(str, unknown))))
    out = np.zeros((len(caps.IOTUNE_KEYS), n), dtype=np.int64)
    rows = [i for i, key in enumerate(caps.IOTUNE_KEYS) if key in given]
    if rows:
        keys = [caps.IOTUNE_KEYS[i] for i in rows]
        out[rows] = _numbers(['%s/%s' % (name, key) for key in keys],
                             [_list(given, key, n) for key in keys],
                             [_LIMIT_ITEM] * len(keys), np.int64)
    return out


#: Decimals :meth:`Batch.to_wire` sends of each rate (:data:`RATES`): a
#: thousandth of an operation per second and of a millisecond, whole
#: bytes per second. The counters move by whole operations and bytes over
#: intervals of seconds, so the digits beyond are noise; without them a
#: batch is about a third smaller and faster to encode and decode.
RATE_DECIMALS = {'read_iops': 3, 'write_iops': 3, 'read_bytes_sec': 0,
                 'write_bytes_sec': 0, 'read_latency_ms': 3,
                 'write_latency_ms': 3, 'flush_ops': 3}
#: Decimals of each disk's measured interval (a microsecond).
INTERVAL_DECIMALS = 6


#: The row of each iotune key in a batch's ``static`` and ``cap``.
KEY_ROW = {key: i for i, key in enumerate(caps.IOTUNE_KEYS)}


def limit_matrix(given: list[dict[str, int] | None]) -> IntArray:
    """The ``static`` or ``cap`` rows of some disks' iotune dicts.

    One column per disk, one row per key of :data:`iotguard.caps.
    IOTUNE_KEYS` (0, or a disk's None: no limit).
    """
    width = len(caps.IOTUNE_KEYS)
    rows = [[limits.get(key, 0) for key in caps.IOTUNE_KEYS] if limits
            else [0] * width for limits in given]
    matrix: IntArray = np.array(rows, dtype=np.int64).reshape(
        len(given), width).T
    return matrix


def _none_for_nan(values: FloatArray) -> list[float | None]:
    """``values`` as a list, ``nan`` as None (per disk only for those)."""
    out: list[float | None] = values.tolist()
    for i in np.flatnonzero(np.isnan(values)).tolist():
        out[i] = None
    return out


def _rounded(values: FloatArray, decimals: int) -> list[float | None]:
    """``values`` to ``decimals`` as the shortest floats, ``nan``: None."""
    scale = 10.0 ** decimals
    return _none_for_nan(np.rint(values * scale) / scale)


def _limit_lists(limits: IntArray) -> dict[str, list[int]]:
    """The wire's lists of a matrix of iotune keys: the keys some disk sets."""
    return {key: row.tolist() for key, row in zip(caps.IOTUNE_KEYS, limits)
            if row.any()}


@dataclasses.dataclass(frozen=True)
class Disks:
    """The columns of a batch that change only with the host's disks.

    Built once per listing (:meth:`of`) and reused by
    :meth:`Batch.of_pass` while the same disks come in the same order, so
    a steady pass does nothing per disk for them.
    """

    instance_uuid: list[str]
    dev: list[str]
    volume_id: list[str | None]
    project_id: list[str | None]
    static: IntArray

    @classmethod
    def of(cls, disks: list[tuple[str, str, str | None, str | None,
                                  dict[str, int]]]) -> 'Disks':
        """From ``(instance_uuid, dev, volume_id, project_id, static)``."""
        columns = list(map(list, zip(*disks))) if disks else [[]] * 5
        return cls(columns[0], columns[1], columns[2], columns[3],
                   limit_matrix(columns[4]))

    def __len__(self) -> int:
        return len(self.instance_uuid)


#: A cap in force: ``(position, cap, lease_expires_at, decision_id)``.
InForce = tuple[int, dict[str, int], float, str | None]


@dataclasses.dataclass(frozen=True)
class Batch:
    """Checked samples of some disks, by position (see the module doc).

    ``nan`` stands for "none" in the float columns; ``rates`` has one row
    per name of :data:`RATES`; ``static`` and ``cap`` one row per key of
    :data:`iotguard.caps.IOTUNE_KEYS` (0: no limit); ``capped`` says which
    disks have a cap in force.
    """

    instance_uuid: list[str]
    dev: list[str]
    timestamp: FloatArray
    interval_s: FloatArray
    gap: list[str | None]
    rates: FloatArray
    static: IntArray
    cap: IntArray
    capped: BoolArray
    lease_expires_at: FloatArray
    decision_id: list[str | None]
    volume_id: list[str | None]
    project_id: list[str | None]
    source: list[str | None]
    #: The batch's time of reading (the wire's ``timestamp``): the
    #: newest of :attr:`timestamp` in a merged batch.
    read_at: float = math.nan
    #: The agent's sampling interval (the wire's ``interval_s``), if said.
    sampling_s: float | None = None

    def __len__(self) -> int:
        return len(self.instance_uuid)

    def keys(self) -> list[tuple[str, str]]:
        return list(zip(self.instance_uuid, self.dev))

    def take(self, index: npt.NDArray[np.intp]) -> 'Batch':
        """The disks at ``index`` (positions), in that order."""
        def pick(values: list[Any]) -> list[Any]:
            return [values[i] for i in index.tolist()]

        return Batch(
            pick(self.instance_uuid), pick(self.dev), self.timestamp[index],
            self.interval_s[index], pick(self.gap), self.rates[:, index],
            self.static[:, index], self.cap[:, index], self.capped[index],
            self.lease_expires_at[index], pick(self.decision_id),
            pick(self.volume_id), pick(self.project_id), pick(self.source),
            self.read_at, self.sampling_s)

    @classmethod
    def of_pass(cls, timestamp: float, interval_s: float, disks: Disks,
                measured: RateColumns,
                in_force: list[InForce]) -> 'Batch':
        """An agent's pass: its disks, their rates, the caps in force.

        Nothing is done per disk in Python but for the disks with a cap
        in force.
        """
        n = len(disks)
        lease = np.full(n, math.nan)
        decision: list[str | None] = [None] * n
        cap = np.zeros((len(caps.IOTUNE_KEYS), n), dtype=np.int64)
        for i, _limits, expires, decision_id in in_force:
            lease[i] = expires
            decision[i] = decision_id
        if in_force:
            cap[:, [i for i, *_rest in in_force]] = limit_matrix(
                [limits for _i, limits, *_rest in in_force])
        return cls(disks.instance_uuid, disks.dev, np.full(n, timestamp),
                   measured.interval_s, measured.gap_names(),
                   measured.rates, disks.static, cap, ~np.isnan(lease),
                   lease, decision, disks.volume_id, disks.project_id,
                   [None] * n, timestamp, interval_s)

    def to_wire(self) -> dict[str, Any]:
        """The batch's wire form (RPC 1.1, the module doc), as sent.

        The rates rounded to :data:`RATE_DECIMALS`, the intervals to
        :data:`INTERVAL_DECIMALS`: the counters move by whole operations
        and bytes, the digits beyond are noise (and a third of the
        message). :func:`decode` gives the same record back.
        """
        out: dict[str, Any] = {
            'instance_uuid': list(self.instance_uuid), 'dev': list(self.dev),
            'volume_id': list(self.volume_id),
            'project_id': list(self.project_id), 'gap': list(self.gap),
            'decision_id': list(self.decision_id),
            'interval_s': _rounded(self.interval_s, INTERVAL_DECIMALS),
            'lease_expires_at': _none_for_nan(self.lease_expires_at)}
        for name, values in zip(RATES, self.rates):
            out[name] = _rounded(values, RATE_DECIMALS[name])
        out['static'] = _limit_lists(self.static)
        out['cap'] = _limit_lists(self.cap)
        if len(self) and bool((self.timestamp != self.read_at).any()):
            out[STAMPS] = self.timestamp.tolist()
        wire: dict[str, Any] = {'timestamp': self.read_at}
        if self.sampling_s is not None:
            wire['interval_s'] = self.sampling_s
        wire['disks'] = out
        return wire


def decode(wire: object) -> Batch:
    """The :class:`Batch` of a 1.1 batch, or raise Invalid (the reason).

    The one check of an agent's batch, over all its disks at once.
    """
    try:
        return _decode(wire)
    except OverflowError:     # an integer too large for a float
        raise _invalid('(number)', 'out of range')


def _decode(wire: object) -> Batch:
    if type(wire) is not dict or type(wire.get('disks')) is not dict:
        raise _invalid('(top)', 'needs {"timestamp", "disks": {...}}')
    stamp = typing.cast(float, wire.get('timestamp'))
    if type(stamp) not in (int, float) or not math.isfinite(stamp):
        raise _invalid('timestamp', 'not a finite number')
    sampling = wire.get('interval_s')
    if sampling is not None and (type(sampling) not in (int, float)
                                 or not 0 <= sampling < math.inf):
        raise _invalid('interval_s', 'not a finite number >= 0')
    disks = wire['disks']
    unknown = set(disks) - set(STRINGS + NUMBERS + LIMITS + (STAMPS,))
    if unknown:
        raise _invalid('disks', 'unknown fields: %s' % ', '.join(
            sorted(map(str, unknown))))
    n = len(_list(disks, 'instance_uuid', None))
    strings: dict[str, list[Any]] = {}
    for name in STRINGS:
        values = strings[name] = _list(disks, name, n)
        _check_types(name, values, _PROPERTIES[name])
        _check_pattern(name, values, _PROPERTIES[name], _PATTERNS[name])
    given = [name for name in NUMBERS
             if name not in OPTIONAL or disks.get(name) is not None]
    checked = _numbers(given, [_list(disks, name, n) for name in given],
                       [_PROPERTIES[name] for name in given], np.float64)
    numbers = dict.fromkeys(NUMBERS, np.full(n, math.nan))
    numbers.update(zip(given, checked))
    columns = np.array([numbers[name] for name in RATES]).reshape(
        len(RATES), n)
    lease = numbers['lease_expires_at']
    stamps = (np.full(n, float(stamp)) if disks.get(STAMPS) is None
              else _numbers([STAMPS], [_list(disks, STAMPS, n)],
                            [_PROPERTIES['timestamp']], np.float64)[0])
    return Batch(
        strings['instance_uuid'], strings['dev'], stamps,
        numbers['interval_s'], strings['gap'],
        columns, _limits(disks, 'static', n), _limits(disks, 'cap', n),
        ~np.isnan(lease), lease, strings['decision_id'],
        strings['volume_id'], strings['project_id'], [None] * n,
        float(stamp), None if sampling is None else float(sampling))


#: The per-disk lists of a batch, in the order
#: :class:`iotguard.bench.batches.Builder` writes them (then :data:`LIMITS`).
WIRE_LISTS = ('instance_uuid', 'dev', 'volume_id', 'project_id', 'gap',
              'decision_id', 'interval_s', 'lease_expires_at') + RATES


def limit_columns(given: list[dict[str, int]]) -> dict[str, list[int]]:
    """One list per iotune key some disk sets (0: no limit)."""
    out = {}
    present = set().union(*given)
    for key in caps.IOTUNE_KEYS:
        if key in present:
            column = [limits.get(key, 0) for limits in given]
            if any(column):
                out[key] = column
    return out


def select(wire: dict[str, Any], rows: list[int]) -> dict[str, Any]:
    """The same batch with only the disks at ``rows`` (positions).

    For a batch :func:`decode` accepted (the receiver checks its share
    again).
    """
    def pick(values: Any) -> Any:
        return None if values is None else [values[i] for i in rows]

    out: dict[str, Any] = {}
    for name, values in wire['disks'].items():
        if name in LIMITS:
            out[name] = {key: pick(column) for key, column in values.items()}
        else:
            out[name] = pick(values)
    return dict(wire, disks=out)


def merge(wires: list[dict[str, Any]]) -> dict[str, Any]:
    """One batch of the disks of several (a controller's routed shares).

    Each disk keeps its own batch's time of reading (a ``timestamp``
    list); a list one batch leaves out is null there, an iotune key one
    batch does not set is 0 there. For batches :func:`decode` accepted.
    """
    names: dict[str, None] = {}
    keys: dict[str, dict[str, None]] = {name: {} for name in LIMITS}
    for wire in wires:
        for name, values in wire['disks'].items():
            names[name] = None
            if name in LIMITS:
                keys[name].update(dict.fromkeys(values))
    names.pop(STAMPS, None)
    out: dict[str, Any] = {name: [] for name in names if name not in LIMITS}
    out.update({name: {key: [] for key in keys[name]} for name in LIMITS})
    stamps: list[float] = []
    for wire in wires:
        disks = wire['disks']
        n = len(disks['instance_uuid'])
        given = disks.get(STAMPS)
        stamps.extend([wire['timestamp']] * n if given is None else given)
        for name, column in out.items():
            if name in LIMITS:
                limits = disks.get(name) or {}
                for key, values in column.items():
                    values.extend(limits.get(key) or [0] * n)
            else:
                column.extend(disks.get(name) or [None] * n)
    out[STAMPS] = stamps
    return {'timestamp': max(stamps, default=0.0), 'disks': out}


def size(wire: dict[str, Any]) -> int:
    """How many disks a batch of either form holds."""
    disks = wire['disks']
    return len(disks['instance_uuid'] if type(disks) is dict else disks)


def to_samples(wire: dict[str, Any]) -> dict[str, Any]:
    """The 1.0 form (a dict per disk) of a well-formed 1.1 batch."""
    disks = wire['disks']
    n = len(disks['instance_uuid'])
    lists = {name: disks.get(name) or [None] * n
             for name in STRINGS + NUMBERS}
    out = []
    for i in range(n):
        sample = {name: lists[name][i] for name in STRINGS + NUMBERS}
        sample['timestamp'] = wire['timestamp']
        for name in LIMITS:
            sample[name] = {key: column[i] for key, column
                            in disks[name].items() if column[i]}
        if sample['lease_expires_at'] is None:
            sample['cap'] = None
        out.append(sample)
    return {'timestamp': wire['timestamp'],
            'interval_s': wire.get('interval_s'), 'disks': out}
