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

"""Hand-built snapshots for the policy tests.

The test profile makes hand arithmetic easy: a 4 KiB operation costs
1/1000 + 4096/6553600 = 0.001625 device-seconds, a 64 KiB one
1/1000 + 65536/6553600 = 0.011.
"""

import dataclasses
import math

import numpy as np

from iotguard.policy import base

KIB = 1024.0
PROFILE = base.Profile(iops_4k=1000.0, bytes_sec=6553600.0)
PLAIN = base.Tier('plain')
INTERVAL = 5.0


@dataclasses.dataclass(frozen=True)
class DiskState:
    """One disk in row form: rates per second, ``latency_ms`` per op.

    ``cap_*`` the dynamic cap in force (``inf`` when none), ``cap_set_at``
    when it was set (``nan`` when none), ``static_*`` Nova's or Cinder's
    ceilings (``inf`` when none).
    """

    disk_id: str
    tier: base.Tier
    read_iops: float = 0.0
    write_iops: float = 0.0
    read_bytes_sec: float = 0.0
    write_bytes_sec: float = 0.0
    latency_ms: float = 0.0
    cap_iops: float = math.inf
    cap_bytes_sec: float = math.inf
    cap_set_at: float = math.nan
    static_iops: float = math.inf
    static_bytes_sec: float = math.inf
    stale: bool = False


def disk(name, ops=0.0, size=64 * KIB, tier=PLAIN, **kw):
    """A disk doing ``ops`` writes/s of ``size`` bytes."""
    return DiskState(name, tier, write_iops=ops, write_bytes_sec=ops * size,
                     **kw)


def snapshot(*disks, profile=PROFILE, domain='pool', interval_s=INTERVAL):
    """The columnar snapshot of row-form ``disks``, through of_samples.

    Each row's ``latency_ms`` stands for both its reads and its writes.
    """
    def col(field):
        return np.array([getattr(d, field) for d in disks], np.float64)

    latency = col('latency_ms')
    samples = base.SampleColumns(
        timestamp=np.zeros(len(disks)), read_iops=col('read_iops'),
        write_iops=col('write_iops'), read_bytes_sec=col('read_bytes_sec'),
        write_bytes_sec=col('write_bytes_sec'), read_latency_ms=latency,
        write_latency_ms=latency, static_iops=col('static_iops'),
        static_bytes_sec=col('static_bytes_sec'),
        stale=np.array([d.stale for d in disks], np.bool_))
    return base.DomainSnapshot.of_samples(
        domain, profile, interval_s, tuple(d.disk_id for d in disks),
        [d.tier for d in disks], samples, col('cap_iops'),
        col('cap_bytes_sec'), col('cap_set_at'))


def by_disk(decisions):
    """Decisions keyed by disk id (each disk appears at most once)."""
    result = {d.disk_id: d for d in decisions}
    assert len(result) == len(decisions), decisions
    return result


class Remembering:
    """A policy given back, per domain, the state its last call returned.

    As the controller and the simulator call it; ``states`` by domain.
    Other attributes are the policy's.
    """

    def __init__(self, policy):
        self.policy = policy
        self.states = {}

    def decide(self, snapshot, now):
        decisions, self.states[snapshot.domain] = self.policy.decide(
            snapshot, self.states.get(snapshot.domain), now)
        return decisions

    def __getattr__(self, name):
        return getattr(self.policy, name)
