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

"""``static``: every disk capped at its ceiling, what Nova/Cinder QoS give.

A disk's ceiling is the tighter of its tier's and its static limits.
Disks without one are left uncapped (a dynamic cap found on them is
released); a stale disk's cap is not tightened. It never reacts to load:
it is the baseline that keeps neighbours apart by wasting whatever
capacity the ceilings strand.
"""

import numpy as np

from iotguard import policy
from iotguard.policy import base


class StaticPolicy(base.Stateless):
    """Cap each disk at its (tier or static) ceiling, nothing else."""

    name = 'static'
    PARAMS: tuple[policy.Param, ...] = ()

    def __init__(self, **params: object) -> None:
        policy.check_params(self.name, self.PARAMS, params)

    def decide(self, snapshot: base.DomainSnapshot, state: None,
               now: float) -> tuple[list[base.Decision], None]:
        snap = snapshot
        has_ceiling = (np.isfinite(snap.ceil_iops)
                       | np.isfinite(snap.ceil_bytes_sec))
        differs = ((snap.ceil_iops != snap.cap_iops)
                   | (snap.ceil_bytes_sec != snap.cap_bytes_sec))
        tighter = ((snap.ceil_iops < snap.cap_iops)
                   | (snap.ceil_bytes_sec < snap.cap_bytes_sec))
        to_cap = has_ceiling & differs & ~(snap.stale & tighter)
        to_release = ~has_ceiling & snap.capped
        decisions = []
        for i in np.flatnonzero(to_cap | to_release):
            numbers = base.audit_numbers(
                iops=snap.iops[i], bytes_sec=snap.bytes_sec[i],
                ceil_iops=snap.ceil_iops[i],
                ceil_bytes_sec=snap.ceil_bytes_sec[i],
                cap_iops=snap.cap_iops[i],
                cap_bytes_sec=snap.cap_bytes_sec[i])
            if to_release[i]:
                decisions.append(base.Decision(
                    snap.disk_ids[i], base.RELEASE,
                    'policy static: disk has no ceiling, no cap wanted',
                    numbers=numbers))
            else:
                decisions.append(base.Decision(
                    snap.disk_ids[i], base.CAP,
                    'policy static: cap at the disk ceiling',
                    iops=float(snap.ceil_iops[i]),
                    bytes_sec=float(snap.ceil_bytes_sec[i]),
                    numbers=numbers))
        return decisions, None
