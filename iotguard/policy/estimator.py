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

"""A domain's capacity profile, learned from what its storage does.

Pure: NumPy, no I/O, no clock. Each interval the caller feeds one
observation per domain: its total operations/s and bytes/s and whether it
was saturated (:func:`observe`, or :func:`observe_snapshot`, which judges
saturation from the disks' rates and latency). :func:`fit` then fits both
forms of the cost model (:mod:`iotguard.policy.costmodel`) and keeps the
one that explains the saturated intervals best.

**Saturation** (what blk-iocost and PARDA read from latency): a disk
without a cap of its own that always has a request in flight (``iops x
latency >= BUSY_DEPTH``) with operations ``SATURATION_FACTOR`` times
slower than the domain's uncongested service time (learned as
:func:`iotguard.policy.guarantee.learn_service` does, from the quiet
intervals only: a domain saturated from the start would learn its queue
as normal). A saturated interval lies on the model's ``load = 1``; a
quiet one is a lower bound, which may raise the fitted capacity, never
lower it.

**The two forms.** ``additive``: non-negative least squares on ``a * ops +
b * bytes = 1``, again without the points more than ``TRIM`` median
deviations away, scaled so that the ``QUANTILE`` of the points' loads is 1
(a partly saturated interval reads low). ``max``: the points split by I/O
size at each boundary between the mixes seen, each side giving its
resource (IOPS below, bytes above) as the ``QUANTILE`` of its rates; the
split with the smallest error wins.

A fit's error is ``mean |load - 1|`` over the saturated points; the form
with the smaller one is kept. Within ``FORM_TOLERANCE`` of each other
(one or two I/O-size mixes fit both exactly) the prior decides: the form
under which its own figures explain the points best (an operator's fio
figures on a token bucket are right in the max form, 1.64 times too dear
in the additive one); without a prior, ``max``.

**Identification.** One I/O-size mix identifies one parameter, the
resource that binds at that size; the other is kept from the prior, never
below what the domain was seen to serve (:attr:`Fit.identified`). Without
a prior a single mix identifies nothing for sure.

**Confidence** grows with the saturated intervals used (full at
``FULL_EVIDENCE``), is halved while a parameter is not identified, and
falls to 0 as the error reaches ``ERROR_SCALE``; :meth:`Fit.margined`
shrinks the capacity by up to ``MARGIN`` while it is low.

**Bounded state.** :class:`State` is plain JSON-able data: the
``MAX_POINTS`` most recent saturated points and the Pareto frontier of
the quiet ones. Observations that are not finite, negative, or more than
``OUTLIER_FACTOR`` times the largest rate known are rejected and counted.
"""

from collections.abc import Mapping
import dataclasses
import math
from typing import Any

import numpy as np

from iotguard.policy import base
from iotguard.policy import costmodel
from iotguard.policy import guarantee

#: Saturated points kept (the most recent): an hour at 5 s intervals. The
#: quiet frontier is bounded by the same number.
MAX_POINTS = 720
#: The quantile of the saturated rates taken as the capacity: above the
#: median, so that intervals only partly saturated do not pull it down.
QUANTILE = 0.75
#: Additive fit: points further than this many median absolute deviations
#: from the median load are left out of the second pass.
TRIM = 3.0
#: A rate above this many times the largest known one (the prior's, or the
#: accepted points') is a glitch, a counter reset read as a rate. The
#: largest, not a median: a workload whose requests grow from 4 KiB to
#: 1 MiB moves its bytes a second up by orders of magnitude.
OUTLIER_FACTOR = 20.0
#: Two fits whose errors differ by less than this explain the evidence
#: equally.
FORM_TOLERANCE = 0.02
#: Saturated intervals for full confidence: five minutes at 5 s.
FULL_EVIDENCE = 60
#: A fit with this mean relative error has no confidence.
ERROR_SCALE = 0.25
#: While confidence is low the capacity used is the fit's times ``1 -
#: MARGIN * (1 - confidence)``: 80 % of it with no confidence.
MARGIN = 0.2
#: Width of one I/O-size mix, in octaves (log2 of bytes per operation).
MIX_OCTAVES = 0.5
#: Saturation, as ``guarantee`` judges congestion: a latency above this
#: many times the uncongested service time, this many requests in flight;
#: a disk at ``AT_CEILING`` of its own ceiling waits in its own throttle.
SATURATION_FACTOR = guarantee.UNCONGESTED
BUSY_DEPTH = guarantee.DEFAULTS['busy_depth']
AT_CEILING = guarantee.DEFAULTS['at_cap_ratio']

IOPS_4K = 'iops_4k'
BYTES_SEC = 'bytes_sec'


@dataclasses.dataclass
class State:
    """What the estimator keeps of one domain between rounds.

    ``saturated``: ``[ops, bytes]`` of the recent saturated intervals,
    oldest first; ``quiet``: the frontier of the quiet ones; ``service``:
    the learned uncongested service time ratio
    (:func:`iotguard.policy.guarantee.learn_service`); ``rejected``:
    observations refused as glitches.
    """

    saturated: list[list[float]] = dataclasses.field(default_factory=list)
    quiet: list[list[float]] = dataclasses.field(default_factory=list)
    service: float | None = None
    rejected: int = 0

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> 'State':
        def points(key: str) -> list[list[float]]:
            return [[float(o), float(b)]
                    for o, b in data.get(key) or []][-MAX_POINTS:]

        service = data.get('service')
        return cls(saturated=points('saturated'), quiet=points('quiet'),
                   service=None if service is None else float(service),
                   rejected=int(data.get('rejected') or 0))


@dataclasses.dataclass(frozen=True)
class Fit:
    """A learned capacity profile and how far to trust it.

    ``intervals``: saturated intervals the fit used; ``mixes``: distinct
    I/O-size mixes among them; ``identified``: the parameters the evidence
    identified (the others come from the prior).
    """

    form: str
    iops_4k: float
    bytes_sec: float
    error: float
    intervals: int
    mixes: int
    confidence: float
    identified: tuple[str, ...]

    @property
    def profile(self) -> base.Profile:
        return base.Profile(self.iops_4k, self.bytes_sec, self.form)

    def margined(self) -> base.Profile:
        """The profile shrunk by the margin its confidence leaves."""
        scale = 1.0 - MARGIN * (1.0 - self.confidence)
        return base.Profile(self.iops_4k * scale, self.bytes_sec * scale,
                            self.form)

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def observe_snapshot(state: State, snapshot: base.DomainSnapshot,
                     profile: base.Profile,
                     prior: base.Profile | None = None) -> bool:
    """One interval of a domain from its policy snapshot; its saturation.

    ``profile`` prices the operations for the latency test (the fit in
    use, or the prior). Only the disks whose latency tells about the
    domain, not about a limit, count: fresh, with I/O, without a cap and
    below ``AT_CEILING`` of their own ceiling.
    """
    snap = snapshot
    loads = guarantee.Loads.of(snap)
    usable = (~snap.stale & ~snap.capped
              & ~(loads.u >= AT_CEILING * loads.ceil)
              & (snap.iops > 0) & (snap.latency_ms > 0))
    cost = costmodel.op_cost(loads.size, profile)
    in_flight = snap.iops * snap.latency_ms / 1000.0
    slow = snap.latency_ms > (SATURATION_FACTOR * 1000.0 * cost
                              * (state.service or 1.0))
    full = bool((usable & slow & (in_flight >= BUSY_DEPTH)).any())
    if not full:
        state.service = guarantee.learn_service(state.service,
                                                snap.latency_ms, cost, usable)
    observe(state, float(np.sum(snap.iops)), float(np.sum(snap.bytes_sec)),
            full, prior)
    return full


def _scale(state: State, prior: base.Profile | None) -> tuple[float, float]:
    """The largest rates known: the prior's, the accepted points'."""
    known = state.saturated + state.quiet
    ops = prior.iops_4k if prior else 0.0
    byts = prior.bytes_sec if prior else 0.0
    if known:
        top = np.max(np.asarray(known), axis=0)
        ops, byts = max(ops, float(top[0])), max(byts, float(top[1]))
    return ops, byts


def observe(state: State, ops: float, bytes_sec: float, full: bool,
            prior: base.Profile | None = None) -> bool:
    """Record one interval's totals; False (counted) if rejected."""
    valid = (math.isfinite(ops) and math.isfinite(bytes_sec) and ops >= 0
             and bytes_sec >= 0 and (ops > 0 or not full))
    if valid:
        top_ops, top_bytes = _scale(state, prior)
        valid = not ((top_ops and ops > OUTLIER_FACTOR * top_ops)
                     or (top_bytes and bytes_sec > OUTLIER_FACTOR
                         * top_bytes))
    if not valid:
        state.rejected += 1
        return False
    if ops <= 0 and bytes_sec <= 0:
        return True
    if full:
        state.saturated.append([ops, bytes_sec])
        del state.saturated[:-MAX_POINTS]
    else:
        frontier = [p for p in state.quiet
                    if not (p[0] <= ops and p[1] <= bytes_sec)]
        if not any(p[0] >= ops and p[1] >= bytes_sec for p in frontier):
            frontier.append([ops, bytes_sec])
        state.quiet = frontier[-MAX_POINTS:]
    return True


@dataclasses.dataclass
class _Candidate:
    form: str
    iops: float
    byts: float
    identified: tuple[str, ...]
    used: int


def _loads(points: np.ndarray, iops: float, byts: float,
           form: str) -> base.FloatArray:
    return costmodel.load(points[:, 0], points[:, 1],
                          base.Profile(iops, byts, form))


def _error(points: np.ndarray, cand: _Candidate) -> float:
    return float(np.mean(np.abs(_loads(points, cand.iops, cand.byts,
                                       cand.form) - 1.0)))


def _fit_max(points: np.ndarray, mix: np.ndarray,
             prior: base.Profile | None) -> _Candidate:
    """Split the points by I/O size: below, operations bind; above, bytes."""
    # the points the prior says are held by operations, not bytes
    ops_bound = (points[:, 0] / prior.iops_4k
                 >= points[:, 1] / prior.bytes_sec) if prior else None
    scored = []
    for edge in list(np.unique(mix)) + [np.inf]:
        small = mix < edge
        identified = []
        if small.any():
            iops = float(np.quantile(points[small, 0], QUANTILE))
            identified.append(IOPS_4K)
        else:
            iops = max(prior.iops_4k if prior else 0.0,
                       float(points[:, 0].max()))
        if (~small).any():
            byts = float(np.quantile(points[~small, 1], QUANTILE))
            identified.append(BYTES_SEC)
        else:
            byts = max(prior.bytes_sec if prior else 0.0,
                       float(points[:, 1].max()))
        cand = _Candidate(base.MAX, iops, byts, tuple(identified),
                          len(points))
        agree = (int(np.sum(ops_bound == small))
                 if ops_bound is not None else 0)
        scored.append((_error(points, cand), agree, cand))
    # among the splits that fit as well as the best: the one the prior
    # agrees with most, then the one that identifies most
    best = min(error for error, _, _ in scored)
    return max((s for s in scored if s[0] <= best + FORM_TOLERANCE),
               key=lambda s: (s[1], len(s[2].identified), -s[0]))[2]


def _nnls(points: np.ndarray) -> tuple[float, float]:
    """Non-negative ``(a, b)`` least squares of ``a*ops + b*bytes = 1``."""
    scale = points.max(axis=0)
    x = points / scale
    ones = np.ones(len(x))
    coef = np.linalg.lstsq(x, ones, rcond=None)[0]
    if (coef < 0).any():
        single = [np.array([ones @ x[:, 0] / (x[:, 0] @ x[:, 0]), 0.0]),
                  np.array([0.0, ones @ x[:, 1] / (x[:, 1] @ x[:, 1])])]
        coef = min(single, key=lambda c: float(np.sum((x @ c - 1) ** 2)))
    return float(coef[0] / scale[0]), float(coef[1] / scale[1])


def _fit_additive(points: np.ndarray, mixes: int,
                  prior: base.Profile | None) -> _Candidate | None:
    """Least squares over the mixes; one mix: the binding term only."""
    used = points
    identified: tuple[str, ...] = ()
    if mixes >= 2:
        a, b = _nnls(points)
        load = points @ np.array([a, b])
        spread = float(np.median(np.abs(load - np.median(load))))
        keep = np.abs(load - np.median(load)) <= TRIM * spread + 1e-9
        if keep.sum() >= 2:
            used = points[keep]
            a, b = _nnls(used)
        identified = (IOPS_4K, BYTES_SEC)
    if mixes < 2 or a <= 0 or b <= 0:
        if prior is None:
            return None
        # one term identified, the other kept from the prior
        size = float(np.median(points[:, 1] / points[:, 0]))
        if 1.0 / prior.iops_4k >= size / prior.bytes_sec:
            b = 1.0 / prior.bytes_sec
            a = float(np.median(1.0 / points[:, 0] - size * b))
            identified = (IOPS_4K,)
        else:
            a = 1.0 / prior.iops_4k
            b = float(np.median(1.0 / points[:, 0] - a) / size)
            identified = (BYTES_SEC,)
        if a <= 0 or b <= 0:
            # the prior's other term alone costs more than seen: scale both
            ratio = float(np.median(1.0 / points[:, 0])) / float(
                costmodel.op_cost(np.array([size]), prior)[0])
            a, b = ratio / prior.iops_4k, ratio / prior.bytes_sec
            identified = ()
    # the capacity at the QUANTILE of the points' loads
    q = float(np.quantile(used @ np.array([a, b]), QUANTILE))
    return _Candidate(base.ADDITIVE, q / a, q / b, identified, len(used))


def _bounded(cand: _Candidate, quiet: np.ndarray) -> _Candidate:
    """Raise a fit to serve every quiet interval (never lowers it)."""
    if not len(quiet):
        return cand
    if cand.form == base.MAX:
        return dataclasses.replace(
            cand, iops=max(cand.iops, float(quiet[:, 0].max())),
            byts=max(cand.byts, float(quiet[:, 1].max())))
    over = max(1.0, float(_loads(quiet, cand.iops, cand.byts,
                                 cand.form).max()))
    return dataclasses.replace(cand, iops=cand.iops * over,
                               byts=cand.byts * over)


def fit(state: State, prior: base.Profile | None = None) -> Fit | None:
    """The best of both forms over the state's evidence (see module doc).

    ``prior``: the manual profile, if any. None before any saturated
    interval.
    """
    points = np.asarray(state.saturated, dtype=np.float64).reshape(-1, 2)
    points = points[(points[:, 0] > 0) & (points[:, 1] > 0)]
    if not len(points):
        return None
    quiet = np.asarray(state.quiet, dtype=np.float64).reshape(-1, 2)
    # each point's I/O-size mix: its mean size in bins of MIX_OCTAVES
    mix = np.round(np.log2(points[:, 1] / points[:, 0]) / MIX_OCTAVES)
    mixes = len(np.unique(mix))
    cands = [_bounded(c, quiet) for c in (
        _fit_additive(points, mixes, prior), _fit_max(points, mix, prior))
        if c is not None]
    errors = [_error(points, c) for c in cands]
    best = min(errors)
    tied = [c for c, e in zip(cands, errors) if e <= best + FORM_TOLERANCE]
    if len(tied) > 1:
        def prior_error(cand: _Candidate) -> float:
            if prior is None:
                return 0.0 if cand.form == base.MAX else 1.0
            return _error(points, dataclasses.replace(
                cand, iops=prior.iops_4k, byts=prior.bytes_sec))
        tied.sort(key=prior_error)
    chosen = tied[0]
    error = errors[cands.index(chosen)]
    identified = chosen.identified if (prior or mixes > 1) else ()
    confidence = (min(1.0, chosen.used / FULL_EVIDENCE)
                  * (1.0 if len(identified) == 2 else 0.5)
                  * max(0.0, 1.0 - error / ERROR_SCALE))
    return Fit(form=chosen.form, iops_4k=chosen.iops, bytes_sec=chosen.byts,
               error=error, intervals=chosen.used, mixes=mixes,
               confidence=confidence, identified=identified)
