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

"""Decision policies: pure ``decide(snapshot, now) -> [Decision]`` objects.

Policies are found by name through the ``iotguard.decision_policies``
entry points (setup.cfg) with stevedore, so an operator can add one
without patching iotguard. A policy declares its parameters once, as
fields made by :func:`param` (:class:`Param`); the check
(:func:`check_params`), the API's schema (:func:`params_schema`) and the
docs' tables (doc/source/_exts/iotguard_params.py) are made from them.
"""

import dataclasses
import functools
import math
from typing import Any
from typing import Callable
from typing import Mapping
from typing import NamedTuple
from typing import TypeVar

from stevedore import driver
from stevedore import exception
from stevedore import extension

from iotguard.policy import base

GROUP = 'iotguard.decision_policies'

_T = TypeVar('_T')


class Param(NamedTuple):
    """One parameter of a policy: a number within ``bounds``."""

    name: str
    default: float | None
    #: an interval: ``'(0, 1]'``, ``'[0, inf)'``
    bounds: str
    meaning: str

    @property
    def limits(self) -> tuple[float, float, bool, bool]:
        """Low, high, and whether each is excluded."""
        low, high = self.bounds[1:-1].split(', ')
        return (float(low), float(high), self.bounds[0] == '(',
                self.bounds[-1] == ')')

    def check(self, policy: str, value: object) -> float:
        """``value`` as a float; ``ValueError`` out of bounds."""
        try:
            number = float(str(value))   # not True, not a list
        except ValueError:
            number = math.nan
        low, high, low_open, high_open = self.limits
        if not (math.isfinite(number)
                and (low < number if low_open else low <= number)
                and (number < high if high_open else number <= high)):
            raise ValueError('%s: %s must be a number %s, not %r' % (
                policy, self.name, 'in ' + self.bounds if math.isfinite(high)
                else '%s %g' % ('>' if low_open else '>=', low), value))
        return number

    def schema(self) -> dict[str, object]:
        """The parameter's JSON schema (no infinity in JSON: 1e15)."""
        low, high, low_open, high_open = self.limits
        result: dict[str, object] = {
            'type': 'number', 'description': self.meaning,
            'exclusiveMinimum' if low_open else 'minimum': low,
            'exclusiveMaximum' if high_open and math.isfinite(high)
            else 'maximum': min(high, 1e15)}
        if self.default is not None:
            result['default'] = self.default
        return result


def param(default: _T, bounds: str, meaning: str) -> _T:
    """A dataclass field declaring a parameter (:func:`declared`)."""
    return dataclasses.field(
        default=default, metadata={'param': (default, bounds, meaning)})


def declared(params: type) -> tuple[Param, ...]:
    """The parameters of a dataclass of :func:`param` fields."""
    return tuple(Param(f.name, *f.metadata['param'])
                 for f in dataclasses.fields(params))


def check_params(policy: str, params: tuple[Param, ...],
                 given: Mapping[str, object]) -> dict[str, Any]:
    """``given`` checked, as floats, with the defaults of the others.

    ``ValueError`` naming the first unknown or bad parameter.
    """
    names = sorted(p.name for p in params)
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise ValueError('%s: unknown parameter %s; %s' % (
            policy, unknown[0],
            'known: ' + ', '.join(names) if names else 'it takes none'))
    return {p.name: p.check(policy, given[p.name]) if p.name in given
            else p.default for p in params}


def params_of(name: str) -> tuple[Param, ...] | None:
    """The declared parameters of policy ``name`` (``None``: undeclared)."""
    params: tuple[Param, ...] | None = getattr(_factory(name), 'PARAMS', None)
    return params


def params_schema(params: tuple[Param, ...]) -> dict[str, object]:
    """The JSON schema of a policy's ``params``."""
    return {'type': 'object', 'additionalProperties': False,
            'properties': {p.name: p.schema() for p in params}}


def names() -> list[str]:
    """The names of the installed policies."""
    return sorted(extension.ExtensionManager(GROUP).names())


@functools.lru_cache(maxsize=None)
def _factory(name: str) -> Callable[..., base.Policy] | None:
    # A controller loads a policy per domain it owns: once per name.
    try:
        factory: Callable[..., base.Policy] = driver.DriverManager(
            GROUP, name).driver
    except exception.NoMatches:
        return None
    return factory


def load(name: str, **params: object) -> base.Policy:
    """Build the policy called ``name`` with its parameters.

    Raises ``ValueError`` naming the known policies for an unknown name,
    and whatever the policy raises for bad parameters.
    """
    factory = _factory(name)
    if factory is None:
        raise ValueError('unknown policy %r; known: %s'
                         % (name, ', '.join(names())))
    return factory(**params)
