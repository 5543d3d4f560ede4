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

"""The capacity estimator in the simulator: how fast it learns the truth.

Every window the simulator's loop feeds the domain's snapshot to
:mod:`iotguard.policy.estimator` and keeps the fit; the policy keeps the
scenario's profile (learning changes no decision). The truth is the
scenario's domain, in its own ``form``: the capacity at a deep queue.
"""

import dataclasses
from typing import Any

from iotguard.policy import base
from iotguard.policy import estimator
from iotguard.sim import scenario as scenario_mod

#: Converged: the right form and both figures within this of the truth.
TOLERANCE = 0.10


def prior(domain: scenario_mod.Domain) -> base.Profile:
    """The scenario's figures as a typed manual profile (default form)."""
    return base.Profile(domain.iops_4k, domain.bytes_sec)


@dataclasses.dataclass
class Learner:
    """The estimator's state over one run and its fit after each window."""

    prior: base.Profile
    state: estimator.State = dataclasses.field(
        default_factory=estimator.State)
    fits: list[estimator.Fit | None] = dataclasses.field(
        default_factory=list)

    def observe(self, snapshot: base.DomainSnapshot) -> None:
        fit = self.fits[-1] if self.fits else None
        estimator.observe_snapshot(
            self.state, snapshot, fit.profile if fit else self.prior,
            self.prior)
        self.fits.append(estimator.fit(self.state, self.prior))


def within(fit: estimator.Fit | None, true: base.Profile) -> bool:
    """The right form, both figures within ``TOLERANCE``."""
    return (fit is not None and fit.form == true.form
            and abs(fit.iops_4k / true.iops_4k - 1.0) <= TOLERANCE
            and abs(fit.bytes_sec / true.bytes_sec - 1.0) <= TOLERANCE)


def convergence(fits: list[estimator.Fit | None], true: base.Profile,
                window_s: float) -> dict[str, Any]:
    """The last fit against the truth, and when it got there for good.

    ``converged_s``: the end of the window from which on every fit is
    :func:`within` the truth (``None``: not by the end of the run).
    """
    converged = None
    for k in range(len(fits) - 1, -1, -1):
        if not within(fits[k], true):
            break
        converged = (k + 1) * window_s
    last = fits[-1] if fits else None
    result: dict[str, Any] = {
        'true': {'form': true.form, 'iops_4k': true.iops_4k,
                 'bytes_sec': true.bytes_sec},
        'fit': None, 'converged_s': converged}
    if last is not None:
        result['fit'] = {
            'form': last.form, 'iops_4k': round(last.iops_4k, 1),
            'bytes_sec': round(last.bytes_sec, 0),
            'error': round(last.error, 4),
            'confidence': round(last.confidence, 3),
            'intervals': last.intervals, 'mixes': last.mixes,
            'identified': list(last.identified)}
    return result
