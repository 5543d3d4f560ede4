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

"""What a decision policy sees and what it answers.

A policy is pure: ``decide(snapshot, state, now) -> (decisions, state)``.
It reads no clock, does no I/O and imports nothing from oslo, the DB, RPC
or libvirt, so the controller, the simulator and the tests run the very
same code. What it remembers of a domain between decisions is the
``state`` it returns (``None`` for a policy that remembers nothing), given
back at the domain's next decision; the state's ``to_dict()`` is JSON and
the policy's ``restore`` reads it back, so any controller (or the same one
after a restart, or with new parameters) goes on from it.

The snapshot is columnar (one NumPy array per quantity, one element per disk)
so that a decision over 100,000 disks stays a handful of vector operations.
"No limit" is ``inf`` inside a snapshot and ``0`` on the wire (libvirt's
convention), see :func:`Decision.limits`.
"""

import collections.abc
from collections.abc import Mapping
import dataclasses
import functools
import math
import operator
from typing import Any
from typing import cast
from typing import NamedTuple
from typing import Protocol
from typing import Self
from typing import Sequence

import numpy as np
import numpy.typing as npt


FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

CAP = 'cap'
RELEASE = 'release'
ACTIONS = (CAP, RELEASE)


#: A tier's limits per GiB of the disk and the fixed limit each prices
#: (:meth:`Tier.at`), as Cinder's capacity-based QoS spells them
#: (``total_iops_sec_per_gb``).
PER_GB = {'min_iops_per_gb': 'min_iops',
          'min_bytes_sec_per_gb': 'min_bytes_sec',
          'max_iops_per_gb': 'max_iops',
          'max_bytes_sec_per_gb': 'max_bytes_sec'}


#: A tier's burst (:mod:`iotguard.policy.burst`).
BURST = ('burst_factor', 'burst_seconds')


@dataclasses.dataclass(frozen=True)
class Tier:
    """A guarantee a tenant can choose; 0 means "not set" for every limit.

    With limits per GiB (:data:`PER_GB`) a disk's floors and ceilings
    depend on its size: :meth:`at` gives the fixed tier of one disk.
    """

    name: str
    min_iops: float = 0.0
    min_bytes_sec: float = 0.0
    max_iops: float = 0.0
    max_bytes_sec: float = 0.0
    weight: float = 1.0
    min_iops_per_gb: float = 0.0
    min_bytes_sec_per_gb: float = 0.0
    max_iops_per_gb: float = 0.0
    max_bytes_sec_per_gb: float = 0.0
    #: A burst (:mod:`iotguard.policy.burst`): up to ``burst_factor`` x
    #: the floor, above the ceiling, for at most ``burst_seconds`` of
    #: credits earned below the floor (0: no burst).
    burst_factor: float = 0.0
    burst_seconds: float = 0.0
    #: The latency objective: the 99th percentile of the disk's
    #: operations, reads and writes alike, in ms (0: none), kept by
    #: capping the disks that fill the queue
    #: (:func:`iotguard.policy.guarantee.unmet_demand`).
    latency_p99_ms: float = 0.0

    def at(self, size_gib: float | None) -> Self:
        """This tier for a disk of ``size_gib`` GiB, limits all fixed.

        Per kind (IOPS, bytes/s), as Cinder prices ``*_per_gb`` keys: the
        floor is ``max(min, min_per_gb x size)``, at most ``max`` when
        set; the ceiling ``max_per_gb x size``, at most ``max``, never
        below the floor. A size unknown (None, or 0 GiB) counts as 1 GiB,
        the least a volume has: its floor is about the tier's minimum.
        """
        if not any(getattr(self, f) for f in PER_GB):
            return self
        # _priced keeps the class (dataclasses.replace): a database tier
        # stays one
        return cast(Self, _priced(self, max(1.0, float(size_gib or 0))))

    def __post_init__(self) -> None:
        for field in ('min_iops', 'min_bytes_sec', 'max_iops',
                      'max_bytes_sec', *PER_GB, *BURST, 'latency_p99_ms'):
            value = getattr(self, field)
            if not math.isfinite(value) or value < 0:
                raise ValueError('tier %s: %s must be a finite number >= 0, '
                                 'not %r' % (self.name, field, value))
        if not math.isfinite(self.weight) or self.weight <= 0:
            raise ValueError('tier %s: weight must be > 0, not %r'
                             % (self.name, self.weight))
        for low, high in (('min_iops', 'max_iops'),
                          ('min_bytes_sec', 'max_bytes_sec'),
                          ('min_iops_per_gb', 'max_iops_per_gb'),
                          ('min_bytes_sec_per_gb', 'max_bytes_sec_per_gb')):
            if getattr(self, high) and getattr(self, low) > getattr(self,
                                                                    high):
                raise ValueError('tier %s: %s is above %s'
                                 % (self.name, low, high))
        if self.burst_factor and (self.burst_factor <= 1
                                  or not self.burst_seconds):
            raise ValueError('tier %s: a burst needs burst_factor above 1 '
                             'and burst_seconds above 0' % self.name)
        if self.burst_seconds and not self.burst_factor:
            raise ValueError('tier %s: burst_seconds without burst_factor'
                             % self.name)


@functools.lru_cache(maxsize=4096)
def _priced(tier: Tier, size: float) -> Tier:
    """:meth:`Tier.at` of a tier per GiB, remembered.

    A domain's disks share a few sizes: 0.65 us a disk instead of 6.4.
    """
    fixed: dict[str, Any] = dict.fromkeys(PER_GB, 0.0)
    for kind in ('iops', 'bytes_sec'):
        low, high = 'min_' + kind, 'max_' + kind
        most = getattr(tier, high) or math.inf
        floor = min(most, max(getattr(tier, low),
                              size * getattr(tier, low + '_per_gb')))
        ceiling = getattr(tier, high + '_per_gb') * size
        fixed[low] = floor
        fixed[high] = (max(floor, min(ceiling, most)) if ceiling
                       else getattr(tier, high))
    return dataclasses.replace(tier, **fixed)


#: The cost model's forms (:mod:`iotguard.policy.costmodel`): ``additive``
#: (seek + transfer: disks, arrays) and ``max`` (separately provisioned
#: IOPS and bandwidth: token buckets).
ADDITIVE = 'additive'
MAX = 'max'
FORMS = (ADDITIVE, MAX)


@dataclasses.dataclass(frozen=True)
class Profile:
    """A domain's capacity: random 4 KiB IOPS and sequential bytes/s.

    ``form`` says how the two combine (:data:`FORMS`).
    """

    iops_4k: float
    bytes_sec: float
    form: str = ADDITIVE

    def __post_init__(self) -> None:
        for field in ('iops_4k', 'bytes_sec'):
            value = getattr(self, field)
            if not math.isfinite(value) or value <= 0:
                raise ValueError('profile: %s must be > 0, not %r'
                                 % (field, value))
        if self.form not in FORMS:
            raise ValueError('profile: form must be one of %s, not %r'
                             % (', '.join(FORMS), self.form))


class SampleColumns(NamedTuple):
    """Some disks' newest samples, by position: what a snapshot is made of.

    Rates as measured (``nan`` where none: no sample, or a gap);
    ``static_*`` the static total ceilings Nova or Cinder set (``inf``
    when none); ``stale``: no usable sample (none, a gap, or too old).
    """

    timestamp: FloatArray
    read_iops: FloatArray
    write_iops: FloatArray
    read_bytes_sec: FloatArray
    write_bytes_sec: FloatArray
    read_latency_ms: FloatArray
    write_latency_ms: FloatArray
    static_iops: FloatArray
    static_bytes_sec: FloatArray
    stale: BoolArray
    #: The 99th percentile latency (ms) where the agent measures it
    #: (``[agent] latency_histograms``; ``nan``: not measured).
    p99_ms: FloatArray | None = None

    def totals(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Each disk's (IOPS, bytes/s, mean latency per operation in ms).

        Reads and writes added (``nan``, no sample, counts as 0); the
        latency the mean of both directions' weighted by their rates (0.0
        without operations).
        """
        r_iops = np.nan_to_num(self.read_iops)
        w_iops = np.nan_to_num(self.write_iops)
        ops = r_iops + w_iops
        with np.errstate(invalid='ignore', divide='ignore'):
            latency: FloatArray = np.where(
                ops > 0, (r_iops * np.nan_to_num(self.read_latency_ms)
                          + w_iops * np.nan_to_num(self.write_latency_ms))
                / ops, 0.0)
        bytes_sec: FloatArray = (np.nan_to_num(self.read_bytes_sec)
                                 + np.nan_to_num(self.write_bytes_sec))
        return ops, bytes_sec, latency


@dataclasses.dataclass
class DomainSnapshot:
    """Every disk of one contention domain, one array per quantity."""

    domain: str
    profile: Profile
    interval_s: float
    disk_ids: tuple[str, ...]
    iops: FloatArray
    bytes_sec: FloatArray
    latency_ms: FloatArray
    floor_iops: FloatArray
    floor_bytes_sec: FloatArray
    ceil_iops: FloatArray
    ceil_bytes_sec: FloatArray
    weight: FloatArray
    cap_iops: FloatArray
    cap_bytes_sec: FloatArray
    cap_set_at: FloatArray
    stale: BoolArray
    #: The static ceilings alone (``ceil_*`` also holds the tier's): what
    #: holds a disk once its cap is released. ``None``: none anywhere.
    static_iops: FloatArray | None = None
    static_bytes_sec: FloatArray | None = None
    #: The tiers' bursts (:data:`BURST`); ``None``: no tier bursts.
    burst_factor: FloatArray | None = None
    burst_seconds: FloatArray | None = None
    #: The tiers' latency objectives (:attr:`Tier.latency_p99_ms`, 0:
    #: none); ``None``: no tier has one.
    objective_ms: FloatArray | None = None
    #: The 99th percentile latency per disk (``nan``: not measured);
    #: ``None``: none measured.
    p99_ms: FloatArray | None = None

    def __len__(self) -> int:
        return len(self.disk_ids)

    @property
    def judged_latency_ms(self) -> FloatArray:
        """The latency a latency objective is judged on, per disk.

        The measured 99th percentile where there is one, else the one
        the interval's mean latency per operation models
        (:data:`P99_MEANS` times it, as admission prices objectives).
        """
        modelled = P99_MEANS * self.latency_ms
        if self.p99_ms is None:
            return modelled
        out: FloatArray = np.where(np.isnan(self.p99_ms), modelled,
                                   self.p99_ms)
        return out

    @property
    def capped(self) -> BoolArray:
        result: BoolArray = np.isfinite(self.cap_iops) | np.isfinite(
            self.cap_bytes_sec)
        return result

    @classmethod
    def of_samples(cls, domain: str, profile: Profile, interval_s: float,
                   disk_ids: tuple[str, ...], tiers: Sequence[Tier],
                   samples: 'SampleColumns', cap_iops: FloatArray,
                   cap_bytes_sec: FloatArray,
                   cap_set_at: FloatArray) -> 'DomainSnapshot':
        """The snapshot of some disks, from their samples' columns.

        The one builder, of the controller and the simulator alike.
        ``tiers`` and the caps in force (``inf``: none) are by position,
        as ``samples``; a tier ceiling (0: no limit) and the static
        ceiling combine into the tightest one.
        """
        def tier_col(field: str) -> FloatArray:
            return np.fromiter((getattr(t, field) for t in tiers),
                               np.float64, len(tiers))

        def ceiling(field: str, static: FloatArray) -> FloatArray:
            limit = tier_col(field)
            out: FloatArray = np.minimum(
                np.where(limit > 0, limit, math.inf), static)
            return out

        s = samples
        ops, bytes_sec, latency = s.totals()
        bursts = any(t.burst_factor for t in tiers)
        objectives = any(t.latency_p99_ms for t in tiers)
        return cls(
            domain=domain, profile=profile, interval_s=interval_s,
            disk_ids=disk_ids, iops=ops, bytes_sec=bytes_sec,
            latency_ms=latency, floor_iops=tier_col('min_iops'),
            floor_bytes_sec=tier_col('min_bytes_sec'),
            ceil_iops=ceiling('max_iops', s.static_iops),
            ceil_bytes_sec=ceiling('max_bytes_sec', s.static_bytes_sec),
            weight=tier_col('weight'), cap_iops=cap_iops,
            cap_bytes_sec=cap_bytes_sec, cap_set_at=cap_set_at,
            stale=s.stale.copy(), static_iops=s.static_iops,
            static_bytes_sec=s.static_bytes_sec,
            burst_factor=tier_col('burst_factor') if bursts else None,
            burst_seconds=tier_col('burst_seconds') if bursts else None,
            objective_ms=(tier_col('latency_p99_ms') if objectives
                          else None),
            p99_ms=(s.p99_ms if s.p99_ms is not None
                    and not np.isnan(s.p99_ms).all() else None))


#: The 99th percentile of an exponential response time, in means: the
#: p99 admission prices an objective with, and the one a mean latency
#: stands for where none is measured
#: (:attr:`DomainSnapshot.judged_latency_ms`).
P99_MEANS = math.log(100.0)

#: Decisions an urgent disk may bring after the first, one per
#: ``[controller] urgent_interval``, while it stays short of its floor
#: (the controller's and the simulator's fast path).
URGENT_FOLLOW_UPS = 3


def short(snapshot: DomainSnapshot) -> BoolArray:
    """The disks that hold a floor and reach none of its figures.

    A fresh sample under every floor its tier sets (IOPS, bytes/s; 0 is
    none): what makes a disk whose demand rose worth a decision of its
    domain before the round, whatever the domain's policy (the
    controller's :meth:`~iotguard.controller.loop.DomainLoop.urgent` and
    the simulator's fast path).
    """
    s = snapshot
    iops, size = s.floor_iops > 0, s.floor_bytes_sec > 0
    reached = (iops & (s.iops >= s.floor_iops)) | (
        size & (s.bytes_sec >= s.floor_bytes_sec))
    out: BoolArray = (iops | size) & ~reached & ~s.stale
    return out


def wire_value(value: float) -> int:
    """A limit as libvirt wants it: a whole number, 0 for "no limit"."""
    if not math.isfinite(value):
        return 0
    return max(1, int(round(value)))


@dataclasses.dataclass(frozen=True)
class Decision:
    """What to do to one disk, and why.

    ``iops``/``bytes_sec`` are the new cap (``inf`` = no limit of that
    kind); a ``release`` has both ``inf``. ``numbers`` carries what the
    policy saw and computed, for the audit trail. ``lift``: the cap
    replaces the disk's static limits while its lease lasts (a burst,
    :mod:`iotguard.policy.burst`) instead of holding it under them.
    """

    disk_id: str
    action: str
    reason: str
    iops: float = math.inf
    bytes_sec: float = math.inf
    numbers: dict[str, float] = dataclasses.field(default_factory=dict)
    lift: bool = False

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError('unknown action %r' % self.action)

    @property
    def limits(self) -> dict[str, int]:
        """The libvirt iotune keys of this decision (0 = no limit)."""
        return {'total_iops_sec': wire_value(self.iops),
                'total_bytes_sec': wire_value(self.bytes_sec)}


def make_decisions(disk_ids: list[str], actions: list[str],
                   reasons: list[str], iops: list[float],
                   bytes_sec: list[float],
                   numbers: list[dict[str, float]]) -> list[Decision]:
    """:class:`Decision` records in bulk, one per position of the lists.

    The same records as ``Decision(disk_ids[k], actions[k], ...)``, for
    less: the actions are checked once, and each record's fields are set
    at once (a frozen dataclass's ``__init__`` sets them one by one).
    """
    size = len(disk_ids)
    if not (len(actions) == len(reasons) == len(iops) == len(bytes_sec)
            == len(numbers) == size):
        raise ValueError('make_decisions: columns of unequal lengths')
    unknown = set(actions).difference(ACTIONS)
    if unknown:
        raise ValueError('unknown action %r' % sorted(unknown)[0])
    new = object.__new__
    records = []
    for disk_id, action, reason, ops, byts, seen in zip(
            disk_ids, actions, reasons, iops, bytes_sec, numbers):
        record = new(Decision)
        record.__dict__.update(disk_id=disk_id, action=action, reason=reason,
                               iops=ops, bytes_sec=byts, numbers=seen,
                               lift=False)
        records.append(record)
    return records


def audit_numbers(**values: float) -> dict[str, float]:
    """The finite ones of ``values`` as plain floats, for the audit trail.

    "No limit" (``inf``) and "never" (``nan``) are left out rather than
    written as values JSON and the database cannot hold.
    """
    return {key: float(value) for key, value in values.items()
            if math.isfinite(value)}


#: The most columns :func:`audit_rows` takes (a row's pattern of finite
#: values is kept as the bits of an int64).
AUDIT_COLUMNS = 62
_BITS = np.int64(1) << np.arange(AUDIT_COLUMNS, dtype=np.int64)

#: Picks a row's values at some positions, as a tuple.
Picker = collections.abc.Callable[[list[float]], tuple[float, ...]]


def _picker(at: list[int]) -> Picker:
    if len(at) >= 2:
        pick: Picker = operator.itemgetter(*at)
        return pick
    return lambda row: tuple(row[j] for j in at)


def audit_rows(names: tuple[str, ...], values: FloatArray,
               common: dict[str, float] | None = None
               ) -> list[dict[str, float]]:
    """:func:`audit_numbers` of every row of ``values``, at once.

    ``values[i, j]`` is the number ``names[j]`` of row ``i``; ``common``
    are numbers of every row, after its own: the same dicts, keys in that
    order, as ``audit_numbers(**row, **common)``, with the keys found once
    per pattern of finite values (a handful), not once per number.
    """
    if values.ndim != 2 or values.shape[1] != len(names):
        raise ValueError('audit_rows: %d names for values of shape %r'
                         % (len(names), values.shape))
    if len(names) > AUDIT_COLUMNS:
        raise ValueError('audit_rows: at most %d names, not %d'
                         % (AUDIT_COLUMNS, len(names)))
    shared = audit_numbers(**(common or {}))
    shared_keys = tuple(shared)
    shared_values = tuple(shared.values())
    finite = np.isfinite(values)
    codes = finite @ _BITS[:len(names)]
    patterns: dict[int, tuple[tuple[str, ...], Picker]] = {}
    rows = []
    for i, (code, numbers) in enumerate(zip(codes.tolist(),
                                            values.tolist())):
        if code not in patterns:
            at = [j for j, ok in enumerate(finite[i].tolist()) if ok]
            patterns[code] = (tuple([names[j] for j in at]) + shared_keys,
                              _picker(at))
        keys, pick = patterns[code]
        rows.append(dict(zip(keys, pick(numbers) + shared_values)))
    return rows


class PolicyState(Protocol):
    """What a policy remembers of a domain between decisions."""

    def to_dict(self) -> dict[str, Any]:
        """The state as JSON (what the policy's ``restore`` reads back)."""
        ...


class Policy(Protocol):
    """The decision function run per domain every interval."""

    name: str

    def decide(self, snapshot: DomainSnapshot, state: Any, now: float
               ) -> tuple[list[Decision], PolicyState | None]:
        """The decisions, and the state to give the domain's next call.

        ``state``: what the call before returned (``None`` at first).
        """
        ...

    def restore(self, data: Mapping[str, Any] | None
                ) -> PolicyState | None:
        """The state of some ``to_dict()``, for this policy's parameters.

        ``None`` (nothing stored) gives the state a first call takes.
        """
        ...


class Stateless:
    """A policy that remembers nothing: its state is always ``None``."""

    def restore(self, data: Mapping[str, Any] | None) -> None:
        return None
