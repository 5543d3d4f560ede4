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
without patching iotguard.
"""

import functools
from typing import Callable

from stevedore import driver
from stevedore import exception
from stevedore import extension

from iotguard.policy import base

GROUP = 'iotguard.decision_policies'


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
