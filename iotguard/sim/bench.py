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

"""Decision cost: CPU time of one ``guarantee`` decision over N disks.

``iotguard-sim bench`` prints what :func:`run` returns. The disks are
split over contention domains and filled with a seeded mix (tiers, light
disks, noisy writers new and capped, victims below their floor) that
makes the policy run its whole path in every domain. Snapshots are built
outside the timing; the clock is ``time.process_time``.
"""

import statistics
import time

import numpy as np

from iotguard.policy import base
from iotguard.policy import guarantee

KIB = 1024.0
#: (floor IOPS, floor bytes/s, weight, share of the disks)
TIERS = ((400.0, 8 * 1024 * KIB, 4.0, 0.1),     # gold
         (150.0, 3 * 1024 * KIB, 2.0, 0.3),     # silver
         (50.0, 1024 * KIB, 1.0, 0.6))          # bronze
NOISY_NEW = 0.02
NOISY_CAPPED = 0.03
VICTIMS = 0.10


def snapshot(disks: int, rng: np.random.Generator,
             name: str = 'bench') -> base.DomainSnapshot:
    """One synthetic domain of ``disks`` disks (columnar, built directly)."""
    n = disks
    tier = rng.choice(len(TIERS), size=n, p=[t[3] for t in TIERS])
    floor_iops = np.array([t[0] for t in TIERS])[tier]
    floor_bytes = np.array([t[1] for t in TIERS])[tier]
    weight = np.array([t[2] for t in TIERS])[tier]
    # Capacity sized for the disk count: the floors commit about 60 %.
    profile = base.Profile(iops_4k=220.0 * n, bytes_sec=9e6 * n)

    kind = rng.random(n)
    noisy_new = kind < NOISY_NEW
    noisy_capped = (kind >= NOISY_NEW) & (kind < NOISY_NEW + NOISY_CAPPED)
    victim = ((kind >= NOISY_NEW + NOISY_CAPPED)
              & (kind < NOISY_NEW + NOISY_CAPPED + VICTIMS))
    light = ~(noisy_new | noisy_capped | victim)

    size = np.where(rng.random(n) < 0.5, 4 * KIB, 64 * KIB)
    size = np.where(noisy_new | noisy_capped, 64 * KIB, size)
    iops = np.where(light, rng.uniform(5, 60, n), 0.0)
    iops = np.where(victim, floor_iops * rng.uniform(0.3, 0.9, n), iops)
    iops = np.where(noisy_new | noisy_capped, rng.uniform(300, 900, n), iops)
    latency = np.where(victim | noisy_new | noisy_capped,
                       rng.uniform(60, 400, n), rng.uniform(1, 20, n))
    cap_iops = np.where(noisy_capped, iops * rng.uniform(1.0, 1.05, n),
                        np.inf)
    cap_bytes = cap_iops * size
    static = np.where(rng.random(n) < 0.2, 5000.0, np.inf)
    return base.DomainSnapshot(
        domain=name, profile=profile, interval_s=5.0,
        disk_ids=tuple('%s/disk-%d' % (name, i) for i in range(n)),
        iops=iops, bytes_sec=iops * size, latency_ms=latency,
        floor_iops=floor_iops, floor_bytes_sec=floor_bytes,
        ceil_iops=static, ceil_bytes_sec=np.full(n, np.inf),
        weight=weight, cap_iops=cap_iops, cap_bytes_sec=cap_bytes,
        cap_set_at=np.where(noisy_capped, 0.0, np.nan),
        stale=rng.random(n) < 0.001)


def run(disks: int, domains: int = 1, seed: int = 0,
        repeat: int | None = None) -> dict[str, float]:
    """Time one ``guarantee`` decision over ``disks`` disks.

    Returns the figures: ``cpu_s_min``/``cpu_s_median`` for a decision over
    all the disks (every domain once), ``us_per_disk`` (from the minimum),
    ``decisions`` it produced, and the inputs.
    """
    if disks < 1:
        raise ValueError('disks must be >= 1, not %r' % disks)
    if not 1 <= domains <= disks:
        raise ValueError('domains must be between 1 and disks (%d), not %r'
                         % (disks, domains))
    if repeat is None:
        repeat = 5 if disks >= 50000 else 20
    rng = np.random.default_rng(seed)
    sizes = [disks // domains + (1 if k < disks % domains else 0)
             for k in range(domains)]
    snaps = [snapshot(n, rng, 'domain-%d' % k) for k, n in enumerate(sizes)]
    policy = guarantee.GuaranteePolicy()
    # warm up (imports, caches); then each domain from its own state
    states = [policy.decide(s, None, 0.0)[1] for s in snaps]
    times = []
    made = 0
    for _ in range(repeat):
        start = time.process_time()
        made = 0
        for k, s in enumerate(snaps):
            decisions, states[k] = policy.decide(s, states[k], 100.0)
            made += len(decisions)
        times.append(time.process_time() - start)
    best = min(times)
    return {'disks': disks, 'domains': domains, 'seed': seed,
            'repeat': repeat, 'cpu_s_min': best,
            'cpu_s_median': statistics.median(times),
            'us_per_disk': best / disks * 1e6, 'decisions': made}
