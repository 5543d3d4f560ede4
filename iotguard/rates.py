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
    flush_ops: float

    def as_dict(self) -> dict[str, float]:
        return dataclasses.asdict(self)

    def values(self) -> tuple[float, float, float, float, float, float,
                              float]:
        """The rates, in the order of :data:`RATE_FIELDS`."""
        return (self.read_iops, self.write_iops, self.read_bytes_sec,
                self.write_bytes_sec, self.read_latency_ms,
                self.write_latency_ms, self.flush_ops)


#: The names of a sample's rates (every field of :class:`Rates` but the
#: interval), in the order of :meth:`Rates.values`.
RATE_FIELDS = tuple(f.name for f in dataclasses.fields(Rates)
                    if f.name != 'interval_s')


@dataclasses.dataclass(frozen=True)
class Gap:
    """No rate for this interval, and why (one of the ``GAP_*``)."""

    reason: str
    interval_s: float = 0.0


def _latency_ms(times_ns: int, reqs: int) -> float:
    return times_ns / reqs / _NS_PER_MS if reqs > 0 else 0.0


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
        read_latency_ms=_latency_ms(delta['rd_times'], delta['rd_reqs']),
        write_latency_ms=_latency_ms(delta['wr_times'], delta['wr_reqs']),
        flush_ops=delta['fl_reqs'] / interval,
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
