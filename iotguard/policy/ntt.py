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

"""``ntt``: the paper's Algorithm 1, faithfully.

Every interval (``cap_interval``, the loop period of the caller)::

    if sum(B) > b_border: cap the VM with the highest bandwidth b at rate * b
    if sum(I) > i_border: cap the VM with the highest IOPS i at rate * i
    each cap lasts cap_time, then it is released at once

A VM picked while it is already capped gets its cap replaced by the new
value and its ``cap_time`` restarted. ``b_border``/``i_border`` are
``border_ratio`` of the domain maximum: the domain's profile at the I/O
size ``s`` (the ``io_size`` parameter, else the domain's current mean
I/O size), ``ops_max = 1 / op_cost(s)`` and ``b_max = ops_max * s``.

A disk carries one lease (``cap_set_at``): capping it on one kind
restarts the lease of a cap it has on the other kind, which is kept.
Stale disks are neither summed nor picked; their expired caps are still
released. Why these choices, where the paper leaves them open, and why
``rate`` defaults to 0.5: doc/source/admin/policies.rst.
"""

import dataclasses

import numpy as np

from iotguard import policy
from iotguard.policy import base
from iotguard.policy import costmodel

#: Slack on ``now - cap_set_at >= cap_time`` against float rounding.
_EPSILON = 1e-6


@dataclasses.dataclass(eq=False)
class Params:
    """Algorithm 1's parameters (:func:`iotguard.policy.param`)."""

    border_ratio: float = policy.param(
        0.9, '(0, 1]', 'Fraction of the domain maximum above which the '
        'domain is "full".')
    rate: float = policy.param(
        0.5, '(0, 1)', 'A capped VM is held at ``rate`` times what it did.')
    cap_time: float = policy.param(
        60.0, '(0, inf)', 'Seconds a cap lasts; must be greater than '
        '``cap_interval``, otherwise heavy VMs take turns and fairness is '
        'lost (the paper\'s own condition).')
    cap_interval: float = policy.param(
        5.0, '(0, inf)', 'The loop period the algorithm is run at (the '
        'controller\'s ``decision_interval``).')
    io_size: float | None = policy.param(
        None, '(0, inf)', 'I/O size in bytes at which the domain maximum is '
        'computed (none: the domain\'s current mean I/O size).')

    def __post_init__(self) -> None:
        if self.cap_time <= self.cap_interval:
            raise ValueError(
                'ntt: cap_time (%g) must be greater than cap_interval (%g), '
                'otherwise heavy VMs take turns and fairness is lost'
                % (self.cap_time, self.cap_interval))


class NttPolicy(base.Stateless, Params):
    """The paper's cap-the-top-VM loop (Algorithm 1)."""

    name = 'ntt'
    PARAMS = policy.declared(Params)

    def __init__(self, **params: object) -> None:
        super().__init__(**policy.check_params(self.name, self.PARAMS,
                                               params))

    def decide(self, snapshot: base.DomainSnapshot, state: None,
               now: float) -> tuple[list[base.Decision], None]:
        snap = snapshot
        fresh = ~snap.stale
        bw = np.where(fresh, snap.bytes_sec, 0.0)
        ops = np.where(fresh, snap.iops, 0.0)
        bytes_sum, iops_sum = float(bw.sum()), float(ops.sum())
        if self.io_size is not None:
            size = self.io_size
        elif iops_sum > 0:
            size = bytes_sum / iops_sum
        else:
            size = costmodel.DEFAULT_IO_SIZE
        ops_max = float(1.0 / costmodel.op_cost(
            np.asarray(size, dtype=np.float64), snap.profile))
        b_border = self.border_ratio * (ops_max * size)
        i_border = self.border_ratio * ops_max
        # A lease older than cap_time (or of unknown age) has run out.
        age = now - snap.cap_set_at
        expired = snap.capped & ~(age < self.cap_time - _EPSILON)

        def numbers(i: int) -> dict[str, float]:
            return base.audit_numbers(
                bytes_sec=bw[i], iops=ops[i], lease_age_s=age[i],
                sum_bytes_sec=bytes_sum, b_border=b_border, sum_iops=iops_sum,
                i_border=i_border, io_size=size, rate=self.rate,
                cap_time=self.cap_time)

        new_bytes: dict[int, float] = {}
        new_iops: dict[int, float] = {}
        # (borders > 0: no disk, no sum above them)
        if bytes_sum > b_border:
            top = int(np.argmax(bw))
            new_bytes[top] = self.rate * float(bw[top])
        if iops_sum > i_border:
            top = int(np.argmax(ops))
            new_iops[top] = self.rate * float(ops[top])

        decisions = []
        picked = set(new_bytes) | set(new_iops)
        for i in sorted(picked):
            keep = not expired[i]
            iops_cap = new_iops.get(
                i, float(snap.cap_iops[i]) if keep else np.inf)
            bytes_cap = new_bytes.get(
                i, float(snap.cap_bytes_sec[i]) if keep else np.inf)
            why = []
            if i in new_bytes:
                why.append('bandwidth %.0f B/s above border %.0f B/s, '
                           'highest disk %.0f B/s capped at %.0f B/s'
                           % (bytes_sum, b_border, bw[i], bytes_cap))
            if i in new_iops:
                why.append('IOPS %.1f above border %.1f, highest disk '
                           '%.1f IOPS capped at %.1f'
                           % (iops_sum, i_border, ops[i], iops_cap))
            restart = ' (cap restarted)' if snap.capped[i] else ''
            decisions.append(base.Decision(
                snap.disk_ids[i], base.CAP,
                'ntt: %s for %gs%s'
                % ('; '.join(why), self.cap_time, restart),
                iops=iops_cap, bytes_sec=bytes_cap, numbers=numbers(i)))
        decisions += [base.Decision(
            snap.disk_ids[i], base.RELEASE,
            'ntt: cap_time %gs elapsed since the cap was set, released at '
            'once' % self.cap_time, numbers=numbers(i))
            for i in map(int, np.flatnonzero(expired)) if i not in picked]
        return decisions, None
