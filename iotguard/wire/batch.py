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

"""Samples of some disks in columns: the one sample contract.

Part of the contract the agent and the controller share. A
:class:`Batch` is the only form of a sample: the agent builds it from its
arrays (:meth:`Batch.of_pass`), the other sources (Ceilometer, Gnocchi),
the benchmarks and the tests disk by disk (:meth:`Batch.of_rows`); the
controller routes it (:meth:`Batch.take`, :func:`merge`) and stores it.
On the wire (``report_samples`` and ``store_samples``) it is one list per
field, by position (:meth:`Batch.to_wire`)::

    {"timestamp": 1795000000.0,      # UNIX time of the host's reading
     "disks": {
        "instance_uuid": ["...", ...], "dev": ["vda", ...],
        "volume_id": [null, ...], "project_id": ["...", ...],
        "interval_s": [5.01, ...],   # the measured interval of each disk
        "gap": [null, ...],          # why a disk has no rates, or null
        "read_iops": [12.5, ...],    # ... every rate of RATES (null: none)
        "static_iops_sec": [500, ...],   # the static ceilings, 0: none
        "static_bytes_sec": [0, ...],
        "timestamp": [...],          # only when the disks' times differ
        "urgent": [3, ...],          # only when some disk's demand rose
        "p99_ms": [4.2, null, ...]}} # only when some disk has one

Every list has one entry per disk but ``urgent``: the positions, in
increasing order, of the disks whose demand rose since the host's last
pass (:func:`iotguard.wire.rates.rising`; controller RPC API 1.1), on
which the controller may decide their domain at once. ``p99_ms``: each
disk's 99th percentile latency over the interval, from QEMU's latency
histograms (``[agent] latency_histograms``; null: not measured;
controller RPC API 1.2).

:func:`decode` is the one check of a
sample: it checks a whole batch at once (lengths, types, patterns, finite
numbers in range) and returns a :class:`Batch` of NumPy columns; a batch
with one bad value is refused whole. :meth:`Batch.to_wire` and
:func:`decode` are the only code that knows this layout.

A batch carries what the controller reads and nothing else: the rates
its decision reads, each disk's static ceilings (the total IOPS and
bytes/s of :func:`iotguard.wire.caps.ceiling`, "no limit" as ``inf`` in the
record and 0 on the wire), and the volume and project the controller
needs to record an unknown image-backed disk. Pure module: no oslo.
"""

import collections.abc
import dataclasses
import math
import re
import typing
from typing import Any

import numpy as np
import numpy.typing as npt

from iotguard import exception
from iotguard.wire import caps
from iotguard.wire import rates

FloatArray = npt.NDArray[np.float64]

RATES = rates.RATE_FIELDS
#: :class:`iotguard.wire.rates.Columns` (``Batch.rates`` hides the module).
RateColumns = rates.Columns
#: The static ceilings of a disk, on the wire as integers, 0: no limit.
CEILINGS = ('static_iops_sec', 'static_bytes_sec')
#: The per-disk lists of the wire, in the order :meth:`Batch.to_wire`
#: writes them (then ``timestamp`` when the disks' times differ).
STRINGS = ('instance_uuid', 'dev', 'volume_id', 'project_id', 'gap')
WIRE_LISTS = STRINGS + ('interval_s',) + RATES + CEILINGS
#: A list of each disk's own time of reading, in a batch merged from
#: several hosts' (:func:`merge`); else the batch's ``timestamp``.
STAMPS = 'timestamp'
#: The positions of the urgent disks (RPC API 1.1), when there are some.
URGENT = 'urgent'
#: Each disk's 99th percentile latency (RPC API 1.2), when some have one.
P99 = 'p99_ms'
#: The largest percentile taken (ms): an hour.
MAX_P99_MS = 3.6e6

_PATTERNS = {
    'instance_uuid': caps.DISK_SCHEMA['properties']['instance_uuid'][
        'pattern'],
    'dev': caps.DISK_SCHEMA['properties']['dev']['pattern']}
#: The largest static ceiling (libvirt takes unsigned long long, QEMU
#: int64).
MAX_CEILING = caps.LIMITS_SCHEMA['properties']['total_iops_sec']['maximum']

#: Decimals :meth:`Batch.to_wire` sends of each rate: the counters move by
#: whole operations and bytes over intervals of seconds, so the digits
#: beyond are noise; without them a batch is about a third smaller.
RATE_DECIMALS = {'read_iops': 3, 'write_iops': 3, 'read_bytes_sec': 0,
                 'write_bytes_sec': 0, 'read_latency_ms': 3,
                 'write_latency_ms': 3, P99: 3}
#: Decimals of each disk's measured interval (a microsecond).
INTERVAL_DECIMALS = 6


def _invalid(where: str, why: str) -> exception.Invalid:
    return exception.Invalid(reason='sample batch: %s: %s' % (where, why))


def ceilings(static: collections.abc.Sequence[caps.Limits | None]
             ) -> FloatArray:
    """The static ceilings of some disks' iotune dicts: ``2 x n``.

    Row 0 the total IOPS, row 1 the total bytes/s
    (:func:`iotguard.wire.caps.ceiling`, ``inf``: none); a disk's None or
    empty dict has none.
    """
    rows = [(caps.ceiling(limits, 'iops_sec'),
             caps.ceiling(limits, 'bytes_sec')) if limits
            else (math.inf, math.inf) for limits in static]
    out: FloatArray = np.array(rows, dtype=np.float64).reshape(
        len(static), 2).T
    return out


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
    static: FloatArray

    @classmethod
    def of(cls, disks: list[tuple[str, str, str | None, str | None,
                                  caps.Limits]]) -> 'Disks':
        """From ``(instance_uuid, dev, volume_id, project_id, static)``."""
        columns = list(map(list, zip(*disks))) if disks else [[]] * 5
        return cls(columns[0], columns[1], columns[2], columns[3],
                   ceilings(columns[4]))

    def __len__(self) -> int:
        return len(self.instance_uuid)


class Row(typing.NamedTuple):
    """One disk's sample, for the sources that build a batch disk by disk.

    ``rates``: by name of :data:`RATES` (a missing one is none; None: no
    rates); ``static``: the disk's static iotune (its ceilings are kept).
    """

    instance_uuid: str
    dev: str
    timestamp: float
    interval_s: float
    gap: str | None = None
    rates: collections.abc.Mapping[str, float | None] | None = None
    static: caps.Limits | None = None
    volume_id: str | None = None
    project_id: str | None = None


@dataclasses.dataclass(frozen=True)
class Batch:
    """Checked samples of some disks, by position (see the module doc).

    ``nan`` stands for "none" in the float columns; ``rates`` has one row
    per name of :data:`RATES`; ``static`` one row per name of
    :data:`CEILINGS` (``inf``: no limit).
    """

    instance_uuid: list[str]
    dev: list[str]
    timestamp: FloatArray
    interval_s: FloatArray
    gap: list[str | None]
    rates: FloatArray
    static: FloatArray
    volume_id: list[str | None]
    project_id: list[str | None]
    #: The batch's time of reading (the wire's ``timestamp``): the
    #: newest of :attr:`timestamp` in a merged batch.
    read_at: float = math.nan
    #: Which disks are urgent (:data:`URGENT`); None: none.
    urgent: npt.NDArray[np.bool_] | None = None
    #: Each disk's p99 latency (:data:`P99`, ``nan``: not measured);
    #: None: none measured.
    p99_ms: FloatArray | None = None

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
            self.static[:, index], pick(self.volume_id),
            pick(self.project_id), self.read_at,
            None if self.urgent is None else self.urgent[index],
            None if self.p99_ms is None else self.p99_ms[index])

    def urgent_rows(self) -> list[int]:
        """The positions of the urgent disks."""
        return ([] if self.urgent is None
                else np.flatnonzero(self.urgent).tolist())

    @classmethod
    def of_pass(cls, timestamp: float, disks: Disks,
                measured: RateColumns,
                urgent: npt.NDArray[np.bool_] | None = None,
                p99_ms: FloatArray | None = None) -> 'Batch':
        """An agent's pass: its disks and rates, read at ``timestamp``."""
        n = len(disks)
        return cls(disks.instance_uuid, disks.dev, np.full(n, timestamp),
                   measured.interval_s, measured.gap_names(),
                   measured.rates, disks.static, disks.volume_id,
                   disks.project_id, timestamp,
                   urgent if urgent is not None and urgent.any() else None,
                   _measured(p99_ms))

    @classmethod
    def of_rows(cls, rows: collections.abc.Sequence[Row]) -> 'Batch':
        """The batch of some disks' samples (the newest is its time)."""
        n = len(rows)
        measured = np.full((len(RATES), n), math.nan)
        for i, row in enumerate(rows):
            if row.rates is not None:
                measured[:, i] = [math.nan if row.rates.get(name) is None
                                  else row.rates[name] for name in RATES]
        stamps = np.array([row.timestamp for row in rows], dtype=np.float64)
        return cls(
            [row.instance_uuid for row in rows], [row.dev for row in rows],
            stamps,
            np.array([row.interval_s for row in rows], dtype=np.float64),
            [row.gap for row in rows], measured,
            ceilings([row.static for row in rows]),
            [row.volume_id for row in rows],
            [row.project_id for row in rows],
            float(stamps.max()) if n else math.nan)

    def to_wire(self) -> dict[str, Any]:
        """The batch's wire form (the module doc), as sent.

        The rates rounded to :data:`RATE_DECIMALS`, the intervals to
        :data:`INTERVAL_DECIMALS`; :func:`decode` gives the record back.
        """
        out: dict[str, Any] = {
            'instance_uuid': list(self.instance_uuid), 'dev': list(self.dev),
            'volume_id': list(self.volume_id),
            'project_id': list(self.project_id), 'gap': list(self.gap),
            'interval_s': _rounded(self.interval_s, INTERVAL_DECIMALS)}
        for name, values in zip(RATES, self.rates):
            out[name] = _rounded(values, RATE_DECIMALS[name])
        for name, values in zip(CEILINGS, self.static):
            out[name] = np.where(np.isinf(values), 0, values).astype(
                np.int64).tolist()
        if len(self) and bool((self.timestamp != self.read_at).any()):
            out[STAMPS] = self.timestamp.tolist()
        if self.urgent_rows():
            out[URGENT] = self.urgent_rows()
        if self.p99_ms is not None:
            out[P99] = _rounded(self.p99_ms, RATE_DECIMALS[P99])
        return {'timestamp': self.read_at, 'disks': out}


def _measured(p99_ms: FloatArray | None) -> FloatArray | None:
    """``p99_ms``, or None when it has no value."""
    return (p99_ms if p99_ms is not None and not np.isnan(p99_ms).all()
            else None)


def _rounded(values: FloatArray, decimals: int) -> list[float | None]:
    """``values`` to ``decimals`` as the shortest floats, ``nan``: None."""
    scale = 10.0 ** decimals
    out: list[float | None] = (np.rint(values * scale) / scale).tolist()
    for i in np.flatnonzero(np.isnan(values)).tolist():
        out[i] = None
    return out


def merge(batches: collections.abc.Sequence[Batch]) -> Batch:
    """One batch of the disks of several (a controller's routed shares).

    Each disk keeps its own batch's time of reading.
    """
    def joined(name: str) -> list[Any]:
        return [v for b in batches for v in getattr(b, name)]

    def stacked(name: str, *rows: int) -> FloatArray:
        """The columns of every batch, after none (``rows`` of them)."""
        out: FloatArray = np.concatenate([np.zeros(rows + (0,))] + [
            getattr(b, name) for b in batches], axis=-1)
        return out

    urgent = (np.concatenate([np.zeros(0, dtype=bool)] + [
        np.zeros(len(b), dtype=bool) if b.urgent is None else b.urgent
        for b in batches]) if any(b.urgent is not None for b in batches)
        else None)
    p99 = (np.concatenate([np.zeros(0)] + [
        np.full(len(b), math.nan) if b.p99_ms is None else b.p99_ms
        for b in batches]) if any(b.p99_ms is not None for b in batches)
        else None)
    return Batch(
        joined('instance_uuid'), joined('dev'), stacked('timestamp'),
        stacked('interval_s'), joined('gap'), stacked('rates', len(RATES)),
        stacked('static', len(CEILINGS)), joined('volume_id'),
        joined('project_id'),
        max((b.read_at for b in batches), default=math.nan), urgent, p99)


# -- decoding ---------------------------------------------------------------

def _list(disks: dict[str, Any], name: str, n: int | None) -> list[Any]:
    values = disks.get(name)
    if type(values) is not list:
        raise _invalid(name, 'not a list')
    if n is not None and len(values) != n:
        raise _invalid(name, '%d values for %d disks' % (len(values), n))
    return values


def _one_pattern(pattern: str) -> re.Pattern[str]:
    """A pattern matching the values of a column joined by line breaks."""
    one = pattern.lstrip('^').rstrip('$')
    return re.compile('(?:%s)(?:\n(?:%s))*' % (one, one))


_JOINED = {name: _one_pattern(p) for name, p in _PATTERNS.items()}


def _typed(name: str, values: list[Any], kinds: set[type], what: str,
           nullable: bool) -> None:
    wrong = set(map(type, values)) - kinds - ({type(None)} if nullable
                                              else set())
    if wrong:
        raise _invalid(name, 'not %s: %s' % (what, ', '.join(
            sorted(t.__name__ for t in wrong))))


def _strings(name: str, values: list[Any], nullable: bool) -> None:
    _typed(name, values, {str}, 'a string', nullable)
    pattern = _JOINED.get(name)
    if pattern is not None and values:
        # one match over all of them: no value may hold the separator
        joined = '\n'.join(values)
        if (joined.count('\n') != len(values) - 1
                or not pattern.fullmatch(joined)):
            raise _invalid(name, 'does not match %s' % _PATTERNS[name])


def _numbers(names: list[str], lists: list[list[Any]], nullable: bool,
             low: float, high: float) -> FloatArray:
    """Some columns of numbers, checked at once: a ``len(names) x n`` array.

    ``None`` becomes ``nan`` where ``nullable``; every other value is a
    finite number within ``[low, high]``.
    """
    for name, values in zip(names, lists):
        _typed(name, values, {int, float}, 'a number', nullable)
    try:
        array = np.array(lists, dtype=np.float64).reshape(
            len(lists), len(lists[0]) if lists else 0)
    except OverflowError:     # an integer too large for a float
        raise _invalid('(number)', 'out of range')
    nones = np.array([values.count(None) if nullable else 0
                      for values in lists], dtype=np.int64)
    with np.errstate(invalid='ignore'):
        bad = (((array < low) | (array > high)).any(axis=1)
               | ((~np.isfinite(array)).sum(axis=1) != nones))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _invalid(names[i], 'not a finite number within [%s, %s]'
                       % (low, high))
    return array


def _ceilings(disks: dict[str, Any], n: int) -> FloatArray:
    lists = [_list(disks, name, n) for name in CEILINGS]
    for name, values in zip(CEILINGS, lists):
        _typed(name, values, {int}, 'an integer', False)
        if values and not 0 <= min(values) <= max(values) <= MAX_CEILING:
            raise _invalid(name, 'not within [0, %d]' % MAX_CEILING)
    out: FloatArray = np.array(lists, dtype=np.float64).reshape(
        len(CEILINGS), n)
    out[out == 0] = math.inf
    return out


def decode(wire: object) -> Batch:
    """The :class:`Batch` of a wire batch, or raise Invalid (the reason)."""
    if (type(wire) is not dict or set(wire) != {'timestamp', 'disks'}
            or type(wire['disks']) is not dict):
        raise _invalid('(top)', 'needs {"timestamp", "disks": {...}}')
    stamp = typing.cast(float, wire['timestamp'])
    if type(stamp) not in (int, float) or not math.isfinite(stamp):
        raise _invalid('timestamp', 'not a finite number')
    disks = wire['disks']
    unknown = set(disks) - set(WIRE_LISTS + (STAMPS, URGENT, P99))
    if unknown:
        raise _invalid('disks', 'unknown fields: %s' % ', '.join(
            sorted(map(str, unknown))))
    n = len(_list(disks, 'instance_uuid', None))
    strings = {name: _list(disks, name, n) for name in STRINGS}
    for name, values in strings.items():
        _strings(name, values, nullable=name not in _PATTERNS)
    interval = _numbers(['interval_s'], [_list(disks, 'interval_s', n)],
                        False, -math.inf, math.inf)[0]
    measured = _numbers(list(RATES), [_list(disks, name, n)
                                      for name in RATES],
                        True, 0.0, caps.MAX_RATE)
    if disks.get(STAMPS) is None:
        stamps = np.full(n, float(stamp))
    else:
        stamps = _numbers([STAMPS], [_list(disks, STAMPS, n)], False,
                          -math.inf, math.inf)[0]
    return Batch(
        strings['instance_uuid'], strings['dev'], stamps, interval,
        strings['gap'], measured, _ceilings(disks, n),
        strings['volume_id'], strings['project_id'], float(stamp),
        _urgent(disks, n), None if disks.get(P99) is None else _measured(
            _numbers([P99], [_list(disks, P99, n)], True, 0.0,
                     MAX_P99_MS)[0]))


def _urgent(disks: dict[str, Any], n: int) -> npt.NDArray[np.bool_] | None:
    """The urgent disks of :data:`URGENT` (positions), or None."""
    if disks.get(URGENT) is None:
        return None
    rows = _list(disks, URGENT, None)
    _typed(URGENT, rows, {int}, 'an integer', False)
    if rows and not (0 <= rows[0] and rows[-1] < n and all(
            a < b for a, b in zip(rows, rows[1:]))):
        raise _invalid(URGENT, 'not increasing positions within [0, %d)'
                       % n)
    out = np.zeros(n, dtype=bool)
    out[rows] = True
    return out
