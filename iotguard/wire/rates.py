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

"""Cumulative block counters -> per-second rates and latency per op.

Pure: no clock, no I/O. The counters are libvirt's bulk block statistics
(``rd_reqs, rd_bytes, rd_times, wr_reqs, wr_bytes, wr_times, fl_reqs``;
times in nanoseconds, the total spent on those operations), so the mean
latency of one operation over an interval is ``delta times / delta reqs``.
The flush counter gives no rate (nothing reads one); like every counter
it marks a reset when it goes backwards.

A rate needs two readings of the same series. There is no rate, and the
series restarts from the newer reading, when:

* there is no earlier reading (first sample, new disk);
* the interval is zero or negative (clock step, duplicate reading);
* any counter went backwards (guest reboot, volume re-attach, QEMU restart,
  64-bit wrap): a rate over it would be negative or meaningless;
* the interval is longer than ``max_gap_s``: an average over a long hole
  would hide what happened, so it is reported as a gap instead.
"""

import collections.abc
import dataclasses
import math
from typing import Any

import numpy as np
import numpy.typing as npt

COUNTER_KEYS = ('rd_reqs', 'rd_bytes', 'rd_times',
                'wr_reqs', 'wr_bytes', 'wr_times', 'fl_reqs')

#: Why no rate came out of a pair of readings.
GAP_FIRST = 'first'
GAP_INTERVAL = 'interval'
GAP_RESET = 'reset'
GAP_TOO_LONG = 'too_long'

_NS_PER_MS = 1e6

#: A sample older than this many intervals is stale: the controller never
#: acts on it, the agent and the Ceilometer source report a longer hole
#: between two readings as a gap (not an average), and the API shows an
#: agent not heard of for longer as down.
STALE_INTERVALS = 3


@dataclasses.dataclass(frozen=True)
class Reading:
    """The cumulative counters of one disk at one instant (seconds)."""

    at: float
    counters: dict[str, int]


@dataclasses.dataclass(frozen=True)
class Rates:
    """One disk over one interval; latencies are 0.0 without operations."""

    interval_s: float
    read_iops: float
    write_iops: float
    read_bytes_sec: float
    write_bytes_sec: float
    read_latency_ms: float
    write_latency_ms: float

    def as_dict(self) -> dict[str, float]:
        return dataclasses.asdict(self)


#: The names of a sample's rates: every field of :class:`Rates` but the
#: interval, in order.
RATE_FIELDS = tuple(f.name for f in dataclasses.fields(Rates)
                    if f.name != 'interval_s')
#: What a disk's record keeps of its latest rates: the database's columns
#: and the API's ``rates`` view (the latencies of a round's snapshot).
DISK_FIELDS = ('read_iops', 'write_iops', 'read_bytes_sec',
               'write_bytes_sec', 'latency_ms', 'latency_p99_ms')


@dataclasses.dataclass(frozen=True)
class Gap:
    """No rate for this interval, and why (one of the ``GAP_*``)."""

    reason: str
    interval_s: float = 0.0


def latency_ms(times_ns: Any, reqs: Any) -> Any:
    """Mean latency per operation (ms) over an interval; 0.0 without any.

    ``times_ns`` and ``reqs`` are the changes of a time counter (ns spent
    on the operations) and of its request counter, scalars or arrays.
    """
    with np.errstate(divide='ignore', invalid='ignore'):
        return np.where(np.asarray(reqs) > 0,
                        np.divide(times_ns, reqs) / _NS_PER_MS, 0.0)


def compute(prev: Reading | None, cur: Reading,
            max_gap_s: float = float('inf')) -> Rates | Gap:
    """The rates between two readings of one disk, or the gap between them.

    Counters missing from a reading count as 0 (a driver that cannot report
    flushes or times still gives IOPS and bytes/s).
    """
    if prev is None:
        return Gap(GAP_FIRST)
    interval = cur.at - prev.at
    if interval <= 0:
        return Gap(GAP_INTERVAL, interval)
    delta = {}
    for key in COUNTER_KEYS:
        d = cur.counters.get(key, 0) - prev.counters.get(key, 0)
        if d < 0:
            return Gap(GAP_RESET, interval)
        delta[key] = d
    if interval > max_gap_s:
        return Gap(GAP_TOO_LONG, interval)
    return Rates(
        interval_s=interval,
        read_iops=delta['rd_reqs'] / interval,
        write_iops=delta['wr_reqs'] / interval,
        read_bytes_sec=delta['rd_bytes'] / interval,
        write_bytes_sec=delta['wr_bytes'] / interval,
        read_latency_ms=float(latency_ms(delta['rd_times'],
                                         delta['rd_reqs'])),
        write_latency_ms=float(latency_ms(delta['wr_times'],
                                          delta['wr_reqs'])),
    )


class Series:
    """The last reading of every disk; turns new readings into rates.

    Keyed by any hashable disk key. A disk that stops appearing is
    forgotten by :meth:`prune`, so a re-attached disk starts a new series.
    """

    def __init__(self, max_gap_s: float = float('inf')) -> None:
        self.max_gap_s = max_gap_s
        self._last: dict[object, Reading] = {}

    def update(self, key: object, reading: Reading) -> Rates | Gap:
        result = compute(self._last.get(key), reading, self.max_gap_s)
        if not (isinstance(result, Gap) and result.reason == GAP_INTERVAL
                and result.interval_s == 0):
            # A duplicate reading (same instant) keeps the older one, so
            # the next good reading is measured from it; a clock that went
            # backwards restarts the series.
            self._last[key] = reading
        return result

    def prune(self, keep: collections.abc.Iterable[object]) -> None:
        """Forget every disk not in ``keep``."""
        kept = set(keep)
        for key in [k for k in self._last if k not in kept]:
            del self._last[key]


#: The gap reasons by code in :attr:`Columns.gap` (0: a rate, no gap).
GAP_CODES: tuple[str | None, ...] = (None, GAP_FIRST, GAP_INTERVAL,
                                     GAP_RESET, GAP_TOO_LONG)
_FIRST, _INTERVAL, _RESET, _TOO_LONG = 1, 2, 3, 4


def _rows(*keys: str) -> list[int]:
    return [COUNTER_KEYS.index(key) for key in keys]


#: The counters behind the rates of :data:`RATE_FIELDS`: the four per
#: second, then the times and requests of the two latencies.
_PER_S = _rows('rd_reqs', 'wr_reqs', 'rd_bytes', 'wr_bytes')
_TIMES, _REQS = _rows('rd_times', 'wr_times'), _rows('rd_reqs', 'wr_reqs')


@dataclasses.dataclass(frozen=True)
class Readings:
    """The cumulative counters of several disks at one instant.

    What a driver's bulk statistics read gives: ``keys[i]`` is the disk
    of row ``i`` of ``counters`` (``len(keys) x len(COUNTER_KEYS)``, in
    the order of :data:`COUNTER_KEYS`; a counter the driver cannot read
    is 0). Unsigned 64-bit, as libvirt reports them, so a counter that
    wrapped is a reset like any counter that went backwards.
    ``p99_ms``: each disk's 99th percentile latency since the last read
    (``nan``: not measured); None: the driver measures none.
    """

    keys: list[Any]
    counters: npt.NDArray[np.uint64]
    p99_ms: npt.NDArray[np.float64] | None = None

    def as_dict(self) -> dict[Any, dict[str, int]]:
        """``{key: {counter: value}}``, every counter present."""
        return {key: dict(zip(COUNTER_KEYS, row))
                for key, row in zip(self.keys, self.counters.tolist())}

    def take(self, index: npt.NDArray[np.intp]) -> 'Readings':
        """The disks at ``index`` (positions), in that order."""
        return Readings([self.keys[i] for i in index.tolist()],
                        self.counters[index],
                        None if self.p99_ms is None else self.p99_ms[index])


@dataclasses.dataclass(frozen=True)
class Columns:
    """What :meth:`Table.update` computed for each disk of a pass.

    ``interval_s``: as :attr:`Rates.interval_s` or :attr:`Gap.interval_s`
    (0.0 for a first reading); ``gap``: a code of :data:`GAP_CODES`;
    ``rates``: one row per name of :data:`RATE_FIELDS`, ``nan`` where
    there is a gap.
    """

    interval_s: npt.NDArray[np.float64]
    gap: npt.NDArray[np.int8]
    rates: npt.NDArray[np.float64]

    def gap_names(self) -> list[str | None]:
        """The gap reason of each disk (None: it has rates)."""
        out: list[str | None] = [None] * len(self.gap)
        for i in np.flatnonzero(self.gap).tolist():
            out[i] = GAP_CODES[int(self.gap[i])]
        return out


class Table:
    """:class:`Series` for all the disks of a host at once, in NumPy.

    The same rules as :meth:`Series.update`, in a few array operations
    per bulk read: the agent's pass over thousands of disks is then a
    fixed cost. Each disk keeps a slot (a row of the arrays) from its
    first reading until it is pruned; the slots of a list of keys are
    reused while the same keys come in the same order (the steady state).
    Exact as :class:`Series` while counters stay below 2**53 (beyond, a
    latency may differ in the last bit).
    """

    def __init__(self, max_gap_s: float = float('inf')) -> None:
        self.max_gap_s = max_gap_s
        self._slot: dict[Any, int] = {}
        self._free: list[int] = []
        self._at = np.full(0, math.nan)
        self._counters = np.zeros((0, len(COUNTER_KEYS)), dtype=np.uint64)
        self._keys: list[Any] | None = []   # None: slots to look up
        self._slots = np.zeros(0, dtype=np.intp)

    def __len__(self) -> int:
        return len(self._slot)

    def _slots_of(self, keys: list[Any]) -> npt.NDArray[np.intp]:
        if keys == self._keys:
            return self._slots
        slots = []
        for key in keys:
            slot = self._slot.get(key)
            if slot is None:
                slot = self._new_slot()
                self._slot[key] = slot
            slots.append(slot)
        self._keys = list(keys)
        self._slots = np.array(slots, dtype=np.intp)
        return self._slots

    def _new_slot(self) -> int:
        if self._free:
            slot = self._free.pop()
        else:
            slot = len(self._at)
            grow = max(16, slot)
            self._at = np.concatenate([self._at, np.full(grow, math.nan)])
            self._counters = np.concatenate([self._counters, np.zeros(
                (grow, len(COUNTER_KEYS)), dtype=np.uint64)])
            self._free = list(range(slot + grow - 1, slot, -1))
        self._at[slot] = math.nan
        return slot

    def update(self, at: float, readings: Readings) -> Columns:
        """The rates of every disk of ``readings`` (taken at ``at``)."""
        slots = self._slots_of(readings.keys)
        cur = readings.counters
        prev_at = self._at[slots]
        prev = self._counters[slots]
        interval = at - prev_at
        first = np.isnan(prev_at)
        gap = np.where(first, _FIRST, 0).astype(np.int8)
        bad = ~first & (interval <= 0)
        gap[bad] = _INTERVAL
        gap[(gap == 0) & (cur < prev).any(axis=1)] = _RESET
        gap[(gap == 0) & (interval > self.max_gap_s)] = _TOO_LONG
        interval[first] = 0.0
        # A duplicate reading keeps the older one (Series.update).
        kept = ~(bad & (interval == 0))
        self._at[slots[kept]] = at
        self._counters[slots[kept]] = cur[kept]
        ok = gap == 0
        with np.errstate(divide='ignore', invalid='ignore'):
            # Wrapped where a counter went back: those rows are gaps.
            delta = (cur - prev).T.astype(np.float64)
            out = np.vstack([delta[_PER_S] / interval,
                             latency_ms(delta[_TIMES], delta[_REQS])])
        out[:, ~ok] = math.nan
        return Columns(interval, gap, out)

    def prune(self, keep: collections.abc.Iterable[Any]) -> None:
        """Forget every disk not in ``keep``; their slots are reused."""
        if (self._keys is not None and keep == self._keys
                and len(self._keys) == len(self._slot)):
            return      # the steady state: the disks of the last update
        kept = keep if isinstance(keep, (set, frozenset, dict)) else set(keep)
        for key in [k for k in self._slot if k not in kept]:
            self._free.append(self._slot.pop(key))
        self._keys = None


#: A disk below this many operations per second is idle (:func:`rising`).
IDLE_IOPS = 1.0
#: A disk's demand rose when its latency per operation grew this many
#: times over one interval, and by at least ``RISE_MS`` (:func:`rising`).
RISE_RATIO = 2.0
RISE_MS = 1.0


def rising(before: npt.NDArray[np.float64], now: npt.NDArray[np.float64]
           ) -> npt.NDArray[np.bool_]:
    """Which disks' demand rose between two passes: the urgent ones.

    ``before`` and ``now`` are two consecutive passes' :attr:`Columns.rates`
    of the same disks, by position. A disk rose when it went from idle to
    busy (under :data:`IDLE_IOPS`, or a gap: it is new, or restarted, then
    at or above), or when its mean latency per operation grew
    :data:`RISE_RATIO` times and by at least :data:`RISE_MS` (its queue
    filled: a neighbour started, or it asks for more than it gets). A
    disk with a gap now never rose. The
    agent does not know the floors: the controller decides whether an
    urgent disk is short of one (:func:`iotguard.policy.base.short`).
    """
    def ops_latency(r: npt.NDArray[np.float64]
                    ) -> tuple[npt.NDArray[np.float64],
                               npt.NDArray[np.float64]]:
        ops = r[0] + r[1]
        with np.errstate(divide='ignore', invalid='ignore'):
            lat = np.where(ops > 0, (r[0] * r[4] + r[1] * r[5]) / ops, 0.0)
        return ops, lat

    ops0, lat0 = ops_latency(before)
    ops1, lat1 = ops_latency(now)
    gap = np.isnan(before).any(axis=0)
    with np.errstate(invalid='ignore'):
        woke = (gap | (ops0 < IDLE_IOPS)) & (ops1 >= IDLE_IOPS)
        slower = ~gap & (ops0 >= IDLE_IOPS) & (lat1 >= RISE_RATIO * lat0) & (
            lat1 - lat0 >= RISE_MS)
    out: npt.NDArray[np.bool_] = (woke | slower) & ~np.isnan(now).any(axis=0)
    return out
