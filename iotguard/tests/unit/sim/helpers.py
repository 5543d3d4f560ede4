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

"""Small scenarios for the simulator's unit tests (short, fast)."""

import copy
from typing import Any

from iotguard.sim import scenario

BASE: dict[str, Any] = {
    'name': 'unit',
    'duration_s': 20,
    'interval_s': 5,
    'tick_s': 0.02,
    'domain': {'name': 'pool', 'iops_4k': 300, 'bytes_sec': 3400000,
               'sat_depth': 12, 'depth_exponent': 0.2,
               'share_exponent': 1.5, 'noise': 0.0},
    'tiers': [{'name': 'std', 'min_bytes_sec': 614400, 'weight': 1}],
    'vms': [
        {'name': 'heavy', 'role': 'heavy', 'tier': 'std',
         'jobs': [{'rw': 'randwrite', 'bs': 65536, 'processes': 4}]},
        {'name': 'light', 'role': 'light', 'tier': 'std',
         'jobs': [{'rw': 'randwrite', 'bs': 65536, 'processes': 1,
                   'rate_kbs': 300}]},
    ],
}


def data(**overrides: Any) -> dict[str, Any]:
    """A deep copy of BASE with top-level keys replaced."""
    result = copy.deepcopy(BASE)
    result.update(copy.deepcopy(overrides))
    return result


def make(**overrides: Any) -> scenario.Scenario:
    return scenario.parse(data(**overrides), 'unit-test')


def vm(name: str, jobs: list[dict[str, Any]], **fields: Any) -> dict[str,
                                                                     Any]:
    result = {'name': name, 'tier': 'std', 'jobs': jobs}
    result.update(fields)
    return result
