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

"""fio-like jobs: processes x iodepth requests in flight, optional rate.

Each process keeps ``iodepth`` requests outstanding (synchronous I/O when
``iodepth`` is 1) and sends the next one as soon as one completes. With a
rate (fio's ``rate``), the job may send only while it is not ahead of
``rate`` x elapsed time; like fio it catches up after a slow spell, by at
most ``CATCH_UP_S`` seconds' worth of its rate.

With a think time (fio's ``thinktime``, ``think_ms``) a request slot that
completed waits that long before it sends its next request: a closed-loop
client that computes between synchronous writes, whose requests in flight
(Little's law) stay below one however far behind it falls. The storage
dates each completion within its tick; the slot sends again at the tick
start nearest to that date plus the think time (within half a tick).
"""

import math

from iotguard.sim import scenario as scenario_mod
from iotguard.sim import storage

KIB = 1024
CATCH_UP_S = 1.0


def demand_ops(step: scenario_mod.Step, job: scenario_mod.Job,
               domain: scenario_mod.Domain) -> float:
    """Operations/s the job asks for: what it gets alone, at most its rate."""
    slots = step.processes * job.iodepth
    if not slots:
        return 0.0
    cost = storage.op_cost(job.bs, domain)
    if job.think_ms:
        alone = thinking_ops(slots, job.think_ms / 1e3, cost, domain)
    else:
        alone = storage.speed(slots, domain) / cost
    if step.rate_kbs is None:
        return alone
    return min(alone, step.rate_kbs * KIB / job.bs)


def thinking_ops(slots: int, think_s: float, cost: float,
                 domain: scenario_mod.Domain) -> float:
    """Operations per second of ``slots`` closed loops thinking alone.

    Each slot cycles: request served (``latency``), think (``think_s``).
    With ``n`` requests in the storage, each takes ``cost * n / speed(n)``
    (at least one request while any is); ``n = slots * latency / (latency
    + think_s)`` (Little's law), solved by fixed-point iteration.
    """
    inflight = float(slots)
    latency = 0.0
    for _ in range(50):
        depth = max(inflight, 1.0)
        latency = cost * depth / storage.speed(depth, domain)
        inflight = slots * latency / (latency + think_s)
    return slots / (latency + think_s)


class Runner:
    """Sends the requests of one job into its stream."""

    def __init__(self, job: scenario_mod.Job,
                 stream: storage.Stream) -> None:
        self.job = job
        self.stream = stream
        self.tokens = 0.0
        self.tick_s = 0.0
        self.seen = 0           # completions already given a think time
        self.thinking: list[float] = []   # when each thinking slot sends

    def issue(self, now: float, dt: float) -> int:
        """Send what the job's processes and rate allow; return how many.

        ``dt`` is the tick about to be served; 0 when called within a tick
        (a closed loop re-issuing after completions at ``now``, the tick's
        start).
        """
        step = self.job.state_at(now)
        free = step.processes * self.job.iodepth - (
            self.stream.issued - self.stream.completed)
        ready = 0
        if self.job.think_ms:
            ready = self._think(now, dt)
            # completions of this tick not dated yet think too
            free -= (len(self.thinking) - ready
                     + self.stream.completed - self.seen)
        if step.rate_kbs is not None:
            rate = step.rate_kbs * KIB
            self.tokens = min(self.tokens + rate * dt,
                              max(rate * CATCH_UP_S, self.job.bs))
            free = min(free, math.floor(self.tokens / self.job.bs + 1e-9))
        if free <= 0:
            return 0
        if step.rate_kbs is not None:
            self.tokens -= free * self.job.bs
        self.stream.issued += free
        del self.thinking[:min(free, ready)]
        return free

    def _think(self, now: float, dt: float) -> int:
        """Date the last tick's completions; return the slots ready."""
        if dt > 0:
            think_s = self.job.think_ms / 1e3
            start = now - self.tick_s
            self.thinking.extend(start + at + think_s
                                 for at in self.stream.done_at)
            self.thinking.sort()
            self.seen += len(self.stream.done_at)
            self.stream.done_at = []
            self.tick_s = dt
        return sum(1 for t in self.thinking
                   if t <= now + self.tick_s / 2.0 + 1e-9)
