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

"""``none``: no control at all (best effort, the status quo).

A policy is level-based, so "no control" also means no dynamic cap stays
in force: any cap found (left by another policy) is released. The static
ceilings Nova or Cinder set are not caps and stay.
"""

import numpy as np

from iotguard import policy
from iotguard.policy import base


class NoPolicy(base.Stateless):
    """Never caps; releases whatever cap is in force."""

    name = 'none'
    PARAMS: tuple[policy.Param, ...] = ()

    def __init__(self, **params: object) -> None:
        policy.check_params(self.name, self.PARAMS, params)

    def decide(self, snapshot: base.DomainSnapshot, state: None,
               now: float) -> tuple[list[base.Decision], None]:
        snap = snapshot
        return [
            base.Decision(
                snap.disk_ids[i], base.RELEASE,
                'policy none: no dynamic caps, releasing the cap in force',
                numbers=base.audit_numbers(
                    iops=snap.iops[i], bytes_sec=snap.bytes_sec[i],
                    cap_iops=snap.cap_iops[i],
                    cap_bytes_sec=snap.cap_bytes_sec[i]))
            for i in np.flatnonzero(snap.capped)], None
