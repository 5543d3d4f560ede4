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

"""The shared storage: one queue, served in proportion to parallelism.

Work is counted in device-seconds, an operation costing what the
policies' cost model charges in the domain's ``form``
(:func:`iotguard.policy.costmodel.op_cost`); in the ``max`` form (a token
bucket of IOPS and one of bytes) that is exact while the operations served
together have one size, a mix of sizes is served a little less than a
real pair of buckets would, as the policies charge it. The array serves
:func:`speed` of its queue (many spindles: a deeper queue is served
faster, up to saturation) times a seeded noise factor, shared by
parallelism (:class:`~iotguard.sim.scenario.Domain`; a ``share_exponent``
above 1 reproduces the paper's observation that a VM with ten times the
processes takes far more than ten times the bandwidth).

Each job is a :class:`Stream`: a FIFO of numbered requests. The guest has
sent ``issued`` of them, ``passed`` went through the throttle, ``completed``
were served, so at every moment the requests ``[completed, passed)`` are in
the storage queue and ``[passed, issued)`` wait at the throttle: a request
is served once, in order, and never lost. Within a stream, the work granted
accumulates as ``credit`` and each ``cost`` of it completes the oldest
request; the books balance exactly (the storage's ``granted == spent +``
the streams' ``credit``; ``dropped`` counts the capacity left idle for want
of requests). Each tick also leaves, per stream, the request-seconds its
requests spent in the system (``read_s``, ``write_s``, dated within the
tick: :meth:`Storage._time_inside`).
"""

import collections.abc
import dataclasses
import math

import numpy as np

from iotguard.policy import costmodel
from iotguard.sim import scenario as scenario_mod

Refill = collections.abc.Callable[[int], int]


def reads_before(k: int, read_fraction: float) -> int:
    """How many of a stream's first ``k`` requests are reads.

    Request ``k`` is a read when ``reads_before(k + 1) > reads_before(k)``:
    a deterministic interleaving with exactly the job's read/write mix.
    """
    return math.floor(k * read_fraction + 1e-9)


def op_cost(size: float, domain: scenario_mod.Domain) -> float:
    """Device-seconds one operation of ``size`` bytes costs."""
    return float(costmodel.op_cost(np.asarray(size, dtype=np.float64),
                                   domain.profile))


def speed(outstanding: float, domain: scenario_mod.Domain) -> float:
    """Device-seconds per second served at a queue of ``outstanding``."""
    if outstanding <= 0:
        return 0.0
    share: float = (outstanding / domain.sat_depth) ** domain.depth_exponent
    return min(1.0, share)


@dataclasses.dataclass
class Stream:
    """The numbered requests of one job on one disk."""

    disk: int
    size: int
    cost: float
    read_fraction: float
    issued: int = 0
    passed: int = 0
    completed: int = 0
    credit: float = 0.0
    #: request-seconds spent in the system (throttle wait included) during
    #: the last tick served, by reads and by writes
    read_s: float = 0.0
    write_s: float = 0.0
    # within a tick: gross work granted, work spent, and the changes of
    # the requests in the system as (work spent when, requests, reads)
    tick_granted: float = 0.0
    tick_spent: float = 0.0
    tick_events: list[tuple[float, int, int]] = dataclasses.field(
        default_factory=list)
    #: when each request completed in the last tick served (seconds from
    #: the tick's start), for clients that think after a completion
    done_at: list[float] = dataclasses.field(default_factory=list)

    @property
    def queued(self) -> int:
        """Requests in the storage queue."""
        return self.passed - self.completed

    @property
    def waiting(self) -> int:
        """Requests held at the throttle."""
        return self.issued - self.passed

    def is_read(self, k: int) -> bool:
        return (reads_before(k + 1, self.read_fraction)
                > reads_before(k, self.read_fraction))

    def reads_between(self, start: int, stop: int) -> int:
        return (reads_before(stop, self.read_fraction)
                - reads_before(start, self.read_fraction))


class Storage:
    """Serves the streams of one contention domain."""

    def __init__(self, domain: scenario_mod.Domain,
                 streams: list[Stream]) -> None:
        self.domain = domain
        self.streams = streams
        self.granted = 0.0      # device-seconds handed to streams (net)
        self.spent = 0.0        # device-seconds that completed requests
        self.dropped = 0.0      # device-seconds idle: nothing queued
        self.queue_seconds = 0.0  # integral of the queue length over time

    def outstanding(self) -> int:
        return sum(s.queued for s in self.streams)

    def serve(self, dt: float, factor: float = 1.0,
              refill: Refill | None = None) -> list[int]:
        """Serve ``dt`` seconds; return the completions of each stream.

        The queue at the start of the tick sets the speed. The work is
        shared among the streams with queued requests; ``refill(i)``, when
        given, is called after stream ``i`` completed requests: it returns
        how many new requests it put into the storage queue (a closed loop
        re-issuing within the tick), or ``-1`` when the stream refills
        every completion at once (no rate, no throttle), which is served in
        closed form. A stream that empties (its next request is held by its
        rate or its throttle) gives its unused credit back, and the others
        share it: the array is work-conserving.
        """
        streams = self.streams
        total = self.outstanding()
        done = [0] * len(streams)
        start = []
        for s in streams:
            start.append((s.issued - s.completed,
                          s.reads_between(s.completed, s.issued), s.credit))
            s.tick_granted = s.tick_spent = 0.0
            s.tick_events = []
        if total:
            self._share(total, dt, factor, refill, done)
            after = self.outstanding()
            self.queue_seconds += (total + after) / 2.0 * dt
        for s, (inside, reads, credit) in zip(streams, start):
            self._time_inside(s, dt, inside, reads, credit)
        return done

    @staticmethod
    def _time_inside(s: Stream, dt: float, inside: int, reads: int,
                     credit: float) -> None:
        """Request-seconds the stream's requests spent in the system.

        The stream is served at the rate of its gross grant over the tick,
        so the work it had spent when a request completed (or was issued)
        dates that event within the tick; the credit carried from the last
        tick was spent first. A request present the whole tick counts
        ``dt``, one completing at ``t`` counts ``t``, one issued at ``t``
        counts ``dt - t``: latency does not depend on the tick's length.
        """
        read_s = reads * dt
        write_s = (inside - reads) * dt
        s.done_at = []
        for spent, count, count_reads in s.tick_events:
            if s.tick_granted > 0:
                at = min(dt, max(0.0, spent - credit) / s.tick_granted * dt)
            else:
                at = 0.0
            if count < 0:
                s.done_at.extend([at] * -count)
            read_s += count_reads * (dt - at)
            write_s += (count - count_reads) * (dt - at)
        s.read_s, s.write_s = read_s, write_s
        s.tick_events = []

    def _share(self, total: int, dt: float, factor: float,
               refill: Refill | None, done: list[int]) -> None:
        """Hand the tick's work to the ``total`` queued requests."""
        streams = self.streams
        pool = speed(total, self.domain) * factor * dt
        active = [i for i, s in enumerate(streams) if s.queued]
        while active and pool > 1e-15:
            per_disk: dict[int, int] = {}
            for i in active:
                d = streams[i].disk
                per_disk[d] = per_disk.get(d, 0) + streams[i].queued
            alpha = self.domain.share_exponent
            weight = {d: q ** alpha for d, q in per_disk.items()}
            weight_sum = sum(weight.values())
            work, pool = pool, 0.0
            for i in active:
                s = streams[i]
                grant = work * weight[s.disk] / weight_sum * s.queued / (
                    per_disk[s.disk])
                self.granted += grant
                s.credit += grant
                s.tick_granted += grant
                done[i] += self._complete(i, s, refill)
                if not s.queued:
                    self.granted -= s.credit
                    pool += s.credit
                    s.credit = 0.0
            active = [i for i in active if streams[i].queued]
        self.dropped += pool

    def _complete(self, index: int, s: Stream,
                  refill: Refill | None) -> int:
        """Complete what a stream's credit pays for; return how many."""
        free = refill is not None and self._refill(index, s, refill) < 0
        done = 0
        while True:
            n = int(s.credit / s.cost + 1e-9)
            if not free:
                n = min(s.queued, n)
            if n <= 0:
                break
            if free:
                # completed requests are replaced at once: the queue
                # keeps its length, the stream's numbering runs on
                s.issued += n
                s.passed += n
                s.tick_spent += n * s.cost
            else:
                # a completion leaves the system when its work is done
                for k in range(s.completed, s.completed + n):
                    s.tick_spent += s.cost
                    s.tick_events.append(
                        (s.tick_spent, -1, -int(s.is_read(k))))
            s.completed += n
            s.credit -= n * s.cost
            self.spent += n * s.cost
            done += n
            # a closed loop sends its next request at once; it waits in
            # the queue with the credit left, or completes too
            if (free or refill is None
                    or self._refill(index, s, refill) <= 0):
                break
        if s.credit < 0:
            # rounding: int() above may complete on 1e-9 less credit
            self.spent += s.credit
            s.credit = 0.0
        return done

    @staticmethod
    def _refill(index: int, s: Stream, refill: Refill) -> int:
        """Call ``refill``, dating the requests it issues."""
        issued = s.issued
        result = refill(index)
        if result >= 0 and s.issued > issued:
            s.tick_events.append((s.tick_spent, s.issued - issued,
                                  s.reads_between(issued, s.issued)))
        return result
