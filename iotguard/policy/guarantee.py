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

"""``guarantee``: iotguard's own policy, the default.

Every interval, level-based (everything it needs is in the snapshot):

1. **Cost.** Each disk's load ``u = iops / iops_4k + bytes_sec / bytes_sec``
   (device-seconds per second, :mod:`iotguard.policy.costmodel`); its floor,
   ceiling and current cap are converted to the same unit at the disk's mean
   I/O size. A 4 KiB stream is charged for its seeks, a 64 KiB one for its
   transfer (the paper's weakness 3).
2. **Unmet demand** (the paper's weakness 5: demand is not observable
   from outside) is read from two signals together: the disk's operations
   are slow (mean latency above ``latency_factor`` times what one operation
   of its size costs the domain, and above ``latency_threshold_ms``: the
   same rule fits a RAID6 array and an SSD pool) *and* it always
   has one in flight (by Little's law, ``iops x latency >= busy_depth``
   operations outstanding). A disk that is slow but idle between its
   operations (a rate-limited or synchronous client that gets what it
   asks) does not count, nor does a disk running at its own ceiling (it
   waits in its own throttle). A disk is *starving* when it has unmet
   demand below its floor (a floor above the disk's ceiling counts up to
   the ceiling).
3. **Engage** when the domain's load ``U = sum(u)`` passes
   ``high_watermark`` or a disk is starving. Once caps are in force the
   policy stays engaged until ``U`` falls below ``low_watermark``
   (hysteresis).
4. **Estimate demand.** A capped disk running at ``at_cap_ratio`` of its cap
   or more wants more (unbounded); an uncapped disk with unmet demand wants
   ``headroom`` more than it gets, and at least its floor plus
   ``headroom`` (what it gets once the aggressor is capped shrinks with the
   shallower queue, so aim above the floor); any other disk
   wants what it does now. No disk wants more than its ceiling.
5. **Allocate** the capacity by weighted max-min fairness
   (:func:`iotguard.policy.allocation.fair_shares`): floors first, spare by
   tier weight, nobody above its estimated demand. The capacity is what the
   domain serves now while a disk starves (the evidence that the storage
   is full at this queue depth: an array serves less at a shallower
   queue, so the profile's saturated figure would over-promise); while
   disks above their floor queue it is at least ``min_capacity`` (the
   share of the profile's capacity the domain is known to serve at the
   shallow queue a capped domain runs: default 0, i.e. what it serves
   now; an array whose throughput hardly depends on the queue depth, like
   the paper's, is better served by a figure close to 1, otherwise the
   caps feed on the throughput they lowered); otherwise at least
   ``high_watermark``.
6. **Cap** only the disks above their allocation (weakness 1: a disk at or
   below its fair share is never capped), at their allocation, never below
   their floor, never above their ceiling. Caps are sent as both
   ``total_iops_sec`` and ``total_bytes_sec`` at the disk's mean I/O size,
   which bounds its cost whatever size it switches to.
7. **Release gradually** (weakness 2): a cap is raised by at most
   ``release_factor`` per interval, and removed once it would reach the
   disk's ceiling or the whole domain. A disk that runs at its cap is only
   raised while no uncapped disk has unmet demand (as in 2.: slow *and*
   always one in flight): raising it then would push the neighbours back
   under and the cap would be cut again, the oscillation that makes caps
   churn. Changes smaller than ``min_change`` are not sent, so caps do
   not flap with measurement noise.

Disks whose samples are ``stale`` are never tightened (their caps may be
raised or released). Everything is a handful of NumPy operations over the
domain's columns; the only Python loop builds the decisions for the disks
that change.
"""

import numpy as np

from iotguard.policy import allocation
from iotguard.policy import base
from iotguard.policy import costmodel

#: The domain's capacity in the cost model's unit.
CAPACITY = 1.0

DEFAULTS = {
    'high_watermark': 0.9,
    'low_watermark': 0.7,
    'latency_threshold_ms': 1.0,
    'latency_factor': 2.5,
    'busy_depth': 0.8,
    'release_factor': 1.5,
    'headroom': 0.2,
    'floor_margin': 0.2,
    'at_cap_ratio': 0.9,
    'tolerance': 0.05,
    'min_change': 0.1,
    'min_capacity': 0.0,
}


def _check(params: dict[str, float]) -> None:
    def fail(name: str, rule: str) -> None:
        raise ValueError('guarantee: %s must be %s, not %r'
                         % (name, rule, params[name]))

    for name, value in params.items():
        if not np.isfinite(value):
            fail(name, 'a finite number')
    if not 0 < params['low_watermark'] < params['high_watermark']:
        fail('low_watermark', '> 0 and below high_watermark (%r)'
             % params['high_watermark'])
    if params['latency_threshold_ms'] <= 0:
        fail('latency_threshold_ms', '> 0')
    if params['latency_factor'] < 0:
        fail('latency_factor', '>= 0')
    if params['busy_depth'] < 0:
        fail('busy_depth', '>= 0')
    if params['release_factor'] <= 1:
        fail('release_factor', '> 1')
    if params['headroom'] < 0:
        fail('headroom', '>= 0')
    if params['floor_margin'] < 0:
        fail('floor_margin', '>= 0')
    if not 0 < params['at_cap_ratio'] <= 1:
        fail('at_cap_ratio', 'in (0, 1]')
    if params['tolerance'] < 0:
        fail('tolerance', '>= 0')
    if not 0 <= params['min_capacity'] <= 1:
        fail('min_capacity', 'in [0, 1]')
    if not 0 <= params['min_change'] < 1:
        fail('min_change', 'in [0, 1)')
    if params['release_factor'] <= 1 + params['min_change']:
        fail('release_factor', 'above 1 + min_change (%r)'
             % (1 + params['min_change']))


def _release_point(snap: base.DomainSnapshot, ceil: base.FloatArray,
                   size: base.FloatArray,
                   cost: base.FloatArray) -> base.FloatArray:
    """The cap level (load) from which a cap can be released.

    The ceiling, or the whole domain when there is none, where the static
    limits alone keep the disk under the ceiling; never, where a tier
    ceiling sits below the static limits.
    """
    point = np.minimum(ceil, CAPACITY)
    if snap.static_iops is None or snap.static_bytes_sec is None:
        return point
    static = costmodel.limit_load(snap.static_iops, snap.static_bytes_sec,
                                  size, cost)
    with np.errstate(invalid='ignore'):
        below_static = ceil < static * (1.0 - 1e-9)
    result: base.FloatArray = np.where(below_static, np.inf, point)
    return result


class GuaranteePolicy:
    """Floors first, fair shares above them, caps only on the culprits."""

    name = 'guarantee'

    def __init__(self, **params: float) -> None:
        unknown = sorted(set(params) - set(DEFAULTS))
        if unknown:
            raise ValueError('guarantee: unknown parameter %s; known: %s'
                             % (unknown[0], ', '.join(sorted(DEFAULTS))))
        values = dict(DEFAULTS)
        values.update({k: float(v) for k, v in params.items()})
        _check(values)
        self.params = values
        self.high_watermark = values['high_watermark']
        self.low_watermark = values['low_watermark']
        self.latency_threshold_ms = values['latency_threshold_ms']
        self.latency_factor = values['latency_factor']
        self.busy_depth = values['busy_depth']
        self.release_factor = values['release_factor']
        self.headroom = values['headroom']
        self.floor_margin = values['floor_margin']
        self.at_cap_ratio = values['at_cap_ratio']
        self.tolerance = values['tolerance']
        self.min_change = values['min_change']
        self.min_capacity = values['min_capacity']

    def decide(self, snapshot: base.DomainSnapshot,
               now: float) -> list[base.Decision]:
        snap = snapshot
        if not len(snap):
            return []
        profile = snap.profile
        fresh = ~snap.stale
        capped = snap.capped

        # 1. everything in device-seconds per second
        size = costmodel.mean_io_size(snap.iops, snap.bytes_sec)
        cost = costmodel.op_cost(size, profile)
        u = costmodel.load(snap.iops, snap.bytes_sec, profile)
        ceil = costmodel.limit_load(snap.ceil_iops, snap.ceil_bytes_sec,
                                    size, cost)
        # A floor above the disk's own ceiling is kept up to the ceiling.
        floor = np.minimum(costmodel.floor_load(
            snap.floor_iops, snap.floor_bytes_sec, size, profile), ceil)
        # A cap is released only where the static limits alone keep the
        # disk under its ceiling; a tier ceiling below them is held by
        # the cap itself (never above the ceiling).
        hold = _release_point(snap, ceil, size, cost)
        cap = costmodel.limit_load(snap.cap_iops, snap.cap_bytes_sec, size,
                                   cost)
        total = float(u.sum())

        # 2. engagement, with hysteresis while caps are in force
        # Unmet demand: slow operations *and* always one in flight (Little:
        # outstanding = IOPS x latency); a disk that is idle between its
        # operations gets what it asks, however slow each one is.
        outstanding = snap.iops * snap.latency_ms / 1000.0
        slow_ms = np.maximum(self.latency_threshold_ms,
                             self.latency_factor * 1000.0 * cost)
        queueing = fresh & (snap.latency_ms > slow_ms)
        # A disk running at its own ceiling (the static limits Nova set,
        # or its tier's) waits in its own throttle: that is no unmet
        # demand the domain could serve.
        at_ceiling = fresh & (u >= self.at_cap_ratio * ceil)
        slow = queueing & (outstanding >= self.busy_depth) & ~at_ceiling
        # A cap is raised on a disk that runs at it (a probe for spare
        # capacity) only while no uncapped disk has unmet demand: otherwise
        # raising it would just push the neighbours back down, then be cut
        # again. A neighbour that is slow but idle between its operations
        # gets what it asks and does not hold the cap.
        at_cap = fresh & capped & (u >= self.at_cap_ratio * cap)
        congested = bool((slow & ~capped).any())
        # An idle disk keeps its cap as it is: it costs nothing, tells
        # nothing (no I/O size), and protects the neighbours the moment the
        # disk comes back (an on/off aggressor).
        may_raise = capped & ~(at_cap & congested) & (snap.iops > 0)
        starving = slow & (u < floor * (1.0 - self.tolerance))
        any_starving = bool(starving.any())
        engaged = any_starving or total > self.high_watermark * CAPACITY
        holding = bool(capped.any()) and total > (self.low_watermark
                                                  * CAPACITY)

        numbers = dict(domain_load=total, starving=float(starving.sum()))
        if not (engaged or holding):
            return self._relax(snap, may_raise, u, floor, ceil, hold, cap,
                               size, cost, numbers)

        # 3. demand estimate
        hungry = slow & ~capped
        demand = np.where(hungry, u * (1.0 + self.headroom), u)
        demand = np.where(starving, np.maximum(demand, floor * (
            1.0 + self.floor_margin)), demand)
        demand = np.minimum(np.where(at_cap, np.inf, demand), ceil)

        # 4. fair shares of what the domain can serve
        if any_starving:
            capacity = total
        elif bool(hungry.any()):
            capacity = max(total, self.min_capacity * CAPACITY)
        else:
            capacity = max(total, self.min_capacity * CAPACITY,
                           self.high_watermark * CAPACITY)
        share, level = allocation.fair_shares(capacity, floor, demand,
                                              snap.weight)
        target = np.minimum(np.maximum(share, floor), ceil)
        numbers.update(capacity=capacity, level=level)

        # 5. tighten the disks above their share; loosen gradually
        over = fresh & (u > share * (1.0 + self.tolerance))
        tighten = engaged & over & (target < cap * (1.0 - self.min_change))
        loosen = (may_raise & ~tighten
                  & (target > cap * (1.0 + self.min_change)))
        new = np.where(tighten, target,
                       np.minimum(target, cap * self.release_factor))
        release = loosen & (new >= hold)
        change = tighten | loosen
        extra = dict(share=share, target=target, demand=demand)
        return self._decisions(snap, change, release, new, u, floor, ceil,
                               cap, size, cost, numbers, extra, tighten)

    def _relax(self, snap: base.DomainSnapshot, may_raise: base.BoolArray,
               u: base.FloatArray, floor: base.FloatArray,
               ceil: base.FloatArray, hold: base.FloatArray,
               cap: base.FloatArray, size: base.FloatArray,
               cost: base.FloatArray,
               numbers: dict[str, float]) -> list[base.Decision]:
        """Calm domain: raise caps one step, release the loose ones.

        A cap already at a ceiling it must hold (the tier's, below the
        static limits) stays as it is.
        """
        new = np.minimum(cap * self.release_factor, np.maximum(ceil, cap))
        release = may_raise & (new >= hold)
        change = may_raise & (release | (new > cap * (1.0 + self.min_change)))
        if not change.any():
            return []
        return self._decisions(snap, change, release, new, u, floor, ceil,
                               cap, size, cost, numbers, {},
                               np.zeros(len(snap), dtype=bool))

    def _decisions(self, snap: base.DomainSnapshot, change: base.BoolArray,
                   release: base.BoolArray, new: base.FloatArray,
                   u: base.FloatArray, floor: base.FloatArray,
                   ceil: base.FloatArray, cap: base.FloatArray,
                   size: base.FloatArray, cost: base.FloatArray,
                   numbers: dict[str, float],
                   extra: dict[str, base.FloatArray],
                   tighten: base.BoolArray) -> list[base.Decision]:
        """Build the decisions of the disks in ``change`` (few)."""
        index = np.flatnonzero(change)
        tight = tighten[index]
        # A tightened cap is derived from the share at the disk's current
        # I/O size; a raised one scales the limits in force, so a change of
        # I/O size never turns a raise into a tighter limit of one kind.
        with np.errstate(invalid='ignore', divide='ignore'):
            ratio = np.where(tight, 0.0, new[index] / cap[index])
            ops = np.where(tight, new[index] / cost[index],
                           snap.cap_iops[index] * ratio)
            byts = np.where(tight, new[index] / cost[index] * size[index],
                            snap.cap_bytes_sec[index] * ratio)
        ops = np.minimum(ops, snap.ceil_iops[index])
        byts = np.minimum(byts, snap.ceil_bytes_sec[index])
        decisions = []
        for k, i in enumerate(index):
            seen = base.audit_numbers(
                load=u[i], floor=floor[i], ceiling=ceil[i], cap=cap[i],
                new_cap=new[i], io_size=size[i], iops=snap.iops[i],
                bytes_sec=snap.bytes_sec[i], latency_ms=snap.latency_ms[i],
                **{k2: v[i] for k2, v in extra.items()}, **numbers)
            if release[i]:
                decisions.append(base.Decision(
                    snap.disk_ids[i], base.RELEASE,
                    'guarantee: cap raised to the %s, released'
                    % ('ceiling' if ceil[i] <= CAPACITY else
                       'whole domain'), numbers=seen))
            elif tighten[i]:
                decisions.append(base.Decision(
                    snap.disk_ids[i], base.CAP,
                    'guarantee: load %.4f above its fair share %.4f, '
                    'capped at %.4f (floor %.4f)'
                    % (u[i], extra['share'][i], new[i], floor[i]),
                    iops=float(ops[k]), bytes_sec=float(byts[k]),
                    numbers=seen))
            else:
                decisions.append(base.Decision(
                    snap.disk_ids[i], base.CAP,
                    'guarantee: cap raised from %.4f to %.4f (at most x%g '
                    'per interval)' % (cap[i], new[i], self.release_factor),
                    iops=float(ops[k]), bytes_sec=float(byts[k]),
                    numbers=seen))
        return decisions
