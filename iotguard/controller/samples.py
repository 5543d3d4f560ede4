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

"""The controller's in-memory sample store: the latest sample per disk.

Every source (agents' ``report_samples``, Ceilometer, Gnocchi) feeds the
same store with a :class:`iotguard.wire.batch.Batch`
(:meth:`SampleStore.add_batch`); each disk's ``timestamp`` is the
source's own time of measurement (UNIX seconds). The store keeps, per
disk ``(instance_uuid, dev)``, only the newest sample, one row of NumPy
columns, and refuses (logs, and counts in ``rejected``):

* one from the future, more than ``max_skew_s`` after its arrival;
* one already stale on arrival (see below);
* a duplicate, or one not newer than the sample it would replace.

The decision loop reads a domain's rows at once
(:meth:`SampleStore.gather`).

**Staleness.** A sample is stale when it is older than
:data:`iotguard.wire.rates.STALE_INTERVALS` (3) intervals, the interval being
the larger of the controller's decision interval and the sample's own
``interval_s`` (a Ceilometer sample that covers 300 s stays usable
longer than an agent's 5 s one). A policy must never tighten a cap on
stale data; the decision loop flags such disks in the snapshot. A sample
with a ``gap`` (first reading, counter reset after a reboot, ...) has no
rates: it is stored, so it replaces older rates that no longer describe
the disk, and ``gather``'s ``stale`` tells the loop it says nothing
about the load.

**Clocks.** An agent's timestamps are read on its host's clock. The
controller learns each host's offset from its batches and heartbeats
(:class:`Clocks`) and corrects the batches to its own clock as they
arrive, before they are routed or judged (:meth:`Clocks.correct`); the
leases it sends are put back on the host's clock
(:meth:`Clocks.lease_offset`). Ceilometer's and
Gnocchi's samples are taken as they are.

Thread-safe: the RPC server's threads add while the loop reads.
"""

import collections
from collections.abc import Callable
from collections.abc import Sequence
import dataclasses
import math
import threading
import time

import numpy as np
import numpy.typing as npt
from oslo_log import log as logging

from iotguard.policy import base
from iotguard.wire import batch as batch_mod
from iotguard.wire import rates

LOG = logging.getLogger(__name__)

#: Default tolerated clock skew between a source and the controller.
MAX_SKEW_S = 2.0
#: A host's clock offset is the best of its last this many batches.
CLOCK_WINDOW = 8
#: Two batches agree on a host's clock within this many seconds: more
#: than a working broker's jitter, less than any sampling interval.
CLOCK_AGREE_S = 0.5

RATES = batch_mod.RATES

#: The float columns of the store, by row of ``SampleStore._cols``.
_FLOAT_COLUMNS = ('timestamp', 'interval_s') + RATES + (
    'static_iops', 'static_bytes_sec', 'rated', batch_mod.P99)
_NAN = math.nan

Key = tuple[str, str]
Rows = npt.NDArray[np.intp]


class Clocks:
    """Each agent host's clock offset, learned from its batches.

    A batch read at ``stamp`` by the host's clock and received at
    ``received`` by this controller's shows ``stamp - received``: the
    host's offset less the batch's delay (at least 0). The offset taken
    is the highest of the host's last :data:`CLOCK_WINDOW` batches (the
    least delayed: NTP's minimum-delay filter), once two of them agree on
    it within :data:`CLOCK_AGREE_S`; until then the one taken before
    stays (0 for a new host: its samples are judged as they are). So:

    * batches delayed (queued during a network cut, a backlog after a
      restart) are lower and change nothing; still late on the corrected
      clock, they are refused as stale;
    * a clock stepped forward is taken from the second batch after the
      step; a clock stepped back as well, its window emptied at once by
      the first batch older than the one before (the offset of a step
      shorter than a sampling interval ages out of the window);
    * a batch's own delay jitter is what the estimate is short of;
    * an offset within :data:`CLOCK_AGREE_S` is no offset: the host's
      clock is synchronised, what shows is its batches' delay (its
      samples and leases are taken as they are).

    Leases go back on the host's clock with :meth:`lease_offset`: what
    the host's newest batch shows, a stepped clock followed at once; a
    delay only shortens a lease. A batch received more than ``fresh_s``
    ago is no longer the newest word: the host's batches go to another
    controller (several share the agents' queue) or are held up, and the
    one last heard may be a backlog's. The leases then take the least
    delayed batch of the window (a lease no longer than it should be:
    the window is emptied by a step back beyond a batch's interval).
    A heartbeat's stamp is its batch's: the same reading twice is taken
    once.
    """

    def __init__(self, warn_s: float = MAX_SKEW_S,
                 fresh_s: float = math.inf,
                 clock: Callable[[], float] = time.time) -> None:
        self.warn_s = float(warn_s)
        self.fresh_s = float(fresh_s)
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: dict[str, collections.deque[float]] = {}
        self._newest: dict[str, float] = {}    # the host's newest stamp
        self._offset: dict[str, float] = {}    # agreed on

    def observe(self, host: str, stamp: float, received: float) -> float:
        """Take a batch of ``host``; its offset now (0: none agreed yet)."""
        with self._lock:
            seen = self._seen.get(host)
            if seen is not None and stamp == self._newest[host]:
                return self._offset.get(host, 0.0)   # its heartbeat
            if seen is None or not stamp > self._newest[host]:
                seen = self._seen[host] = collections.deque(
                    maxlen=CLOCK_WINDOW)
            self._newest[host] = stamp
            seen.append(stamp - received)
            top = max(seen)
            if sum(shown >= top - CLOCK_AGREE_S for shown in seen) >= 2:
                self._agree(host, top)
            return self._offset.get(host, 0.0)

    def _agree(self, host: str, offset: float) -> None:
        """Take ``offset``; one warning when it crosses ``warn_s``."""
        def side(value: float) -> int:
            return 0 if abs(value) <= self.warn_s else (
                1 if value > 0 else -1)
        before = self._offset.get(host, 0.0)
        self._offset[host] = offset
        if side(offset) == side(before):
            return
        if side(offset):
            LOG.warning('The clock of host %s is %.1f s %s this '
                        'controller\'s (learned from its samples; '
                        '[controller] clock_offset_warning is %.1f s): its '
                        'samples are judged and its leases sent on its own '
                        'clock; synchronise it (NTP)', host, abs(offset),
                        'ahead of' if offset > 0 else 'behind', self.warn_s)
        else:
            LOG.warning('The clock of host %s is back within %.1f s of '
                        'this controller\'s (%+.1f s)', host, self.warn_s,
                        offset)

    def offset(self, host: str) -> float | None:
        """The host's clock less this controller's (s; None: not known)."""
        with self._lock:
            return self._offset.get(host)

    def lease_offset(self, host: str) -> float:
        """What to add to a lease to put it on the host's clock (0: none).

        What the newest batch showed: the host's offset less that batch's
        delay, a lower bound (a delay only shortens a lease), taken at
        once whether the clock stepped forward or back; the window's least
        delayed once the newest was received over ``fresh_s`` ago.
        """
        with self._lock:
            seen = self._seen.get(host)
            if not seen:
                return 0.0
            # the newest was received at its stamp less what it showed
            heard = self._newest[host] - seen[-1]
            shown = (seen[-1] if self._clock() - heard <= self.fresh_s
                     else max(seen))
            return shown if abs(shown) > CLOCK_AGREE_S else 0.0

    def correct(self, host: str, batch: batch_mod.Batch,
                received: float) -> batch_mod.Batch:
        """An agent's batch, its timestamps on this controller's clock."""
        offset = self.observe(host, batch.read_at, received)
        if abs(offset) <= CLOCK_AGREE_S:
            return batch
        return dataclasses.replace(batch, timestamp=batch.timestamp - offset,
                                   read_at=batch.read_at - offset)


class SampleStore:
    """The newest sample of every disk, in float columns.

    ``nan`` stands for "none" (``inf`` for a static ceiling: no limit).
    """

    def __init__(self, interval_s: float,
                 clock: Callable[[], float] = time.time,
                 max_skew_s: float = MAX_SKEW_S, capacity: int = 1024,
                 clock_warning_s: float = MAX_SKEW_S) -> None:
        if not interval_s > 0:
            raise ValueError('interval_s must be > 0, not %r' % interval_s)
        self.interval_s = float(interval_s)
        self.max_skew_s = float(max_skew_s)
        self._clock = clock
        self._lock = threading.Lock()
        self._rows: dict[Key, int] = {}
        self._free: list[int] = []   # rows of pruned disks
        self._size = 0         # rows in use or free
        capacity = max(1, capacity)
        self._cols = np.full((len(_FLOAT_COLUMNS), capacity), _NAN)
        self.rejected = 0
        #: the agent hosts' clocks (corrected by the RPC endpoint)
        self.clocks = Clocks(clock_warning_s, fresh_s=rates.STALE_INTERVALS
                             * self.interval_s, clock=clock)

    # -- staleness ----------------------------------------------------------

    def _limit_s(self, own_interval: base.FloatArray) -> base.FloatArray:
        """Staleness limits of an array of intervals (``nan``: none)."""
        return rates.STALE_INTERVALS * np.fmax(self.interval_s, own_interval)

    # -- adding -------------------------------------------------------------

    def _refuse(self, keys: list[Key], why: str, *args: object) -> None:
        """Count ``keys`` refused; one line for them all.

        ``why`` is the first's. Not a line a disk: a host whose clock is
        off sends every disk of every pass from the future or the past.
        """
        self.rejected += len(keys)
        LOG.warning('%d sample(s) refused (first %s/%s): ' + why, len(keys),
                    keys[0][0], keys[0][1], *args)

    def add_batch(self, batch: batch_mod.Batch,
                  received_at: float | None = None) -> int:
        """Store a checked :class:`iotguard.wire.batch.Batch`; how many stored.

        A disk twice in the batch is taken in order, as if sent one by one.
        """
        now = self._clock() if received_at is None else received_at
        stamp = batch.timestamp
        with np.errstate(invalid='ignore'):
            future = stamp > now + self.max_skew_s
            stale = now - stamp > self._limit_s(batch.interval_s)
        bad = future | stale
        for which, why in ((future, 'timestamp %.3f is %.1f s in the '
                            'future: is the clock of the host that sent it '
                            'synchronised with this one\'s (NTP)?'),
                           (stale & ~future, 'timestamp %.3f is %.1f s old, '
                            'stale (delayed, or the sending host\'s clock '
                            'behind)')):
            refused = np.flatnonzero(which).tolist()
            if refused:
                i = refused[0]
                self._refuse([(batch.instance_uuid[j], batch.dev[j])
                              for j in refused], why, stamp[i],
                             abs(stamp[i] - now))
        if bad.any():
            batch = batch.take(np.flatnonzero(~bad))
        if not len(batch):
            return 0
        values = np.vstack((
            batch.timestamp, batch.interval_s, batch.rates, batch.static,
            np.fromiter((g is None for g in batch.gap), bool, len(batch))
            & ~np.isnan(batch.rates[0]),
            np.full(len(batch), _NAN) if batch.p99_ms is None
            else batch.p99_ms))
        stored = 0
        with self._lock:
            rows = self._rows_of(batch.keys())
            for index in self._generations(rows):
                stored += self._write(rows[index], index, batch, values)
        return stored

    def _rows_of(self, keys: list[Key]) -> Rows:
        get, rows = self._rows.get, []
        for key in keys:
            row = get(key)
            if row is None:
                row = self._rows[key] = self._new_row()
            rows.append(row)
        return np.array(rows, dtype=np.intp)

    @staticmethod
    def _generations(rows: Rows) -> list[Rows]:
        """Positions of a batch's rows: first sightings, then repeats."""
        if len(np.unique(rows)) == len(rows):
            return [np.arange(len(rows))]
        seen: dict[int, int] = {}
        order = []
        for row in rows.tolist():
            order.append(seen.get(row, 0))
            seen[row] = order[-1] + 1
        nth = np.array(order)
        return [np.flatnonzero(nth == k) for k in range(nth.max() + 1)]

    def _write(self, rows: Rows, index: Rows, batch: batch_mod.Batch,
               values: base.FloatArray) -> int:
        stamp = values[0, index]
        latest = self._cols[0, rows]
        newer = np.isnan(latest) | (stamp > latest)
        for same in (True, False):
            refused = np.flatnonzero(~newer & ((stamp == latest) == same))
            if len(refused):
                i = refused[0]
                self._refuse([(batch.instance_uuid[index[j]],
                               batch.dev[index[j]]) for j in refused],
                             '%s (timestamp %.3f, latest %.3f)',
                             'duplicate' if same else 'older than the latest',
                             stamp[i], latest[i])
        rows, index = rows[newer], index[newer]
        self._cols[:, rows] = values[:, index]
        return len(rows)

    def _new_row(self) -> int:
        if self._free:
            return self._free.pop()
        row = self._size
        capacity = self._cols.shape[1]
        if row >= capacity:
            self._cols = np.hstack((self._cols, np.full(
                (self._cols.shape[0], capacity), _NAN)))
        self._size += 1
        return row

    # -- reading ------------------------------------------------------------

    def latest(self, instance_uuid: str, dev: str
               ) -> dict[str, float | None] | None:
        """The newest sample of a disk as a dict of its columns, or None.

        ``nan`` is None; ``rated``: 1.0 when it has rates (no gap).
        """
        with self._lock:
            row = self._rows.get((instance_uuid, dev))
            if row is None:
                return None
            values = self._cols[:, row].tolist()
        return {name: None if math.isnan(value) else value
                for name, value in zip(_FLOAT_COLUMNS, values)}

    def gather(self, keys: Sequence[Key], now: float) -> base.SampleColumns:
        """The :class:`~iotguard.policy.base.SampleColumns` of ``keys``.

        ``keys``: ``(instance_uuid, dev)``, the order of the columns.
        """
        n = len(keys)
        with self._lock:
            get = self._rows.get
            rows = np.fromiter((get(key, -1) for key in keys), np.intp, n)
            known = rows >= 0
            cols = self._cols[:, np.where(known, rows, 0)]
        cols[:, ~known] = _NAN
        col = dict(zip(_FLOAT_COLUMNS, cols))
        limit = self._limit_s(col['interval_s'])
        with np.errstate(invalid='ignore'):
            stale = ~known | (col['rated'] != 1.0) | (
                now - col['timestamp'] > limit)
        return base.SampleColumns(
            timestamp=col['timestamp'], read_iops=col['read_iops'],
            write_iops=col['write_iops'],
            read_bytes_sec=col['read_bytes_sec'],
            write_bytes_sec=col['write_bytes_sec'],
            read_latency_ms=col['read_latency_ms'],
            write_latency_ms=col['write_latency_ms'],
            static_iops=np.where(known, col['static_iops'], math.inf),
            static_bytes_sec=np.where(known, col['static_bytes_sec'],
                                      math.inf),
            stale=stale, p99_ms=col[batch_mod.P99])

    def fresh(self, keys: Sequence[Key], now: float) -> base.BoolArray:
        """Whether each of ``keys`` has a sample to act on (rates, fresh)."""
        result: base.BoolArray = ~self.gather(keys, now).stale
        return result

    def prune(self, now: float) -> int:
        """Drop every stale sample; returns how many (bounds memory)."""
        with self._lock:
            if not self._rows:
                return 0
            keys = list(self._rows)
            rows = np.fromiter(self._rows.values(), np.intp, len(keys))
            stamp, interval = self._cols[0, rows], self._cols[1, rows]
            old = np.flatnonzero(now - stamp > self._limit_s(interval))
            for i in old.tolist():
                del self._rows[keys[i]]
            self._cols[:, rows[old]] = _NAN
            self._free.extend(rows[old].tolist())
            return len(old)

    def __len__(self) -> int:
        with self._lock:
            return len(self._rows)
