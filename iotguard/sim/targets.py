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

"""The guarantee to the second: ``guarantee`` over many seeds.

``iotguard-sim targets`` prints what :func:`table` makes of :func:`run`:
each scenario of :data:`SCENARIOS` run with ``guarantee`` (the scenario's
parameters) and ``none`` (the reference of work conservation) at every
seed, sampled every second, and per measure of :data:`TARGETS` its
min/median/max over the seeds and whether every seed met the target.
"""

import multiprocessing
import operator
import statistics
from typing import Any

from iotguard import policy as policy_mod
from iotguard.sim import loop
from iotguard.sim import measures
from iotguard.sim import scenario as scenario_mod

#: the paper's run with 1 -> 16 writers, two aggressors (and an on/off
#: third), IOPS-bound 4 KiB writes, an on/off aggressor (sized for 1 s
#: windows), a sleeper, a tier raised mid-run
SCENARIOS = ('paper-16', 'aggressors', 'iops-4k', 'on-off-x5', 'sleeper',
             'tier-raised')
#: measure -> (is it better when higher, the target); every seed must
#: meet it (measures.py defines the measures)
TARGETS = {
    'compliance': (True, 0.9999),
    'compliance_worst': (True, 0.8),
    'reclaim_p99_s': (False, 1.0),
    'reclaim_max_s': (False, 2.0),
    'work_conservation': (True, 0.997),
    'min_max_ratio': (True, 0.99),
    'cap_changes_per_10min': (False, 2.0),
}
#: the windows: one second
SAMPLE_S = 1.0


def met(key: str, value: float) -> bool:
    higher, target = TARGETS[key]
    return bool((operator.ge if higher else operator.le)(value, target))


def measure(name: str, seed: int, urgent: bool,
            watch_s: float = 0.0) -> dict[str, float]:
    """The measures of ``guarantee`` on one scenario at one seed.

    ``urgent``: the fast path's urgent decisions (else the rounds only);
    ``watch_s``: with them, the agents' watch; urgent decisions stay at
    most one a second (:class:`~iotguard.sim.loop.FastPath`).
    """
    scenario = scenario_mod.load(name)
    fast = loop.FastPath(SAMPLE_S, SAMPLE_S if urgent else 0.0,
                         watch_s if urgent else 0.0)
    runs = {p: loop.run(scenario, policy_mod.load(
        p, **scenario.policies.get(p, {})), seed, None, fast)
        for p in ('none', 'guarantee')}
    return measures.measure(runs['guarantee'], runs['none'])


def _measure(args: tuple[str, int, bool, float]) -> dict[str, float]:
    return measure(*args)


def run(names: list[str], seeds: list[int], urgent: bool,
        jobs: int = 1, watch_s: float = 0.0
        ) -> dict[str, list[dict[str, float]]]:
    """Each scenario's measures, one dict a seed (in ``jobs`` processes).

    ``watch_s``: as :func:`measure`'s.
    """
    for name in names:
        scenario_mod.load(name)     # a bad name fails before any run
    if urgent:
        loop.FastPath(SAMPLE_S, watch_s=watch_s)   # refused before any run
    work = [(n, s, urgent, watch_s) for n in names for s in seeds]
    if jobs > 1:
        with multiprocessing.Pool(jobs) as pool:
            figures = pool.map(_measure, work, chunksize=1)
    else:
        figures = [_measure(w) for w in work]
    return {n: figures[k * len(seeds):(k + 1) * len(seeds)]
            for k, n in enumerate(names)}


def summary(results: dict[str, list[dict[str, float]]]
            ) -> list[dict[str, Any]]:
    """Per scenario and measure: min/median/max over the seeds, and met.

    ``met``: every seed met the target.
    """
    rows: list[dict[str, Any]] = []
    for name, per_seed in results.items():
        for key in TARGETS:
            values = [m[key] for m in per_seed]
            rows.append({'scenario': name, 'measure': key,
                         'min': min(values),
                         'median': statistics.median(values),
                         'max': max(values), 'target': TARGETS[key][1],
                         'met': all(met(key, v) for v in values)})
    return rows


def table(rows: list[dict[str, Any]], seeds: int) -> str:
    """The rows as text, one a scenario and measure."""
    head = ('scenario', 'measure', 'min', 'median', 'max', 'target',
            'every seed')
    lines = ['%d seeds, 1 s windows' % seeds,
             '%-12s %-22s %9s %9s %9s %9s  %s' % head]
    for r in rows:
        lines.append('%-12s %-22s %9.5g %9.5g %9.5g %9.5g  %s' % (
            r['scenario'], r['measure'], r['min'], r['median'], r['max'],
            r['target'], 'met' if r['met'] else 'MISSED'))
    return '\n'.join(lines) + '\n'
