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

"""Admission control of tier choices, pure: no I/O, no clock.

A domain's committed load is the sum over its disks of the most their
floors can cost (:func:`iotguard.policy.costmodel.committed_floor_load`),
in device-seconds per second, so its capacity is 1.0. A tier choice is
admitted when the committed load after it stays within ``max_ratio``, or
when it does not raise the committed load (moving down a tier on an
over-committed domain is always allowed). A domain without a capacity
profile admits only tiers without floors: a floor it cannot price is a
promise it cannot check.

**Overcommitment** (:func:`overcommit`): when the estimator's fit, without
its margin, prices the floors admitted above ``max_ratio``, the storage
serves less than was sold: the domain is *overcommitted*, and *beyond
capacity* above 1.0. This is reported, never acted on: no tier changes,
nothing is refused retroactively. The verdict is None (unknown) unless
the evidence identified both of the fit's parameters (every floor is
priced with both) with a confidence of at least
:data:`OVERCOMMIT_CONFIDENCE`.

**Latency objectives** (:func:`predicted_p99_ms`): a tier with
``latency_p99_ms`` is refused when the 99th percentile the domain would
give a 4 KiB operation at the committed load after the choice is above
it, unless the choice raises neither the load nor the objectives.
"""

import collections.abc
import dataclasses
import datetime
import math
from typing import Any

import numpy as np

from iotguard import exception
from iotguard.policy import base
from iotguard.policy import costmodel
from iotguard.policy import estimator

#: Tolerance of the "does not raise the load" comparison.
EPSILON = 1e-12
#: The profiles admission prices, (lowest, highest) of each value: with
#: floors up to 10^15 the committed load stays finite (a profile of 1e-306
#: would overflow it to infinity) and a device does at least one 4 KiB
#: operation per second.
PROFILE_RANGES: dict[str, tuple[float, float]] = {
    'iops_4k': (1.0, 1e9), 'bytes_sec': (4096.0, 1e15)}

#: Where a domain's profile comes from: the one an operator typed
#: (pinned), or the one the estimator learned (with its margin).
MANUAL = 'manual'
LEARNED = 'learned'
SOURCES = (MANUAL, LEARNED)


@dataclasses.dataclass(frozen=True)
class Domain:
    """A storage domain as the database keeps it (read-only).

    ``iops_4k``, ``bytes_sec`` and ``form``: the profile an operator set
    (:func:`manual_profile`); ``fit``: the estimator's latest, written at
    ``learned_at``; ``profile_source``: which one decisions and admission
    use (:func:`profile_of`); ``policy`` None: the controller's default.
    """

    name: str
    kind: str
    iops_4k: float | None = None
    bytes_sec: float | None = None
    form: str = base.ADDITIVE
    profile_source: str = MANUAL
    policy: str | None = None
    params: collections.abc.Mapping[str, Any] = dataclasses.field(
        default_factory=dict)
    fit: estimator.Fit | None = None
    #: the uncongested service time per device-second of cost the
    #: ``guarantee`` policy learned (its state's ``service``); None: 1
    service_ratio: float | None = None
    learned_at: datetime.datetime | None = None
    created_at: datetime.datetime | None = None
    updated_at: datetime.datetime | None = None


#: The least confidence of a fit (both parameters identified) whose
#: verdict on overcommitment is given: half the evidence for full
#: confidence with a small error.
OVERCOMMIT_CONFIDENCE = 0.5


def _priced(iops_4k: float | None, bytes_sec: float | None) -> bool:
    """Whether admission can price floors with these figures."""
    return all(v is not None and low <= v <= high
               for v, (low, high) in zip((iops_4k, bytes_sec),
                                         PROFILE_RANGES.values()))


def manual_profile(domain: Domain) -> base.Profile | None:
    """The profile an operator set, or None when it has not been set.

    A profile outside :data:`PROFILE_RANGES` (stored before they were
    checked) counts as none: its floors cannot be priced.
    """
    iops_4k, bytes_sec = domain.iops_4k, domain.bytes_sec
    if not _priced(iops_4k, bytes_sec):
        return None
    assert iops_4k is not None and bytes_sec is not None
    return base.Profile(iops_4k, bytes_sec, domain.form)


def profile_of(domain: Domain, margined: bool = True
               ) -> base.Profile | None:
    """The Profile decisions and admission use, or None without one.

    The learned one (shrunk by its margin, :meth:`estimator.Fit.margined`,
    unless ``margined`` is false: the best estimate of the device, which
    the domain's utilisation is read against) when the domain's
    ``profile_source`` is ``learned`` and the estimator has a fit;
    otherwise the manual one.
    """
    fit = domain.fit
    if domain.profile_source == LEARNED and fit is not None:
        profile = fit.margined() if margined else fit.profile
        if _priced(profile.iops_4k, profile.bytes_sec):
            return profile
    return manual_profile(domain)


Tiers = collections.abc.Iterable[base.Tier]


def committed(tiers: Tiers, profile: base.Profile) -> float:
    """Committed load of disks with these tiers (their floors)."""
    return sum((costmodel.committed_floor_load(t.min_iops, t.min_bytes_sec,
                                               profile)
                for t in tiers), 0.0)


def predicted_p99_ms(load: float, profile: base.Profile,
                     service_ratio: float | None = None) -> float:
    """The 99th percentile latency (ms) of a 4 KiB operation at ``load``.

    An M/M/1 queue's response time is exponential, of mean ``s / (1 -
    load)``: its 99th percentile is ``ln(100)`` times that, ``s`` the
    operation's cost at ``profile`` times ``service_ratio`` (the service
    time the domain's policy learned per device-second of cost; None: 1).
    ``inf`` at a load of 1 or more.
    """
    if load >= 1.0:
        return math.inf
    service_ms = 1000.0 * float(costmodel.op_cost(
        np.array([costmodel.FLOOR_IO_SIZE]), profile)[0]) * max(
            1.0, service_ratio or 1.0)
    return base.P99_MEANS * service_ms / (1.0 - max(0.0, load))


def _objective(tiers: Tiers) -> float:
    """The tightest latency objective of ``tiers`` (``inf``: none)."""
    return min((t.latency_p99_ms for t in tiers if t.latency_p99_ms),
               default=math.inf)


def check(tier: str, domain: Domain, others: Tiers, before: Tiers,
          after: Tiers, max_ratio: float) -> dict[str, Any]:
    """Admit or refuse moving some disks of ``domain`` to ``tier``.

    ``others`` are the tiers of the domain's other disks, ``before`` and
    ``after`` those of the disks that change. Returns the numbers behind
    the verdict; raises :class:`iotguard.exception.AdmissionRejected` with
    the same numbers when refused.
    """
    numbers: dict[str, Any] = {
        'domain': domain.name, 'tier': tier,
        'iops_4k': domain.iops_4k, 'bytes_sec': domain.bytes_sec,
        'capacity': 1.0, 'max_commit_ratio': max_ratio,
        'committed_before': None, 'committed_after': None}
    profile = profile_of(domain)
    if profile is None:
        if not any(t.min_iops > 0 or t.min_bytes_sec > 0
                   or t.latency_p99_ms > 0 for t in after):
            return numbers
        raise exception.AdmissionRejected(
            'Tier %s refused on domain %s: the domain has no capacity '
            'profile (iops_4k, bytes_sec) yet, so its floors cannot be '
            'checked; an operator must calibrate it first.'
            % (tier, domain.name),
            tier=tier, domain=domain.name, numbers=numbers)
    numbers.update(iops_4k=profile.iops_4k, bytes_sec=profile.bytes_sec)
    rest = committed(others, profile)
    numbers['committed_before'] = rest + committed(before, profile)
    numbers['committed_after'] = rest + committed(after, profile)
    if (numbers['committed_after'] > max_ratio
            and numbers['committed_after']
            > numbers['committed_before'] + EPSILON):
        raise exception.AdmissionRejected(
            tier=tier, domain=domain.name,
            committed=numbers['committed_after'], max_ratio=max_ratio,
            numbers=numbers)
    objective = _objective(after)
    if math.isfinite(objective):
        p99 = predicted_p99_ms(numbers['committed_after'], profile,
                               domain.service_ratio)
        numbers.update(latency_objective_ms=objective,
                       predicted_p99_ms=p99 if math.isfinite(p99) else None)
        if p99 > objective and (
                numbers['committed_after'] > numbers['committed_before']
                + EPSILON or objective < _objective(before)):
            raise exception.LatencyRejected(
                tier=tier, domain=domain.name, objective=objective,
                predicted_p99_ms=p99, committed=numbers['committed_after'],
                numbers=numbers)
    return numbers


@dataclasses.dataclass(frozen=True)
class Overcommit:
    """The verdict of :func:`overcommit` and the numbers behind it.

    ``committed``: the floors priced with the profile in use (None without
    one); ``committed_learned``: priced with the fit without its margin
    (None without a fit admission can price); ``overcommitted`` and
    ``beyond_capacity``: None while the fit does not identify what matters
    (see the module doc).
    """

    committed: float | None
    committed_learned: float | None
    max_commit_ratio: float
    confidence: float | None
    overcommitted: bool | None
    beyond_capacity: bool | None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def identifies(fit: estimator.Fit | None) -> bool:
    """Whether a fit is trusted to judge overcommitment (module doc)."""
    return (fit is not None
            and {estimator.IOPS_4K, estimator.BYTES_SEC} <= set(fit.identified)
            and fit.confidence >= OVERCOMMIT_CONFIDENCE
            and _priced(fit.iops_4k, fit.bytes_sec))


def overcommit(tiers: Tiers,
               profile: base.Profile | None, fit: estimator.Fit | None,
               max_ratio: float) -> Overcommit:
    """Whether floors admitted with ``profile`` exceed what ``fit`` serves.

    ``tiers``: those of the domain's disks; ``profile``: the one in use
    (:func:`profile_of`); ``fit``: the estimator's (:attr:`Domain.fit`),
    read without its margin.
    """
    tiers = list(tiers)
    in_use = committed(tiers, profile) if profile is not None else None
    learned = (committed(tiers, fit.profile)
               if fit is not None and _priced(fit.iops_4k, fit.bytes_sec)
               else None)
    judged = learned if identifies(fit) else None
    return Overcommit(
        committed=in_use, committed_learned=learned,
        max_commit_ratio=max_ratio,
        confidence=fit.confidence if fit is not None else None,
        overcommitted=None if judged is None else judged > max_ratio,
        beyond_capacity=None if judged is None else judged > 1.0)
