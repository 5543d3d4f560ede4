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
per domain), in pure stages :meth:`GuaranteePolicy.decide` chains:

1. **Cost** (:meth:`Loads.of`). Loads, floors, ceilings and caps in
   device-seconds per second at each disk's mean I/O size
   (:mod:`iotguard.policy.costmodel`).
2. **Unmet demand** (:func:`unmet_demand`). A deep disk is slow and
   always has a request in flight (Little's law); a shallow one (one
   request at a time) wants what it would send at the learned uncongested
   service time (:func:`closed_loop_demand`, bounded by
   :func:`remembered_demand`). A disk at its own ceiling has none.
   *Starving*: unmet demand below the floor. The latency objective's
   ``pressure``: the shallow disks' latency over the congestion threshold,
   or a disk's over its tier's ``latency_p99_ms`` (*late*: never capped
   for the queue, it keeps what it does while the others share the rest);
   a disk's latency there is its 99th percentile where the agent measures
   it (``[agent] latency_histograms``), else its mean.
3. **Engage** above ``high_watermark``, on a starving disk or a pressure
   above 1; stay engaged down to ``low_watermark`` while caps are in force.
4. **Estimate demand** (:func:`estimate_demand`), never above the ceiling.
5. **Allocate** (:func:`allocate`) by weighted max-min fairness
   (:func:`iotguard.policy.allocation.fair_shares`) over what the domain
   serves, at least ``min_capacity`` or the *border* (a token bucket: the
   border); cut when the pressure is above 1 with every deep disk capped
   or a disk late.
   The border follows the latency objective (:func:`adapt_border`).
6. **Cap** (:func:`moves`) only the deep disks above their share, at it
   (:func:`spread` apart), within floor and ceiling, as both
   ``total_iops_sec`` and ``total_bytes_sec`` at the disk's I/O size.
7. **Release gradually**: at most ``release_factor`` per interval, not
   while neighbours wait, not on an idle disk; changes under
   ``min_change`` (``raise_change`` in the cases that need it) are not
   sent, and small moves wait for a second decision (:func:`confirmed`);
   for :data:`CROWDED_S` after the caps alone missed a floor or the
   objective twice in a row, only into the room under that load
   (:func:`crowding`, :func:`within_room`).

Disks whose samples are ``stale`` are never tightened (their caps may be
raised or released).
"""

from collections.abc import Mapping
import dataclasses
import math
from typing import Any
from typing import NamedTuple

import numpy as np

from iotguard import policy
from iotguard.policy import allocation
from iotguard.policy import base
from iotguard.policy import burst
from iotguard.policy import costmodel

#: The domain's capacity in the cost model's unit.
CAPACITY = 1.0


@dataclasses.dataclass(eq=False)
class Params:
    """The policy's parameters: default, bounds and meaning of each.

    The docs' table (admin/policies.rst) and the API's schema are made
    from them (:func:`iotguard.policy.param`).
    """

    high_watermark: float = policy.param(
        0.9, '(0, 1]', 'Domain load (fraction of the profile\'s capacity) '
        'above which the policy engages; the lowest border (the capacity '
        'shared out while nobody starves, a token bucket\'s capacity), the '
        'one it falls back to when the caps alone miss the latency '
        'objective.')
    low_watermark: float = policy.param(
        0.7, '(0, 1)', 'While caps are in force, the load below which it '
        'disengages and releases them step by step (below '
        '``high_watermark``).')
    latency_threshold_ms: float = policy.param(
        1.0, '(0, inf)', 'An operation is slow when it takes more than '
        '``latency_factor`` times its cost and more than this many '
        'milliseconds.')
    latency_factor: float = policy.param(
        2.5, '[0, inf)', 'An operation is slow when it takes more than this '
        'many times its cost on the domain.')
    busy_depth: float = policy.param(
        0.8, '[0, inf)', 'Operations in flight (IOPS x latency) from which a '
        'slow disk counts as waiting for more.')
    release_factor: float = policy.param(
        1.5, '(1, inf)', 'Most a cap grows per interval (above '
        '``1 + min_change``).')
    headroom: float = policy.param(
        0.2, '[0, inf)', 'An uncapped disk with unmet demand is assumed to '
        'want this much more than it gets.')
    floor_margin: float = policy.param(
        0.2, '[0, inf)', 'A starving disk is assumed to want its floor plus '
        'this margin.')
    at_cap_ratio: float = policy.param(
        0.9, '(0, 1]', 'A capped disk running at this fraction of its cap '
        'wants more.')
    tolerance: float = policy.param(
        0.05, '[0, inf)', 'Slack on "above its share" and "below its floor" '
        '(measurement noise).')
    min_change: float = policy.param(
        0.1, '[0, 1)', 'Relative change below which a cap is left alone.')
    min_capacity: float = policy.param(
        0.0, '[0, 1]', 'Fraction of the profile\'s capacity assumed to be '
        'served while disks above their floor queue and none starves (0: '
        'what is served now).')
    congestion_ms: float = policy.param(
        0.0, '[0, inf)', 'The domain\'s congestion threshold in ms, like '
        'SIOC\'s (0: ``congestion_factor`` x the learned uncongested '
        'service time of each disk\'s operations).')
    congestion_factor: float = policy.param(
        8.0, '(1, inf)', 'The derived threshold, in multiples of the learned '
        'service time.')
    congestion_release: float = policy.param(
        0.7, '(0, 1]', 'Fraction of the threshold under which a cap at its '
        'limit may be raised; between it and the threshold caps hold '
        'still.')
    raise_change: float = policy.param(
        0.03, '[0, 1)', '``min_change`` but for a raise toward the share '
        'while the domain\'s load is under the border (after a cut made '
        'above it), and for a cut for the latency objective (never more '
        'than ``min_change``).')
    border_max: float = policy.param(
        0.94, '(0, 1]', 'The highest border, and the one a domain starts '
        'from (at least ``high_watermark``; ``high_watermark``: a fixed '
        'border).')
    border_step: float = policy.param(
        0.01, '(0, 1]', 'How much the border rises per interval while the '
        'domain is held at it and the latency objective is met with room.')
    confirm_change: float = policy.param(
        0.2, '[0, 1)', 'A move of a cap in force smaller than this '
        '(relative) is sent only when the decision before wanted it too, '
        'unless it is a cut while the latency objective is missed or a '
        'floor is at stake (0: every move at once).')

    def __post_init__(self) -> None:
        # the bounds are checked by GuaranteePolicy; the rules across them
        for name, ok, rule in (
                ('low_watermark', self.low_watermark < self.high_watermark,
                 'below high_watermark (%r)' % self.high_watermark),
                ('border_max', self.border_max >= self.high_watermark,
                 'at least high_watermark (%r)' % self.high_watermark),
                ('release_factor', self.release_factor > 1 + self.min_change,
                 'above 1 + min_change (%r)' % (1 + self.min_change))):
            if not ok:
                raise ValueError('guarantee: %s must be %s, not %r'
                                 % (name, rule, getattr(self, name)))
        self.raise_change = min(self.raise_change, self.min_change)


PARAMS = policy.declared(Params)
DEFAULTS = dataclasses.asdict(Params())

#: How far, per decision, the learned uncongested service time follows
#: observations above it (:func:`learn_service`; a half-life of ~700
#: decisions, an hour at 5 s): a long congestion must not teach the
#: policy that congestion is normal.
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

#: A lapsed cap comes back where it was held (:attr:`Memory.held`) when it
#: was in force at most this many seconds ago (an outage of the controller,
#: the broker or the database, a failover); a disk whose cap lapsed longer
#: ago is decided afresh, from its fair share.
HELD_S = 300.0
#: When a held cap was last in force is refreshed in the memory this often
#: (s): a capped domain's memory is not written every round for it.
HELD_REFRESH_S = 60.0

#: After the caps alone missed a floor or the latency objective at some
#: domain load, caps are raised only into the room under that load (less
#: the tolerance) for this many seconds (:func:`within_room`): the share
#: the cost model promises above it is what the domain did not serve. Then
#: the policy may try again: one raise and one cut in five minutes at most.
CROWDED_S = 300.0

#: How far, either side, the caps of disks held at the same fair share
#: are spread apart (:func:`spread`).
SPREAD = 0.005


def spread(at_level: base.BoolArray) -> base.FloatArray:
    """A factor per disk: 1, within ``1 +- SPREAD`` for later ones at a level.

    Equal caps set at one instant release their requests in lockstep:
    the bursts reach the storage together and a shallow disk waits
    behind all of them at once (measured: admin/policies.rst). Caps a
    fraction of a per cent apart drift through each other's phase within
    a second. The k-th disk at the level gets the k-th term of the golden
    ratio's sequence, centred on the first (which keeps its share
    exactly), so any two are far apart.
    """
    rank = np.cumsum(at_level) - 1.0
    golden = (rank * 0.6180339887498949 + 0.5) % 1.0
    result: base.FloatArray = np.where(
        at_level, 1.0 + SPREAD * (2.0 * golden - 1.0), 1.0)
    return result


class Loads(NamedTuple):
    """A snapshot's disks in device-seconds per second (step 1)."""

    size: base.FloatArray    # mean I/O size (bytes)
    cost: base.FloatArray    # of one operation at that size
    u: base.FloatArray       # what each disk does
    floor: base.FloatArray
    ceil: base.FloatArray
    cap: base.FloatArray     # the cap in force (inf: none)
    static: base.FloatArray  # Nova's or Cinder's static limits (inf: none)
    #: a cap raised this far is released: at the ceiling (or the whole
    #: domain without one) where the static limits alone keep the disk
    #: under it; never where a tier ceiling sits below the static limits
    hold: base.FloatArray

    @classmethod
    def of(cls, snap: base.DomainSnapshot) -> 'Loads':
        size = costmodel.mean_io_size(snap.iops, snap.bytes_sec)
        cost = costmodel.op_cost(size, snap.profile)
        ceil = costmodel.limit_load(snap.ceil_iops, snap.ceil_bytes_sec,
                                    size, cost)
        # a floor above the disk's own ceiling is kept up to the ceiling
        floor = np.minimum(costmodel.floor_load(
            snap.floor_iops, snap.floor_bytes_sec, size, snap.profile), ceil)
        cap = costmodel.limit_load(snap.cap_iops, snap.cap_bytes_sec, size,
                                   cost)
        hold = np.minimum(ceil, CAPACITY)
        if snap.static_iops is None or snap.static_bytes_sec is None:
            static = np.full(len(snap), np.inf)
        else:
            static = costmodel.limit_load(snap.static_iops,
                                          snap.static_bytes_sec, size, cost)
            with np.errstate(invalid='ignore'):
                hold = np.where(ceil < static * (1.0 - 1e-9), np.inf, hold)
        return cls(size, cost, costmodel.load(snap.iops, snap.bytes_sec,
                                              snap.profile),
                   floor, ceil, cap, static, hold)


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

    Such a client spends ``1 / iops`` per operation: ``latency`` in the
    storage, the rest thinking (or pacing). At the uncongested ``service``
    time it would send ``1 / (think + service)`` (a paced client is
    over-read while the queue lasts). Never below what it does now.
    """
    with np.errstate(divide='ignore', invalid='ignore'):
        think = np.maximum(0.0, 1.0 / iops - latency_ms / 1000.0)
        ops = 1.0 / (think + service_ms / 1000.0)
    ops = np.minimum(ops, CLOSED_LOOP_GROWTH * iops)
    result: base.FloatArray = np.where(
        (iops > 0) & (latency_ms > service_ms), np.maximum(ops, iops), iops)
    return result


@dataclasses.dataclass(frozen=True)
class Memory:
    """What ``guarantee`` remembers of one domain between decisions.

    The state :meth:`GuaranteePolicy.decide` takes and returns (never
    changed in place); :meth:`to_dict` and :meth:`from_dict` keep it as
    JSON (the controller stores it with the domain, so that whichever
    controller decides the domain next goes on from it).
    """

    #: the uncongested service time per device-second of cost
    #: (:func:`learn_service`)
    service: float | None = None
    #: whether the last cut was made above the border (see the raise step)
    cut_over_border: bool = True
    #: the border the domain is held at (:func:`adapt_border`; ``None``:
    #: ``border_max``, not adapted yet)
    border: float | None = None
    #: the disks of ``asked`` and ``wanted``, by position (:meth:`align`)
    disk_ids: tuple[str, ...] = ()
    #: each disk's load when last uncongested (``nan``: never seen so)
    asked: base.FloatArray = dataclasses.field(
        default_factory=lambda: np.zeros(0))
    #: which way the last decision wanted each cap moved and did not move
    #: it yet (-1 down, +1 up, 0 neither)
    wanted: base.FloatArray = dataclasses.field(
        default_factory=lambda: np.zeros(0))
    #: each disk's burst credits and burst seconds used
    #: (:func:`iotguard.policy.burst.accrue`), and when they were counted
    credits: base.FloatArray = dataclasses.field(
        default_factory=lambda: np.zeros(0))
    used: base.FloatArray = dataclasses.field(
        default_factory=lambda: np.zeros(0))
    at: float | None = None
    #: each disk's cap when last in force, unless the policy released it
    #: (``nan``: none), and when it was last seen in force (to within
    #: :data:`HELD_REFRESH_S`): a cap that lapsed (its lease not renewed
    #: while the controller, the broker or the database was away) comes
    #: back at once at most there (:func:`moves`) for :data:`HELD_S`
    held: base.FloatArray = dataclasses.field(
        default_factory=lambda: np.zeros(0))
    held_at: base.FloatArray = dataclasses.field(
        default_factory=lambda: np.zeros(0))
    #: the domain load at which the caps alone last missed a floor or the
    #: latency objective two decisions in a row, and when
    #: (:data:`CROWDED_S`); None: not lately
    crowded: tuple[float, float] | None = None
    #: whether the last decision saw such a miss
    missing: bool = False

    def __post_init__(self) -> None:
        # a memory made without bursts or held caps has none on any disk
        for name, value in (('credits', 0.0), ('used', 0.0),
                            ('held', math.nan), ('held_at', math.nan)):
            if len(getattr(self, name)) != len(self.disk_ids):
                object.__setattr__(self, name, np.full(len(self.disk_ids),
                                                       value))

    def _align(self, disk_ids: tuple[str, ...],
               columns: tuple[base.FloatArray, ...],
               new: tuple[float, ...]) -> tuple[base.FloatArray, ...]:
        if disk_ids == self.disk_ids:
            return columns
        old = {disk_id: i for i, disk_id in enumerate(self.disk_ids)}
        at = [old.get(disk_id, -1) for disk_id in disk_ids]
        # -1: the new disk's value, appended
        return tuple(np.append(column, value)[at]
                     for column, value in zip(columns, new))

    def align(self, disk_ids: tuple[str, ...]
              ) -> tuple[base.FloatArray, base.FloatArray]:
        """``asked`` and ``wanted`` in the order of ``disk_ids``.

        New disks: ``asked`` ``nan``, ``wanted`` 0.
        """
        asked, wanted = self._align(disk_ids, (self.asked, self.wanted),
                                    (math.nan, 0.0))
        return asked, wanted

    def bursts(self, disk_ids: tuple[str, ...]
               ) -> tuple[base.FloatArray, base.FloatArray]:
        """``credits`` and ``used`` in the order of ``disk_ids``.

        New disks: none (a new disk, or a volume created again, starts
        without credits).
        """
        credits, used = self._align(disk_ids, (self.credits, self.used),
                                    (0.0, 0.0))
        return credits, used

    def held_caps(self, disk_ids: tuple[str, ...]
                  ) -> tuple[base.FloatArray, base.FloatArray]:
        """``held`` and ``held_at`` in the order of ``disk_ids``.

        New disks: ``nan``.
        """
        held, at = self._align(disk_ids, (self.held, self.held_at),
                               (math.nan, math.nan))
        return held, at

    def unless_changed(self, new: 'Memory') -> 'Memory':
        """``self`` when ``new`` holds the same, else ``new``.

        The controller serialises and stores a domain's memory only when
        :meth:`~iotguard.policy.base.Policy.decide` returns another object
        than it gave (:meth:`iotguard.controller.loop.DomainLoop._decide`).
        """
        same = (self.service == new.service
                and self.cut_over_border == new.cut_over_border
                and self.border == new.border
                and self.disk_ids == new.disk_ids
                and np.array_equal(self.asked, new.asked, equal_nan=True)
                and np.array_equal(self.wanted, new.wanted)
                and np.array_equal(self.credits, new.credits)
                and np.array_equal(self.used, new.used)
                and np.array_equal(self.held, new.held, equal_nan=True)
                and np.array_equal(self.held_at, new.held_at,
                                   equal_nan=True)
                and self.crowded == new.crowded
                and self.missing == new.missing
                and (self.at == new.at or not new.credits.any()))
        return self if same else new

    def to_dict(self) -> dict[str, Any]:
        """The memory as JSON can hold it (``nan`` as ``null``).

        Only the disks it remembers something of: one never seen
        uncongested with no move pending is what :meth:`align` makes of a
        disk it does not know (most disks of a large domain; their ids
        would be most of the text), keyed by disk id: ``"disks": {id:
        [asked or null, wanted]}``; the disks with burst credits
        (``"burst": {id: [credits, used]}`` and ``"at"``) and with a held
        cap (``"held": {id: [cap, when last in force]}``) likewise. Floats
        go as Python writes them (``repr``): read back, they are the same
        numbers to the last bit.
        """
        kept = np.flatnonzero(~np.isnan(self.asked) | (self.wanted != 0))
        bursts = np.flatnonzero((self.credits != 0) | (self.used != 0))
        extra: dict[str, Any] = {'at': self.at, 'burst': {
            self.disk_ids[i]: [c, u] for i, c, u in zip(
                bursts.tolist(), self.credits[bursts].tolist(),
                self.used[bursts].tolist())}} if len(bursts) else {}
        if self.crowded is not None:
            extra['crowded'] = list(self.crowded)
        if self.missing:
            extra['missing'] = True
        held = np.flatnonzero(np.isfinite(self.held))
        if len(held):
            extra['held'] = {self.disk_ids[i]: [cap, at] for i, cap, at in zip(
                held.tolist(), self.held[held].tolist(),
                self.held_at[held].tolist())}
        return {**extra, 'service': self.service,
                'cut_over_border': self.cut_over_border,
                'border': self.border,
                'disks': {self.disk_ids[i]: [
                    None if math.isnan(asked) else asked, int(wanted)]
                    for i, asked, wanted in zip(
                        kept.tolist(), self.asked[kept].tolist(),
                        self.wanted[kept].tolist())}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> 'Memory':
        """What :meth:`to_dict` gave; ``ValueError`` when it is not that.

        Also the form before the disks were keyed by id (three lists by
        position: ``disk_ids``, ``asked``, ``wanted``).
        """
        if 'disks' in data:
            disks = data['disks']
            if not _pairs(disks):
                raise ValueError('guarantee memory: disks must map an id '
                                 'to [asked, wanted]')
            disk_ids = tuple(disks)
            pairs = list(disks.values())
            listed = ([v[0] for v in pairs], [v[1] for v in pairs])
        else:
            disk_ids = tuple(data['disk_ids'])
            listed = (data['asked'], data['wanted'])
        asked = np.array([math.nan if value is None else value
                          for value in listed[0]], dtype=np.float64)
        wanted = np.array(listed[1], dtype=np.float64)
        if not len(disk_ids) == len(asked) == len(wanted):
            raise ValueError('guarantee memory: %d disks, %d asked, %d '
                             'wanted' % (len(disk_ids), len(asked),
                                         len(wanted)))
        service, border = data['service'], data['border']
        crowded, missing = data.get('crowded'), data.get('missing', False)
        if crowded is not None and not _pairs({0: crowded}, True):
            raise ValueError('guarantee memory: crowded must be [load, '
                             'when]')
        if type(missing) is not bool:
            raise ValueError('guarantee memory: missing must be a boolean')
        memory = cls(None if service is None else float(service),
                     bool(data['cut_over_border']),
                     None if border is None else float(border),
                     disk_ids, asked, wanted, np.zeros(len(disk_ids)),
                     np.zeros(len(disk_ids)),
                     crowded=None if crowded is None else (
                         float(crowded[0]), float(crowded[1])),
                     missing=missing)
        bursts = data.get('burst') or {}
        if not _pairs(bursts):
            raise ValueError('guarantee memory: burst must map an id to '
                             '[credits, used]')
        held = data.get('held') or {}
        if not _pairs(held, numbers=True):
            raise ValueError('guarantee memory: held must map an id to '
                             '[cap, when]')
        if not bursts and not held:
            return memory
        # the disks of the three maps, in one order
        ids = tuple(dict.fromkeys(disk_ids + tuple(bursts) + tuple(held)))
        asked, wanted = memory.align(ids)
        pairs = [bursts.get(i, [0.0, 0.0]) for i in ids]
        return dataclasses.replace(
            memory, disk_ids=ids, asked=asked, wanted=wanted,
            credits=np.array([p[0] for p in pairs], dtype=np.float64),
            used=np.array([p[1] for p in pairs], dtype=np.float64),
            at=None if data.get('at') is None else float(data['at']),
            held=np.array([held.get(i, [math.nan])[0] for i in ids],
                          dtype=np.float64),
            held_at=np.array([held.get(i, [0.0, math.nan])[1] for i in ids],
                             dtype=np.float64))


def _pairs(value: Any, numbers: bool = False) -> bool:
    """``value`` maps ids to JSON pairs ``[x, y]`` (of numbers: no bool)."""
    return isinstance(value, Mapping) and all(
        isinstance(v, list) and len(v) == 2 and (
            not numbers or all(type(x) in (int, float) for x in v))
        for v in value.values())


def adapt_border(border: float, low: float, high: float, step: float,
                 held: bool, met: bool, missed: bool) -> float:
    """The border a domain is held at, after one more interval.

    The border (step 5 of the module doc) follows the latency objective,
    as SIOC's and PARDA's windows do, between ``low`` (``high_watermark``)
    and ``high`` (``border_max``): up by ``step`` while the caps hold the
    domain at it (``held``) with the objective ``met`` with room; back to
    ``low`` at once when the caps alone miss it at or under the border
    (``missed``: one cut from ``raise_change`` on, not a change of every
    cap per step down). A miss above the border is a new flood's doing,
    not the border's: it stays.
    """
    if missed:
        return low
    if held and met:
        return min(high, border + step)
    return border


def confirmed(wanted: base.FloatArray, tighten: base.BoolArray,
              loosen: base.BoolArray, small: base.BoolArray,
              urgent: bool
              ) -> tuple[base.BoolArray, base.BoolArray, base.FloatArray]:
    """The cuts and raises to send now, and the others' direction.

    A ``small`` move of a cap in force (by less than ``confirm_change``)
    is sent only when the decision before wanted it moved the same way
    (``wanted``, :class:`Memory`): one interval's samples wander by ten
    per cent and more, and a cut on one sample then a raise on the next
    is churn, not control. Never held back: a new cap, a large move, a
    release, and a cut while the latency objective is missed or a floor
    is at stake (``urgent``). The third array is the next ``wanted``.
    """
    want = np.where(tighten, -1.0, np.where(loosen, 1.0, 0.0))
    held = small & (want != 0) & (want != wanted)
    if urgent:
        held &= ~tighten
    return tighten & ~held, loosen & ~held, np.where(held, want, 0.0)


def remembered_demand(asked: base.FloatArray, closed: base.FloatArray,
                      u: base.FloatArray) -> base.FloatArray:
    """A shallow disk's demand: the smaller of two estimates, at least ``u``.

    The closed-loop estimate over-reads a paced client (its slack looks
    like thinking); what the disk did when it was last uncongested
    (``asked``) under-reads a client whose load grew since. A disk never
    seen uncongested (``nan``) is taken at what it does now.
    """
    result: base.FloatArray = np.maximum(u, np.where(
        np.isfinite(asked), np.minimum(closed, asked), u))
    return result


class Unmet(NamedTuple):
    """Who waits for more than it gets, and how pressed the queue is (2)."""

    #: slow and always a request in flight
    slow: base.BoolArray
    active: base.BoolArray
    #: one request at a time, no throttle wait in its latency
    shallow: base.BoolArray
    #: a shallow disk losing to the queue what it would send
    wants: base.BoolArray
    #: a shallow disk's demand (:func:`remembered_demand`), else its load
    closed: base.FloatArray
    #: uncapped and waiting (slow or wants)
    unmet: base.BoolArray
    starving: base.BoolArray
    at_cap: base.BoolArray
    may_raise: base.BoolArray
    #: the shallow disks' latency over the congestion threshold, or a
    #: disk's over its tier's objective (the larger)
    pressure: float
    #: over its tier's latency objective: not capped for the queue
    late: base.BoolArray
    #: the learned service time (:func:`learn_service`) and each disk's
    #: load when last uncongested, for the :class:`Memory`
    service: float | None
    asked: base.FloatArray
    service_ms: base.FloatArray
    threshold_ms: base.FloatArray


def unmet_demand(snap: base.DomainSnapshot, loads: Loads, p: Params,
                 domain: float, service: float | None,
                 asked: base.FloatArray) -> Unmet:
    """Step 2: unmet demand, from the loads and what the memory holds."""
    fresh, capped = ~snap.stale, snap.capped
    u, cost = loads.u, loads.cost
    # slow *and* always a request in flight (a disk idle between its
    # operations gets what it asks, however slow) ...
    outstanding = snap.iops * snap.latency_ms / 1000.0
    slow_ms = np.maximum(p.latency_threshold_ms,
                         p.latency_factor * 1000.0 * cost)
    # A disk running at its own ceiling (the static limits Nova set, or
    # its tier's) waits in its own throttle: that is no unmet demand the
    # domain could serve.
    at_ceiling = fresh & (u >= p.at_cap_ratio * loads.ceil)
    slow = (fresh & (snap.latency_ms > slow_ms) & ~at_ceiling
            & (outstanding >= p.busy_depth))
    # ... or a shallow disk losing to the queue what it would send at the
    # uncongested service time (a closed loop thinking between
    # synchronous writes)
    active = fresh & (snap.iops > 0) & (snap.latency_ms > 0)
    unthrottled = active & ~capped & ~at_ceiling
    learned = learn_service(service, snap.latency_ms, cost, unthrottled)
    service_ms = 1000.0 * cost * (learned or 1.0)
    threshold_ms = (np.full(len(snap), p.congestion_ms)
                    if p.congestion_ms else
                    p.congestion_factor * service_ms)
    shallow = unthrottled & (outstanding <= SHALLOW_DEPTH)
    calm = shallow & (snap.latency_ms <= UNCONGESTED * service_ms)
    asked = np.where(calm, u, asked)
    closed = np.where(shallow, remembered_demand(asked, closed_loop_demand(
        snap.iops, snap.latency_ms, service_ms) * cost, u), u)
    wants = shallow & (closed > u * (1.0 + p.tolerance))
    # The latency objective: the shallow disks' under the threshold and
    # each disk's under its tier's (late: over it, never capped for it;
    # below the low watermark there is no queue to keep short: a slow
    # disk there is slow for another reason).
    ratio = np.where(shallow, snap.latency_ms / threshold_ms, 0.0)
    late = np.zeros(len(snap), dtype=bool)
    if snap.objective_ms is not None:
        held = active & (snap.objective_ms > 0)
        judged = snap.judged_latency_ms    # the p99 where measured
        with np.errstate(invalid='ignore', divide='ignore'):
            ratio = np.where(held, np.maximum(
                ratio, judged / snap.objective_ms), ratio)
        late = held & (judged > snap.objective_ms)
    pressure = float(np.max(ratio)) if domain > p.low_watermark else 0.0
    # A cap a disk runs at is raised (a probe for spare capacity) only
    # while no uncapped disk has unmet demand and the objective is met
    # with room: otherwise the raise pushes the neighbours back down,
    # then is cut again.
    at_cap = fresh & capped & (u >= p.at_cap_ratio * loads.cap)
    congested = (bool((slow & ~capped).any())
                 or pressure > p.congestion_release)
    # An idle disk keeps its cap (IDLE_SHARE).
    may_raise = capped & ~(at_cap & congested) & (u >= IDLE_SHARE * loads.cap)
    starving = (slow | wants) & (u < loads.floor * (1.0 - p.tolerance))
    return Unmet(slow, active, shallow, wants, closed,
                 (slow | wants) & ~capped, starving, at_cap, may_raise,
                 pressure, late, learned, asked, service_ms, threshold_ms)


def estimate_demand(snap: base.DomainSnapshot, loads: Loads, unmet: Unmet,
                    p: Params) -> base.FloatArray:
    """Step 4: what each disk would use, never above its ceiling."""
    u = loads.u
    demand = np.maximum(np.where(unmet.slow & ~snap.capped,
                                 u * (1.0 + p.headroom), u), unmet.closed)
    demand = np.where(unmet.starving, np.maximum(demand, loads.floor * (
        1.0 + p.floor_margin)), demand)
    result: base.FloatArray = np.minimum(
        np.where(unmet.at_cap, np.inf, demand), loads.ceil)
    return result


class Allocation(NamedTuple):
    """What the domain shares out and each disk's part of it (step 5)."""

    capacity: float
    #: the latency objective missed: less shared out than is served
    queue_cut: bool
    share: base.FloatArray
    level: float
    #: the share, spread apart, within floor and ceiling
    target: base.FloatArray


def allocate(snap: base.DomainSnapshot, loads: Loads, unmet: Unmet,
             p: Params, demand: base.FloatArray, total: float, border: float,
             deep_uncapped: bool) -> Allocation:
    """Step 5: fair shares of what the domain can serve."""
    if snap.profile.form == base.MAX:
        # A token bucket serves its rate at any queue depth, and its one
        # FIFO queue grows without bound as it fills: share out the
        # border, whatever it serves now.
        capacity = border
    elif bool(unmet.starving.any()):
        capacity = total
    elif bool(unmet.unmet.any()):
        capacity = max(total, p.min_capacity)
    else:
        capacity = max(total, p.min_capacity, border)
    # (a disk over its tier's objective names the queue at once)
    queue_cut = unmet.pressure > 1.0 and (
        (total > border and bool(snap.capped.any())) or not deep_uncapped
        or bool(unmet.late.any()))
    if queue_cut:
        # The shallow disks queue past the threshold with every deep queue
        # capped (the caps fill the array), or above the border with caps
        # in force (a new flood joins a controlled domain): share out less
        # (above the border, the border: a raise would bring the caps back
        # there).
        # A disk over its tier's objective keeps what it does (it is not
        # capped for the queue): the others share out the rest, less
        # each interval until it is met or they are at their floors.
        late = bool(unmet.late.any())
        if total > border:
            capacity = min(capacity, border)
        if late or total <= border:
            capacity = min(capacity,
                           total * max(0.85, unmet.pressure ** -0.5))
    reserved = np.where(unmet.late, np.maximum(loads.floor, np.minimum(
        loads.u, demand)), loads.floor)
    share, level = allocation.fair_shares(capacity, reserved, demand,
                                          snap.weight)
    at_level = share < demand * (1.0 - 1e-9)
    target = np.minimum(np.maximum(share * spread(at_level), loads.floor),
                        loads.ceil)
    return Allocation(capacity, queue_cut, share, level, target)


class Moves(NamedTuple):
    """The caps to move (steps 6 and 7), before :func:`confirmed`."""

    tighten: base.BoolArray
    #: raises and releases
    loosen: base.BoolArray
    release: base.BoolArray
    new: base.FloatArray
    #: moves of a cap in force by less than ``confirm_change``
    small: base.BoolArray
    cut_step: float
    #: a raise's
    step: float
    #: whether the last cut was made above the border (:class:`Memory`)
    cut_over_border: bool


def moves(snap: base.DomainSnapshot, loads: Loads, need: Unmet, p: Params,
          shares: Allocation, domain: float, border: float, engaged: bool,
          cut_over_border: bool, held: base.FloatArray | None = None,
          room: float = math.inf) -> Moves:
    """Steps 6 and 7: which caps to cut, raise or release, and to what.

    ``held``: each disk's cap when last in force (:attr:`Memory.held`;
    None: none known); ``room``: the most the raises may add to the
    domain's load (:func:`within_room`).
    """
    u, cap, share, target = loads.u, loads.cap, shares.share, shares.target
    if held is not None:
        # A disk whose cap lapsed (not released by a decision: the
        # controller, the broker or the database was away) is cut at once
        # at most to that cap again (never under its floor), not from its
        # fair share down in cuts a cap's hold apart: the floors come back
        # in one decision.
        lapsed = ~snap.capped & np.isfinite(held)
        target = np.where(lapsed, np.maximum(np.minimum(target, held),
                                             loads.floor), target)
    # 6. tighten the disks above their share (not a shallow one: it
    # adds at most one request to the queue); 7. loosen gradually.
    # A shallow disk that wants more may lose less than the tolerance
    # of a big neighbour's share: then any disk above its share gives
    # way.
    slack = 0.0 if bool(need.wants.any()) else p.tolerance
    over = (~snap.stale & ~need.shallow & ~need.late
            & (u > share * (1.0 + slack)))
    # A cut to the border is sent from raise_change on: the evidence is
    # the queue itself, not a noisy measurement. So is a token bucket's
    # above its border: its one queue grows without bound whatever its
    # disks' latency shows, and a border close to 1 leaves less than
    # min_change between the caps that fill it and their shares there.
    cut_step = (p.raise_change if shares.queue_cut or (
        snap.profile.form == base.MAX and domain > border)
        else p.min_change)
    # (UNHELD) a second cut on samples of the world before the cap
    # would overshoot.
    unheld = snap.capped & (u > cap * UNHELD)
    tighten = engaged & over & ~unheld & (
        target < np.minimum(cap, loads.static) * (1.0 - cut_step))
    # Under the border a raise back toward the share is sent from
    # raise_change on after a cut made above it (which lands a few per
    # cent under the share at the border: min_change would leave the
    # array idle there for good); not after a cut made under it (the
    # border is then no level the array can run at: raise, cut, churn).
    if bool(tighten.any()):
        cut_over_border = domain > border
    step = (p.raise_change if domain < border
            and cut_over_border else p.min_change)
    loosen = need.may_raise & ~tighten & (target > cap * (1.0 + step))
    new = within_room(cap, np.where(tighten, target, np.minimum(
        target, cap * p.release_factor)), loosen, room)
    loosen &= new > cap * (1.0 + step)
    release = loosen & (new >= loads.hold)
    with np.errstate(invalid='ignore', divide='ignore'):
        small = snap.capped & (np.abs(new / cap - 1.0) < p.confirm_change)
    return Moves(tighten, loosen, release, new, small, cut_step, step,
                 cut_over_border)


def crowding(memory: Memory, domain: float, missed: bool, now: float
             ) -> tuple[float, float] | None:
    """:attr:`Memory.crowded` after this decision.

    ``missed``: the caps alone miss a floor or the latency objective now;
    the load is kept when the decision before missed too (one sample's
    noise is no evidence). A miss at a load no lower is written once per
    :data:`HELD_REFRESH_S` (the memory is stored when it changes).
    """
    last = memory.crowded
    if missed and memory.missing:
        if (last is not None and last[0] <= domain
                and now - last[1] < HELD_REFRESH_S):
            return last
        return (domain, now)
    if last is not None and now - last[1] <= CROWDED_S:
        return last
    return None


def within_room(cap: base.FloatArray, new: base.FloatArray,
                raised: base.BoolArray, room: float) -> base.FloatArray:
    """``new`` with the ``raised`` caps' raises fitted into ``room``.

    Each raise shrinks in proportion, as if every raised disk took all of
    its raise (a capped disk wanting more does).
    """
    if room == math.inf:            # nothing remembered: most decisions
        return new
    with np.errstate(invalid='ignore'):     # uncapped: inf - inf
        more = np.where(raised, new - cap, 0.0)
    total = float(more.sum())
    room = max(room, 0.0)
    if total <= room:
        return new
    return np.where(raised, cap + more * (room / total), new)


def held_caps(memory: Memory, snap: base.DomainSnapshot, cap: base.FloatArray,
              now: float) -> tuple[base.FloatArray, base.FloatArray]:
    """Each disk's cap when last in force, and when (:class:`Memory`).

    A capped disk's is its cap now, its time refreshed every
    :data:`HELD_REFRESH_S`; a lapsed cap is kept for :data:`HELD_S`.
    """
    held, at = memory.held_caps(snap.disk_ids)
    with np.errstate(invalid='ignore'):
        at = np.where(snap.capped & ~(now - at < HELD_REFRESH_S), now, at)
        recent = snap.capped | (now - at <= HELD_S)
    return (np.where(snap.capped, cap, np.where(recent, held, math.nan)),
            np.where(recent, at, math.nan))


def unless_released(held: tuple[base.FloatArray, base.FloatArray],
                    snap: base.DomainSnapshot, decisions: list[base.Decision]
                    ) -> dict[str, base.FloatArray]:
    """``held`` (:func:`held_caps`) without the caps ``decisions`` release.

    As :class:`Memory`'s ``held`` and ``held_at``.
    """
    released = {d.disk_id for d in decisions if d.action == base.RELEASE}
    gone = [disk_id in released for disk_id in snap.disk_ids]
    return {'held': np.where(gone, math.nan, held[0]),
            'held_at': np.where(gone, math.nan, held[1])}


class GuaranteePolicy(Params):
    """Floors first, fair shares above them, caps only on the culprits."""

    name = 'guarantee'
    PARAMS = PARAMS

    def __init__(self, **params: object) -> None:
        super().__init__(**policy.check_params(self.name, PARAMS, params))

    def restore(self, data: Mapping[str, Any] | None) -> Memory | None:
        """The :class:`Memory` of ``data`` (:meth:`Memory.to_dict`).

        Written with other parameters, it keeps all it holds but a border
        outside this policy's bounds, brought within them.
        """
        if data is None:
            return None
        memory = Memory.from_dict(data)
        if memory.border is None:
            return memory
        return dataclasses.replace(memory, border=min(
            max(memory.border, self.high_watermark), self.border_max))

    def decide(self, snapshot: base.DomainSnapshot, state: Memory | None,
               now: float) -> tuple[list[base.Decision], Memory | None]:
        snap = snapshot
        if not len(snap):
            return [], state
        memory = state or Memory()
        decisions, new, loads, need, domain = self._decide(snap, memory,
                                                           now)
        if snap.burst_seconds is None and not memory.credits.any():
            return decisions, memory.unless_changed(new)
        return self._bursts(snap, memory, new, decisions, loads, need,
                            domain, now)

    def _decide(self, snap: base.DomainSnapshot, memory: Memory, now: float
                ) -> tuple[list[base.Decision], Memory, Loads, Unmet,
                           float]:
        """Steps 1 to 7: the decisions and memory without bursts."""
        profile = snap.profile
        capped = snap.capped

        # 1. everything in device-seconds per second
        loads = Loads.of(snap)
        # What the disks are charged (the allocation's unit) and the
        # domain's own load (the watermarks'): they differ in the max form.
        total = float(loads.u.sum())
        domain = costmodel.domain_load(float(snap.iops.sum()),
                                       float(snap.bytes_sec.sum()), profile)

        # 2. unmet demand
        asked, wanted = memory.align(snap.disk_ids)
        credits, used = memory.bursts(snap.disk_ids)
        held = held_caps(memory, snap, loads.cap, now)
        need = unmet_demand(snap, loads, self, domain, memory.service, asked)
        shallow, at_cap, pressure = need.shallow, need.at_cap, need.pressure
        any_starving = bool(need.starving.any())
        # 3. engage, with hysteresis while caps are in force
        engaged = (any_starving or pressure > 1.0
                   or domain > self.high_watermark)
        any_capped = bool(capped.any())
        holding = any_capped and domain > self.low_watermark

        # The border (adapt_border) is missed by the caps alone only with
        # every deep disk capped: a new flood, still uncapped, misses the
        # objective whatever the border (its first window may even read
        # under the border, straddling its start). A floor-holder short
        # of its floor is the caps' victim, not a flood.
        border = memory.border or self.border_max
        deep_uncapped = bool((need.active & ~capped & ~shallow
                              & ~need.late & ~need.starving).any())
        missed = any_capped and not deep_uncapped and (
            pressure > 1.0 or any_starving)
        border = adapt_border(
            border, self.high_watermark, self.border_max, self.border_step,
            held=bool(at_cap.any()) and domain >= border * (
                1.0 - self.tolerance),
            met=(pressure <= self.congestion_release
                 and not bool(need.unmet.any()) and not any_starving),
            missed=missed and domain <= border)
        # (where the caps hold the domain's load: not an idle capped
        # disk's, nor a floor missed with the domain under low_watermark)
        missing = (missed and bool(at_cap.any())
                   and domain > self.low_watermark)
        crowded = crowding(memory, domain, missing, now)
        room = (math.inf if crowded is None
                else crowded[0] * (1.0 - self.tolerance) - domain)
        numbers = dict(domain_load=domain, charged=total,
                       starving=float(need.starving.sum()),
                       waiting=float(need.unmet.sum()), pressure=pressure,
                       service_ratio=need.service or math.nan, border=border,
                       crowded=math.nan if crowded is None else crowded[0])
        if not (engaged or holding):
            decisions = self._relax(snap, loads, need.may_raise, numbers,
                                    room)
            return (decisions,
                    Memory(need.service, memory.cut_over_border, border,
                           snap.disk_ids, need.asked, np.zeros(len(snap)),
                           credits, used, memory.at, crowded=crowded,
                           missing=missing,
                           **unless_released(held, snap, decisions)),
                    loads, need, domain)

        # 4. demand estimate; 5. fair shares of what the domain can serve
        demand = estimate_demand(snap, loads, need, self)
        shares = allocate(snap, loads, need, self, demand, total, border,
                          deep_uncapped)
        numbers.update(capacity=shares.capacity, level=shares.level)

        # 6. tighten the disks above their share; 7. loosen gradually
        move = moves(snap, loads, need, self, shares, domain, border,
                     engaged, memory.cut_over_border, held[0], room)
        numbers.update(raise_step=move.step, cut_step=move.cut_step,
                       queue_cut=float(shares.queue_cut),
                       cut_over_border=float(move.cut_over_border))
        tighten, loosen, wanted = confirmed(
            wanted, move.tighten, move.loosen & ~move.release, move.small,
            urgent=pressure > 1.0 or any_starving)
        extra = dict(share=shares.share, target=shares.target, demand=demand,
                     asked=need.asked, service_ms=need.service_ms,
                     threshold_ms=need.threshold_ms)
        decisions = self._decisions(snap, loads,
                                    tighten | loosen | move.release,
                                    move.release, move.new, numbers, extra,
                                    tighten, move.step)
        return (decisions,
                Memory(need.service, move.cut_over_border, border,
                       snap.disk_ids, need.asked, wanted, credits, used,
                       memory.at, crowded=crowded, missing=missing,
                       **unless_released(held, snap, decisions)),
                loads, need, domain)

    def _bursts(self, snap: base.DomainSnapshot, memory: Memory, new: Memory,
                decisions: list[base.Decision], loads: Loads, need: Unmet,
                domain: float, now: float
                ) -> tuple[list[base.Decision], Memory]:
        """Bursts (:mod:`iotguard.policy.burst`): credits, grants, take-backs.

        A granted disk's decision is a cap above its ceiling that lifts
        its static limits (``lift``); a disk whose lifted cap is not
        granted again is taken back: the decision of steps 1 to 7 (never
        a lift) or, without one, a cap at its ceiling.
        """
        n = len(snap)
        zero = np.zeros(n)
        factor = zero if snap.burst_factor is None else snap.burst_factor
        most = zero if snap.burst_seconds is None else snap.burst_seconds
        dt = 0.0 if memory.at is None else min(max(0.0, now - memory.at),
                                               2.0 * snap.interval_s)
        credits, used = burst.accrue(new.credits, new.used, loads.u,
                                     loads.floor, loads.ceil, most, dt,
                                     self.tolerance)
        memory_out = memory.unless_changed(dataclasses.replace(
            new, credits=credits, used=used, at=now))
        # N x the floor at the disk's I/O size (loads.floor is held under
        # the ceiling), as both keys: the kind without a floor is lifted
        # alike
        b_load = factor * costmodel.floor_load(
            snap.floor_iops, snap.floor_bytes_sec, loads.size, snap.profile)
        with np.errstate(invalid='ignore'):
            lifted = ((snap.cap_iops > snap.ceil_iops * (1.0 + 1e-6))
                      & np.isfinite(snap.cap_iops)) | (
                (snap.cap_bytes_sec > snap.ceil_bytes_sec * (1.0 + 1e-6))
                & np.isfinite(snap.cap_bytes_sec))
        given = burst.grant(
            loads.u, loads.ceil, b_load, credits,
            ~snap.stale & (loads.u >= self.at_cap_ratio * loads.ceil),
            spare=self.high_watermark - domain,
            short=bool(need.starving.any()) or need.pressure > 1.0,
            least=snap.interval_s)
        index = np.flatnonzero(given.granted | lifted)
        if not len(index):
            return decisions, memory_out
        mine = {snap.disk_ids[i] for i in index.tolist()}
        kept = {d.disk_id: d for d in decisions if d.disk_id in mine}
        out = [d for d in decisions if d.disk_id not in mine]
        for i in index.tolist():
            numbers = base.audit_numbers(
                load=loads.u[i], ceiling=loads.ceil[i], burst=b_load[i],
                credits=credits[i], burst_used=used[i],
                domain_load=domain)
            disk_id = snap.disk_ids[i]
            if given.granted[i]:
                ops = given.load[i] / loads.cost[i]
                out.append(base.Decision(
                    disk_id, base.CAP, 'guarantee: burst to %.4f above its '
                    'ceiling %.4f (%.0f s of credits)' % (
                        given.load[i], loads.ceil[i], credits[i]),
                    float(ops), float(ops * loads.size[i]),
                    dict(numbers, new_cap=float(given.load[i])), lift=True))
            elif disk_id in kept:
                out.append(kept[disk_id])
            else:
                out.append(base.Decision(
                    disk_id, base.CAP, 'guarantee: burst taken back to its '
                    'ceiling %.4f (%s)' % (loads.ceil[i], 'no credits'
                                           if credits[i] < snap.interval_s
                                           else 'a floor or the domain '
                                           'needs it'),
                    float(snap.ceil_iops[i]), float(snap.ceil_bytes_sec[i]),
                    numbers))
        return out, memory_out

    def _relax(self, snap: base.DomainSnapshot, loads: Loads,
               may_raise: base.BoolArray, numbers: dict[str, float],
               room: float) -> list[base.Decision]:
        """Calm domain: raise caps one step, release the loose ones.

        A cap already at a ceiling it must hold (the tier's, below the
        static limits) stays as it is; the raises fit in ``room``
        (:func:`within_room`).
        """
        cap = loads.cap
        new = within_room(cap, np.minimum(cap * self.release_factor,
                                          np.maximum(loads.ceil, cap)),
                          may_raise, room)
        release = may_raise & (new >= loads.hold)
        change = may_raise & (release | (new > cap * (1.0 + self.min_change)))
        if not change.any():
            return []
        return self._decisions(snap, loads, change, release, new, numbers, {},
                               np.zeros(len(snap), dtype=bool),
                               self.min_change)

    def _decisions(self, snap: base.DomainSnapshot, loads: Loads,
                   change: base.BoolArray, release: base.BoolArray,
                   new: base.FloatArray, numbers: dict[str, float],
                   extra: dict[str, base.FloatArray], tighten: base.BoolArray,
                   step: float) -> list[base.Decision]:
        """Build the decisions of the disks in ``change`` (few)."""
        size, cost, u, floor, ceil, cap = loads[:6]
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
        # A cap that reaches the disk's ceiling is the ceiling itself, both
        # keys: derived at one I/O size, the key that does not bind there
        # would bind at another and be raised again whenever the size dips.
        top = new[index] >= ceil[index] * (1.0 - 1e-9)
        ops = np.where(top, snap.ceil_iops[index], ops)
        byts = np.where(top, snap.ceil_bytes_sec[index], byts)
        # A raise is sent when what it lets the disk do at its current I/O
        # size, both keys and the ceilings together, moves the cap by more
        # than step (a key raised while the other, held at a ceiling,
        # binds is no change, only an RPC).
        effective = costmodel.limit_load(ops, byts, size[index], cost[index])
        sent = (tight | release[index]
                | (effective > cap[index] * (1.0 + step)))
        if not sent.any():
            return []
        index, tight = index[sent], tight[sent]
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
        ops, byts = ops[sent], byts[sent]
        ops[released] = byts[released] = np.inf
        return base.make_decisions(
            [snap.disk_ids[i] for i in index.tolist()],
            [base.RELEASE if released_i else base.CAP
             for released_i in released.tolist()],
            reasons, ops.tolist(), byts.tolist(), audit)
