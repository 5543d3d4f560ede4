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

The operator's account of it, with the reasons and measurements behind
each rule, is doc/source/admin/policies.rst. Every interval, level-based
(everything it needs is in the snapshot, but for a small :class:`Memory`
per domain: the learned service time, what each disk did when it was
last uncongested, the border and the moves held back):

1. **Cost.** Loads, floors, ceilings and caps in device-seconds per
   second at each disk's mean I/O size (:mod:`iotguard.policy.costmodel`).
2. **Unmet demand.** A deep disk is slow and always has a request in
   flight (Little's law); a shallow one (one request at a time) wants what
   it would send at the learned uncongested service time
   (:func:`closed_loop_demand`, bounded by :func:`remembered_demand`). A
   disk at its own ceiling has none. *Starving*: unmet demand below the
   floor. The latency objective's ``pressure``: the shallow disks'
   latency over the congestion threshold.
3. **Engage** above ``high_watermark``, on a starving disk or a pressure
   above 1; stay engaged down to ``low_watermark`` while caps are in force.
4. **Estimate demand**, never above the ceiling.
5. **Allocate** by weighted max-min fairness
   (:func:`iotguard.policy.allocation.fair_shares`) over what the domain
   serves, at least ``min_capacity`` or the *border* (a token bucket: the
   border); cut when the pressure is above 1 with every deep disk capped.
   The border follows the latency objective (:func:`adapt_border`).
6. **Cap** only the deep disks above their share, at it (:func:`spread`
   apart), within floor and ceiling, as both ``total_iops_sec`` and
   ``total_bytes_sec`` at the disk's I/O size.
7. **Release gradually**: at most ``release_factor`` per interval, not
   while neighbours wait, not on an idle disk; changes under
   ``min_change`` (``raise_change`` in the cases that need it) are not
   sent, and small moves wait for a second decision (:func:`confirmed`).

Disks whose samples are ``stale`` are never tightened (their caps may be
raised or released). Everything is a handful of NumPy operations over the
domain's columns; the only Python loop builds the decisions for the disks
that change.
"""

import dataclasses
import math

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
    'congestion_ms': 0.0,
    'congestion_factor': 8.0,
    'congestion_release': 0.7,
    'raise_change': 0.03,
    'border_max': 0.94,
    'border_step': 0.01,
    'confirm_change': 0.2,
}

#: How far, per decision, the learned uncongested service time follows
#: observations above it (a half-life of ~700 decisions, an hour at 5 s):
#: it falls at once to a lower observation, rises only slowly, so a long
#: congestion does not teach the policy that congestion is normal.
SERVICE_DRIFT = 0.001

#: The closed-loop estimate asks at most this many times what a disk does
#: now per decision: a closed loop that wants more shows it again at the
#: next decision.
CLOSED_LOOP_GROWTH = 2.0

#: A disk with at most this many requests in flight (IOPS x latency) is
#: *shallow*: a client sending one request at a time (the measure runs a
#: little over one as requests straddle the interval's edges).
SHALLOW_DEPTH = 1.2

#: A shallow disk whose latency is at most this many times the domain's
#: uncongested service time gets what it asks: what it does then is
#: remembered as its demand.
UNCONGESTED = 2.0

#: A disk using less than this share of its cap keeps the cap as it is:
#: raising it tells nothing and gives away the protection the moment it
#: floods again (an on/off aggressor).
IDLE_SHARE = 0.1

#: A capped disk doing more than this many times its cap is not held by
#: it yet: its sample began before the cap reached its throttle (which
#: lets at most a burst of a tenth of its rate through, QEMU's default).
UNHELD = 1.1

#: How far, either side, the caps of disks held at the same fair share
#: are spread apart (:func:`spread`).
SPREAD = 0.005


def spread(at_level: base.BoolArray) -> base.FloatArray:
    """A factor per disk: 1, but ``1 +- SPREAD`` for later ones at a level.

    The first disk held at the water level (``at_level``) and every other
    disk get 1; the second and later ones at the level get a factor in
    ``[1 - SPREAD, 1 + SPREAD]``.

    Floods with equal shares capped at the same instant get equal caps,
    and equal leaky buckets filled alike release their requests in
    lockstep: their bursts reach the storage together and a shallow disk
    waits behind all of them at once (in the simulator: the synchronous
    writer of ``aggressors`` at 0.945 of its demand with three equal caps,
    at 0.953 or more with caps a fraction of a per cent apart). Caps that
    far apart drift through each other's phase within a second. The k-th
    disk at the level gets the k-th term of the golden ratio's sequence,
    centred on the first (which keeps its share exactly), so any two are
    far apart.
    """
    rank = np.cumsum(at_level) - 1.0
    golden = (rank * 0.6180339887498949 + 0.5) % 1.0
    result: base.FloatArray = np.where(
        at_level, 1.0 + SPREAD * (2.0 * golden - 1.0), 1.0)
    return result


def _check(p: dict[str, float]) -> None:
    rules = [(name, bool(np.isfinite(value)), 'a finite number')
             for name, value in p.items()]
    rules += [
        ('low_watermark', 0 < p['low_watermark'] < p['high_watermark'],
         '> 0 and below high_watermark (%r)' % p['high_watermark']),
        ('latency_threshold_ms', p['latency_threshold_ms'] > 0, '> 0'),
        ('latency_factor', p['latency_factor'] >= 0, '>= 0'),
        ('busy_depth', p['busy_depth'] >= 0, '>= 0'),
        ('release_factor', p['release_factor'] > 1, '> 1'),
        ('headroom', p['headroom'] >= 0, '>= 0'),
        ('floor_margin', p['floor_margin'] >= 0, '>= 0'),
        ('at_cap_ratio', 0 < p['at_cap_ratio'] <= 1, 'in (0, 1]'),
        ('tolerance', p['tolerance'] >= 0, '>= 0'),
        ('min_capacity', 0 <= p['min_capacity'] <= 1, 'in [0, 1]'),
        ('min_change', 0 <= p['min_change'] < 1, 'in [0, 1)'),
        ('congestion_ms', p['congestion_ms'] >= 0,
         '>= 0 (0: congestion_factor x the learned service time)'),
        ('congestion_factor', p['congestion_factor'] > 1, '> 1'),
        ('congestion_release', 0 < p['congestion_release'] <= 1,
         'in (0, 1]'),
        ('raise_change', 0 <= p['raise_change'] < 1, 'in [0, 1)'),
        ('border_max', p['high_watermark'] <= p['border_max'] <= 1,
         'in [high_watermark (%r), 1]' % p['high_watermark']),
        ('border_step', 0 < p['border_step'] <= 1, 'in (0, 1]'),
        ('confirm_change', 0 <= p['confirm_change'] < 1, 'in [0, 1)'),
        ('release_factor', p['release_factor'] > 1 + p['min_change'],
         'above 1 + min_change (%r)' % (1 + p['min_change']))]
    for name, ok, rule in rules:
        if not ok:
            raise ValueError('guarantee: %s must be %s, not %r'
                             % (name, rule, p[name]))


def floor_and_ceiling(snap: base.DomainSnapshot, size: base.FloatArray,
                      cost: base.FloatArray
                      ) -> tuple[base.FloatArray, base.FloatArray]:
    """Each disk's floor and ceiling as loads, at its current I/O size.

    A floor above the disk's own ceiling is kept up to the ceiling.
    """
    ceil = costmodel.limit_load(snap.ceil_iops, snap.ceil_bytes_sec, size,
                                cost)
    return np.minimum(costmodel.floor_load(
        snap.floor_iops, snap.floor_bytes_sec, size, snap.profile), ceil), ceil


def _static_and_release(snap: base.DomainSnapshot, ceil: base.FloatArray,
                        size: base.FloatArray, cost: base.FloatArray
                        ) -> tuple[base.FloatArray, base.FloatArray]:
    """The static limits' load, and the load from which a cap is released.

    The static limits are Nova's or Cinder's (``inf``: none). A cap is
    released at the ceiling, or the whole domain when there is none, where
    the static limits alone keep the disk under the ceiling; never, where
    a tier ceiling sits below the static limits.
    """
    point = np.minimum(ceil, CAPACITY)
    if snap.static_iops is None or snap.static_bytes_sec is None:
        return np.full(len(snap), np.inf), point
    static = costmodel.limit_load(snap.static_iops, snap.static_bytes_sec,
                                  size, cost)
    with np.errstate(invalid='ignore'):
        below_static = ceil < static * (1.0 - 1e-9)
    return static, np.where(below_static, np.inf, point)


def learn_service(known: float | None, latency_ms: base.FloatArray,
                  cost: base.FloatArray, usable: base.BoolArray
                  ) -> float | None:
    """The domain's uncongested service time, per device-second of cost.

    Each interval the fastest disk (latency / op cost, over ``usable``:
    disks with I/O and no cap, whose latency has no throttle wait) is
    the least queued one. The estimate falls at once to a lower ratio and
    follows a higher one by ``SERVICE_DRIFT`` per call; never below 1 (an
    operation takes at least its cost). ``None`` until a disk did I/O.
    """
    if not usable.any():
        return known
    seen = max(1.0, float(np.min(latency_ms[usable] / (1000.0
                                                       * cost[usable]))))
    if known is None or seen < known:
        return seen
    return known + SERVICE_DRIFT * (seen - known)


def closed_loop_demand(iops: base.FloatArray, latency_ms: base.FloatArray,
                       service_ms: base.FloatArray) -> base.FloatArray:
    """Operations/s a client with one request at a time would send.

    A client that keeps at most one request in flight spends ``1 / iops``
    per operation: ``latency`` in the storage, the rest thinking (or
    pacing). At the uncongested ``service`` time it would send ``1 /
    (think + service)``: what it loses to the queue, whether it is a
    closed loop that computes between synchronous writes or a paced one
    (which the estimate over-reads while the queue lasts: once the queue
    is short the two agree). Never below what it does now.
    """
    with np.errstate(divide='ignore', invalid='ignore'):
        think = np.maximum(0.0, 1.0 / iops - latency_ms / 1000.0)
        ops = 1.0 / (think + service_ms / 1000.0)
    ops = np.minimum(ops, CLOSED_LOOP_GROWTH * iops)
    result: base.FloatArray = np.where(
        (iops > 0) & (latency_ms > service_ms), np.maximum(ops, iops), iops)
    return result


@dataclasses.dataclass
class Memory:
    """What ``guarantee`` remembers of one domain between decisions.

    ``service``: the uncongested service time per device-second of cost
    (:func:`learn_service`); ``asked``: the load each disk did when it was
    last uncongested (``nan``: never seen so), aligned with ``disk_ids``;
    ``cut_over_border``: whether the domain's last cut was made above the
    border; ``border``: the border the domain is held at
    (:func:`adapt_border`; ``None``: ``high_watermark``, not adapted yet);
    ``wanted``: which way the last decision wanted each disk's cap moved
    and did not move it yet (-1 down, +1 up, 0 neither), aligned too.
    """

    service: float | None = None
    #: only then are raises toward the share sent from raise_change on
    cut_over_border: bool = True
    border: float | None = None
    disk_ids: tuple[str, ...] = ()
    asked: base.FloatArray = dataclasses.field(
        default_factory=lambda: np.zeros(0))
    wanted: base.FloatArray = dataclasses.field(
        default_factory=lambda: np.zeros(0))

    def align(self, disk_ids: tuple[str, ...]) -> base.FloatArray:
        """``asked`` (and ``wanted``) in the order of ``disk_ids``.

        New disks: ``asked`` ``nan``, ``wanted`` 0.
        """
        if disk_ids != self.disk_ids:
            old = dict(zip(self.disk_ids, zip(self.asked.tolist(),
                                              self.wanted.tolist())))
            rows = [old.get(d, (math.nan, 0.0)) for d in disk_ids]
            self.asked = np.array([r[0] for r in rows], dtype=np.float64)
            self.wanted = np.array([r[1] for r in rows], dtype=np.float64)
            self.disk_ids = disk_ids
        return self.asked


def adapt_border(border: float, low: float, high: float, step: float,
                 held: bool, met: bool, missed: bool) -> float:
    """The border a domain is held at, after one more interval.

    The border is the queue's headroom (5. in the module's docstring): it
    follows the latency objective, as SIOC's and PARDA's windows do,
    between ``low`` (``high_watermark``) and ``high`` (``border_max``).
    While the domain is ``held`` at it (caps in force, a capped disk
    running at its cap, the load within the tolerance of the border) and
    the objective is ``met`` with room (the shallow disks' latency well
    under their threshold, nobody waiting or starving), the border rises
    by ``step``. When the objective is ``missed`` at or under it (the
    caps alone fill the queue again: the border is too high for this
    domain) it falls back to ``low`` at once, a cut from ``raise_change``
    on, rather than probing down step by step (each step a change of
    every cap). Otherwise it stays: in particular a miss above the border
    is a new flood's doing, not the border's.
    """
    if missed:
        return low
    if held and met:
        return min(high, border + step)
    return border


def confirmed(memory: Memory, tighten: base.BoolArray,
              loosen: base.BoolArray, small: base.BoolArray,
              urgent: bool) -> tuple[base.BoolArray, base.BoolArray]:
    """The cuts and raises to send now; remembers the others' direction.

    A ``small`` move of a cap in force (by less than ``confirm_change``)
    is sent only when the decision before wanted that cap moved the same
    way: the samples of one interval wander by ten per cent and more (a
    client thinking between its writes does 7 or 8 of them in a second),
    and a cut on one sample then a raise on the next is churn, not
    control. Not held back: a new cap, a large move, a release, and a cut
    while the latency objective is missed or a floor is at stake
    (``urgent``). What is held back is remembered in ``memory.wanted``
    (aligned with the disks) for the next decision.
    """
    want = np.where(tighten, -1.0, np.where(loosen, 1.0, 0.0))
    held = small & (want != 0) & (want != memory.wanted)
    if urgent:
        held &= ~tighten
    memory.wanted = np.where(held, want, 0.0)
    return tighten & ~held, loosen & ~held


def remembered_demand(asked: base.FloatArray, closed: base.FloatArray,
                      u: base.FloatArray) -> base.FloatArray:
    """A shallow disk's demand, from two estimates.

    The closed-loop estimate (at most what the disk did when uncongested).
    The closed-loop estimate over-reads a paced client (its slack looks
    like thinking); what the disk did when it was last uncongested
    under-reads a client whose load grew since. Their smaller is kept;
    a disk never seen uncongested is taken at what it does now. Never
    below what it does now.
    """
    known = np.isfinite(asked)
    result: base.FloatArray = np.maximum(u, np.where(
        known, np.minimum(closed, np.where(known, asked, 0.0)), u))
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
        self.congestion_ms = values['congestion_ms']
        self.congestion_factor = values['congestion_factor']
        self.congestion_release = values['congestion_release']
        #: (never above min_change)
        self.raise_change = min(values['raise_change'], self.min_change)
        self.border_max = values['border_max']
        self.border_step = values['border_step']
        self.confirm_change = values['confirm_change']
        #: what is remembered between calls, per domain (:class:`Memory`)
        self.memory: dict[str, Memory] = {}

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
        floor, ceil = floor_and_ceiling(snap, size, cost)
        static, hold = _static_and_release(snap, ceil, size, cost)
        cap = costmodel.limit_load(snap.cap_iops, snap.cap_bytes_sec, size,
                                   cost)
        # What the disks are charged (the allocation's unit) and the
        # domain's own load (the watermarks'): equal in the additive form;
        # in the max form a mix of IOPS-bound and bandwidth-bound disks is
        # charged more than the device's load (see costmodel).
        total = float(u.sum())
        domain = costmodel.domain_load(float(snap.iops.sum()),
                                       float(snap.bytes_sec.sum()), profile)

        # 2. engagement, with hysteresis while caps are in force
        # Unmet demand: slow operations *and* always one in flight (Little:
        # outstanding = IOPS x latency); a disk that is idle between its
        # operations gets what it asks, however slow each one is ...
        outstanding = snap.iops * snap.latency_ms / 1000.0
        slow_ms = np.maximum(self.latency_threshold_ms,
                             self.latency_factor * 1000.0 * cost)
        queueing = fresh & (snap.latency_ms > slow_ms)
        # A disk running at its own ceiling (the static limits Nova set,
        # or its tier's) waits in its own throttle: that is no unmet
        # demand the domain could serve.
        at_ceiling = fresh & (u >= self.at_cap_ratio * ceil)
        slow = queueing & (outstanding >= self.busy_depth) & ~at_ceiling
        # ... unless it keeps at most one request in flight and loses to
        # the queue what it would send at the domain's uncongested service
        # time (a closed loop that thinks between synchronous writes).
        active = fresh & (snap.iops > 0) & (snap.latency_ms > 0)
        memory = self.memory.setdefault(snap.domain, Memory())
        learned = memory.service = learn_service(
            memory.service, snap.latency_ms, cost,
            active & ~capped & ~at_ceiling)
        service_ms = 1000.0 * cost * (learned or 1.0)
        threshold_ms = (np.full(len(snap), self.congestion_ms)
                        if self.congestion_ms else
                        self.congestion_factor * service_ms)
        shallow = (active & ~capped & ~at_ceiling
                   & (outstanding <= SHALLOW_DEPTH))
        asked = memory.align(snap.disk_ids)
        calm = shallow & (snap.latency_ms <= UNCONGESTED * service_ms)
        asked[calm] = u[calm]
        closed = np.where(shallow, remembered_demand(asked, closed_loop_demand(
            snap.iops, snap.latency_ms, service_ms) * cost, u), u)
        wants = shallow & (closed > u * (1.0 + self.tolerance))
        # The latency objective: the shallow disks' latency against the
        # domain's congestion threshold.
        # (A calm domain, below the low watermark, has no queue to keep
        # short: a slow disk there is slow for another reason.)
        pressure = float(np.max(np.where(
            shallow, snap.latency_ms / threshold_ms, 0.0))) if domain > (
                self.low_watermark * CAPACITY) else 0.0
        # A cap is raised on a disk that runs at it (a probe for spare
        # capacity) only while no uncapped disk has unmet demand and the
        # shallow disks' latency is well under the threshold: otherwise
        # raising it would just push the neighbours back down, then be cut
        # again. A neighbour that is slow but idle between its operations
        # and would not send more at the uncongested service time gets
        # what it asks and does not hold the cap.
        at_cap = fresh & capped & (u >= self.at_cap_ratio * cap)
        unmet = (slow | wants) & ~capped
        congested = (bool((slow & ~capped).any())
                     or pressure > self.congestion_release)
        # An idle disk keeps its cap as it is: it costs nothing, tells
        # nothing (no I/O size), and protects the neighbours the moment the
        # disk comes back (an on/off aggressor).
        may_raise = (capped & ~(at_cap & congested)
                     & (u >= IDLE_SHARE * cap))
        starving = (slow | wants) & (u < floor * (1.0 - self.tolerance))
        any_starving = bool(starving.any())
        engaged = (any_starving or pressure > 1.0
                   or domain > self.high_watermark * CAPACITY)
        any_capped = bool(capped.any())
        holding = any_capped and domain > self.low_watermark * CAPACITY

        # The border follows the latency objective (adapt_border): up
        # while the caps hold the domain at it with the objective met with
        # room, back to high_watermark when the caps alone miss it there:
        # every deep disk capped (a new flood, still uncapped, misses it
        # whatever the border; its first window may even read under the
        # border, straddling its start).
        border = memory.border or self.border_max * CAPACITY
        deep_uncapped = bool((active & ~capped & ~shallow).any())
        border = memory.border = adapt_border(
            border, self.high_watermark * CAPACITY,
            self.border_max * CAPACITY, self.border_step * CAPACITY,
            held=bool(at_cap.any()) and domain >= border * (
                1.0 - self.tolerance),
            met=(pressure <= self.congestion_release
                 and not bool(unmet.any()) and not any_starving),
            missed=(any_capped and not deep_uncapped and domain <= border
                    and (pressure > 1.0 or any_starving)))
        numbers = dict(domain_load=domain, charged=total,
                       starving=float(starving.sum()),
                       waiting=float(unmet.sum()), pressure=pressure,
                       service_ratio=learned or math.nan, border=border)
        if not (engaged or holding):
            memory.wanted[:] = 0.0
            return self._relax(snap, may_raise, u, floor, ceil, hold, cap,
                               size, cost, numbers)

        # 3. demand estimate
        hungry = slow & ~capped
        demand = np.maximum(np.where(hungry, u * (1.0 + self.headroom), u),
                            closed)
        demand = np.where(starving, np.maximum(demand, floor * (
            1.0 + self.floor_margin)), demand)
        demand = np.minimum(np.where(at_cap, np.inf, demand), ceil)

        # 4. fair shares of what the domain can serve
        if profile.form == base.MAX:
            # A token bucket serves its rate at any queue depth, and its
            # one FIFO queue grows without bound as it fills: share out
            # the border, whatever it serves now.
            capacity = border
        elif any_starving:
            capacity = total
        elif bool(unmet.any()):
            capacity = max(total, self.min_capacity * CAPACITY)
        else:
            capacity = max(total, self.min_capacity * CAPACITY, border)
        queue_cut = pressure > 1.0 and (
            (total > border and any_capped)
            or not deep_uncapped)
        if queue_cut:
            # the shallow disks queue past the threshold although every
            # deep queue is capped (the caps fill the array), or above the
            # border with caps already in force (a new flood joins a
            # domain under control; the first engagement shares out what
            # is served): share out less. Above the border, the border
            # (where a raise would bring the caps back: cut and raise
            # would be two changes); at or under it, 85 % of what is
            # served or less.
            if total > border:
                capacity = min(capacity, border)
            else:
                capacity = min(capacity, total * max(0.85, pressure ** -0.5))
        share, level = allocation.fair_shares(capacity, floor, demand,
                                              snap.weight)
        # (disks held at the water level: below their demand)
        at_level = share < demand * (1.0 - 1e-9)
        target = np.minimum(np.maximum(share * spread(at_level), floor),
                            ceil)
        numbers.update(capacity=capacity, level=level)

        # 5. tighten the disks above their share; loosen gradually
        # A shallow disk that wants more may lose less than the tolerance
        # of a big neighbour's share: then any disk above its share gives
        # way.
        slack = 0.0 if bool(wants.any()) else self.tolerance
        # A disk with at most one request in flight adds at most one to
        # the queue: it is never what keeps the queue long.
        # A cap at the disk's static limits would change nothing.
        over = fresh & ~shallow & (u > share * (1.0 + slack))
        # A cut to the border is sent from raise_change on: the evidence
        # is the queue itself, not a measurement that may be noise. So is
        # a token bucket's above its border: its one queue grows without
        # bound, whatever its disks' latency shows (a disk held by its
        # own ceiling shows nothing), and a border close to 1 leaves
        # less than min_change between the caps that fill it and their
        # shares at the border.
        cut_step = (self.raise_change if queue_cut or (
            profile.form == base.MAX and domain > border)
            else self.min_change)
        # A capped disk running above its cap is not held by it yet (the
        # sample began before the cap reached its throttle): the domain's
        # samples still show the world before the cap, and a second cut
        # on them would overshoot (then be raised back).
        unheld = capped & (u > cap * UNHELD)
        tighten = engaged & over & ~unheld & (
            target < np.minimum(cap, static) * (1.0 - cut_step))
        # Under the border the raise back toward the share is sent from
        # raise_change on: a cap cut from above the border (to what was
        # served less the starving disks' margin, or to 85 % of it) lands
        # a few per cent under its share at the border, and min_change
        # would leave it there for good, the array idle under the border.
        # Not after a cut made under the border: there a neighbour
        # starved or queued with the array under the border, which is
        # then no level the array can run at (the raise would be cut
        # again, and again: churn).
        if bool(tighten.any()):
            memory.cut_over_border = domain > border
        step = (self.raise_change if domain < border
                and memory.cut_over_border else self.min_change)
        numbers.update(raise_step=step, cut_step=cut_step,
                       queue_cut=float(queue_cut),
                       cut_over_border=float(memory.cut_over_border))
        loosen = (may_raise & ~tighten
                  & (target > cap * (1.0 + step)))
        new = np.where(tighten, target,
                       np.minimum(target, cap * self.release_factor))
        release = loosen & (new >= hold)
        with np.errstate(invalid='ignore', divide='ignore'):
            small = capped & (np.abs(new / cap - 1.0) < self.confirm_change)
        tighten, loosen = confirmed(memory, tighten, loosen & ~release, small,
                                    urgent=pressure > 1.0 or any_starving)
        loosen |= release
        change = tighten | loosen
        extra = dict(share=share, target=target, demand=demand, asked=asked,
                     service_ms=service_ms, threshold_ms=threshold_ms)
        return self._decisions(snap, change, release, new, u, floor, ceil,
                               cap, size, cost, numbers, extra, tighten,
                               step)

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
                               np.zeros(len(snap), dtype=bool),
                               self.min_change)

    def _decisions(self, snap: base.DomainSnapshot, change: base.BoolArray,
                   release: base.BoolArray, new: base.FloatArray,
                   u: base.FloatArray, floor: base.FloatArray,
                   ceil: base.FloatArray, cap: base.FloatArray,
                   size: base.FloatArray, cost: base.FloatArray,
                   numbers: dict[str, float],
                   extra: dict[str, base.FloatArray],
                   tighten: base.BoolArray,
                   step: float) -> list[base.Decision]:
        """Build the decisions of the disks in ``change`` (few).

        A raise is sent when it moves the cap by more than ``step``.
        """
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
        # A cap that reaches the disk's ceiling (one it must hold: the
        # tier's, below the static limits) is the ceiling itself, both
        # keys: derived at one I/O size, the key that does not bind there
        # (IOPS under a bytes ceiling) would bind at another size and be
        # raised again every time the size dips, to no end.
        top = new[index] >= ceil[index] * (1.0 - 1e-9)
        ops = np.where(top, snap.ceil_iops[index], ops)
        byts = np.where(top, snap.ceil_bytes_sec[index], byts)
        # A raise is judged by what it lets the disk do at its current I/O
        # size, both keys and the ceilings together: one that moves that
        # by no more than min_change (a key raised while the other, held
        # at a ceiling, binds) is no change, only an RPC, a libvirt call
        # and an audit record.
        effective = costmodel.limit_load(ops, byts, size[index], cost[index])
        sent = (tight | release[index]
                | (effective > cap[index] * (1.0 + step)))
        if not sent.any():
            return []
        index, tight = index[sent], tight[sent]
        # The audit numbers of every decision at once: the disk's, then
        # the domain's.
        names = ('load', 'floor', 'ceiling', 'cap', 'new_cap', 'io_size',
                 'iops', 'bytes_sec', 'latency_ms') + tuple(extra)
        columns = np.column_stack([column[index] for column in (
            u, floor, ceil, cap, new, size, snap.iops, snap.bytes_sec,
            snap.latency_ms, *extra.values())])
        audit = base.audit_rows(names, columns, numbers)
        # The reasons' numbers: load, share (only decide() tightens, and it
        # gives the shares), new cap, floor, cap in force, ceiling.
        share = names.index('share') if 'share' in extra else 4
        released = release[index]
        raised = ('guarantee: cap raised from %%.4f to %%.4f (at most x%g '
                  'per interval%s)' % (
                      self.release_factor,
                      '' if step >= self.min_change else
                      '; under the border %.4f sent from +%g %%%%'
                      % (numbers['border'], 100 * step)))
        # a cut made to keep the latency objective says so, and at which
        # border (adapt_border: it moves)
        missed = ('; latency objective missed, capacity %.4f shared out '
                  '(border %.4f)' % (numbers['capacity'], numbers['border'])
                  if numbers.get('queue_cut') else '')
        reasons = [
            'guarantee: cap raised to the %s, released'
            % ('ceiling' if ceil_i <= CAPACITY else 'whole domain')
            if released_i else
            'guarantee: load %.4f above its fair share %.4f, capped at '
            '%.4f (floor %.4f)%s' % (load, share_i, new_i, floor_i, missed)
            if tightened else raised % (cap_i, new_i)
            for released_i, tightened, (load, share_i, new_i, floor_i, cap_i,
                                        ceil_i)
            in zip(released.tolist(), tight.tolist(),
                   columns[:, [0, share, 4, 1, 3, 2]].tolist())]
        # A release lifts both limits.
        ops, byts = ops[sent], byts[sent]
        ops[released] = byts[released] = np.inf
        return base.make_decisions(
            [snap.disk_ids[i] for i in index.tolist()],
            [base.RELEASE if released_i else base.CAP
             for released_i in released.tolist()],
            reasons, ops.tolist(), byts.tolist(), audit)
