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
"""

import math

from iotguard.sim import scenario as scenario_mod
from iotguard.sim import storage

KIB = 1024
CATCH_UP_S = 1.0


def demand_ops(step: scenario_mod.Step, job: scenario_mod.Job,
               domain: scenario_mod.Domain) -> float:
    """Operations per second the job asks for, were it alone.

    A rate-limited job asks for its rate (or what it could get alone, if
    that is less); an unlimited one for what the storage serves its
    ``processes x iodepth`` requests when it is alone.
    """
    slots = step.processes * job.iodepth
    if not slots:
        return 0.0
    alone = storage.speed(slots, domain) / storage.op_cost(job.bs, domain)
    if step.rate_kbs is None:
        return alone
    return min(alone, step.rate_kbs * KIB / job.bs)


class Runner:
    """Sends the requests of one job into its stream."""

    def __init__(self, job: scenario_mod.Job,
                 stream: storage.Stream) -> None:
        self.job = job
        self.stream = stream
        self.tokens = 0.0

    def issue(self, now: float, dt: float) -> int:
        """Send what the job's processes and rate allow; return how many."""
        step = self.job.state_at(now)
        free = step.processes * self.job.iodepth - (
            self.stream.issued - self.stream.completed)
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
        return free
