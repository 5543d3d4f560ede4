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

"""A disk's 99th percentile latency, from QEMU's own latency histograms.

libvirt exposes no latency distribution, so this goes through the QEMU
monitor (``libvirt_qemu.qemuMonitorCommand``; libvirt then marks the
domain tainted, ``custom-monitor``): :func:`set_bounds` has QEMU count
a virtio disk's operations in bins (``block-latency-histogram-set`` on
the device's QOM path, ``/machine/peripheral/<alias>/virtio-backend``:
the device's id has no block backend, its virtio-backend child has),
:func:`read` reads every disk's bins (``query-blockstats``). The bins
are cumulative: an interval's percentile comes from the *delta* of two
readings (:func:`delta`, :class:`Intervals`); a reset (QEMU restarted,
the bounds set again) gives no value for that interval.
"""

import collections.abc
import json
import math
from typing import Any

import numpy as np

#: Default bin boundaries (ms): QEMU's bins are under the first, between
#: two, and over the last.
BOUNDS_MS: tuple[float, ...] = (
    1, 2, 5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100, 120, 150,
    200, 250, 300, 400, 500, 750, 1000, 2000, 5000)
#: The operations counted: QEMU's prefixes (``rd_latency_histogram``) and
#: the names of ``block-latency-histogram-set``'s arguments.
OPS = {'rd': 'boundaries-read', 'wr': 'boundaries-write'}
_PERIPHERAL = '/machine/peripheral/'
_BACKEND = '/virtio-backend'

Sequence = collections.abc.Sequence
Counts = Sequence[int] | np.ndarray


class Error(RuntimeError):
    """QEMU refused a monitor command (its answer's ``error``)."""


def _monitor(dom: Any, command: dict[str, Any]) -> Any:
    import libvirt_qemu  # type: ignore[import-not-found]
    answer = json.loads(libvirt_qemu.qemuMonitorCommand(
        dom, json.dumps(command), 0))
    if 'error' in answer:
        raise Error('%s: %s' % (command['execute'], answer['error']))
    return answer['return']


def set_bounds(dom: Any, alias: str,
               bounds_ms: Sequence[float] = BOUNDS_MS,
               ops: Sequence[str] = tuple(OPS)) -> None:
    """Have QEMU count the virtio disk ``alias``'s ``ops`` in bins.

    Setting them again starts the counts from 0.
    """
    ns = [int(b * 1e6) for b in bounds_ms]
    _monitor(dom, {'execute': 'block-latency-histogram-set', 'arguments': {
        'id': _PERIPHERAL + alias + _BACKEND,
        **{OPS[op]: ns for op in ops}}})


def read(dom: Any, ops: Sequence[str] = tuple(OPS)
         ) -> dict[str, np.ndarray]:
    """``{alias: counts}`` of the domain's disks that have bins.

    ``counts``: the bins of ``ops`` added up (the same bounds); a disk
    with none of them set is left out.
    """
    out = {}
    for device in _monitor(dom, {'execute': 'query-blockstats'}):
        stats = device.get('stats', {})
        bins = [stats[op + '_latency_histogram']['bins'] for op in ops
                if op + '_latency_histogram' in stats]
        if not bins or len({len(b) for b in bins}) > 1:
            continue
        qdev = device.get('qdev') or device.get('device', '')
        alias = qdev.removeprefix(_PERIPHERAL).removesuffix(_BACKEND)
        out[alias] = np.asarray(bins, np.int64).sum(axis=0)
    return out


def delta(before: Counts, after: Counts) -> np.ndarray | None:
    """The counts of the operations between two readings, or None.

    None when the counters were reset between them (a bin lower than it
    was, or other bins): no value, never a negative count.
    """
    b, a = np.asarray(before, np.int64), np.asarray(after, np.int64)
    if a.shape != b.shape or (a < b).any():
        return None
    return a - b


def p99_ms(counts: Counts, bounds_ms: Sequence[float] = BOUNDS_MS) -> float:
    """The 99th percentile of a histogram's counts (ms), or nan if empty.

    The rank ``0.99 x n`` is found in its bin and interpolated linearly
    between the bin's boundaries (the first bin from 0; in the last, open
    one, its lower boundary: at least that).
    """
    c = np.asarray(counts, dtype=float)
    total = c.sum()
    if total <= 0:
        return math.nan
    rank = 0.99 * total
    cum = np.cumsum(c)
    k = int(np.searchsorted(cum, rank))
    if k >= len(bounds_ms):
        return float(bounds_ms[-1])
    edges = (0.0, *bounds_ms)
    inside = (rank - (cum[k] - c[k])) / c[k]
    return float(edges[k] + inside * (edges[k + 1] - edges[k]))


class Intervals:
    """Each disk's p99 over the interval since its previous reading."""

    def __init__(self, bounds_ms: Sequence[float] = BOUNDS_MS) -> None:
        self.bounds_ms = bounds_ms
        self._last: dict[Any, np.ndarray] = {}

    def p99_ms(self, key: Any, counts: Counts) -> float:
        """The p99 since ``key``'s last reading; nan: none, or no value.

        No value: the first reading, a reset, no operation between, bins
        of other bounds than these (another client set the histogram).
        """
        now = np.asarray(counts, np.int64)
        before, self._last[key] = self._last.get(key), now
        moved = (None if before is None or len(now) != len(self.bounds_ms) + 1
                 else delta(before, now))
        return math.nan if moved is None else p99_ms(moved, self.bounds_ms)

    def reset(self, key: Any) -> None:
        """Drop ``key``'s last reading (its counts were set again)."""
        self._last.pop(key, None)

    def forget(self, keep: Any) -> None:
        """Drop the readings of keys not in ``keep``."""
        for key in self._last.keys() - set(keep):
            del self._last[key]
