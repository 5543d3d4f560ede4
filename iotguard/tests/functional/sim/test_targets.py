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

"""The targets of issue 2 for ``guarantee``, on the shipped paper scenarios.

Runs the real scenarios through the simulator's API with the parameters
``iotguard-sim compare`` uses (the scenario's ``policies`` section, seed
0) and checks every target, and that ``guarantee`` is strictly better
than ``ntt`` on every measure where ``ntt`` falls short of its target.
About 30 s of CPU.
"""

import operator

import testtools

from iotguard import policy as policy_mod
from iotguard.sim import loop
from iotguard.sim import measures
from iotguard.sim import scenario as scenario_mod

SEED = 0
#: measure -> (is it better when higher, the target)
TARGETS = {
    'floor_kept': (True, 0.99),
    'worst_window': (True, 0.8),
    'time_to_restore_s': (False, 10.0),
    'work_conservation': (True, 0.95),
    'innocent_throttle_rate': (False, 0.01),
    'cap_churn_per_min': (False, 2.0),
    'fairness': (True, 0.95),
}


def met(key: str, value: float) -> bool:
    higher, target = TARGETS[key]
    return (operator.ge if higher else operator.le)(value, target)


def better(key: str, ours: float, theirs: float) -> bool:
    higher, _ = TARGETS[key]
    return (operator.gt if higher else operator.lt)(ours, theirs)


def measure(name: str) -> dict[str, dict[str, float]]:
    scenario = scenario_mod.load(name)
    runs = {p: loop.run(scenario, policy_mod.load(
        p, **scenario.policies.get(p, {})), SEED)
        for p in ('none', 'ntt', 'guarantee')}
    return {p: measures.measure(run, runs['none'])
            for p, run in runs.items()}


class TestGuaranteeTargets(testtools.TestCase):

    def check(self, name: str) -> None:
        result = measure(name)
        ours, ntt = result['guarantee'], result['ntt']
        for key in TARGETS:
            self.assertTrue(met(key, ours[key]),
                            '%s: guarantee %s = %r misses %r'
                            % (name, key, ours[key], TARGETS[key][1]))
        short = [key for key in TARGETS if not met(key, ntt[key])]
        # the comparison must mean something: ntt misses some targets
        self.assertIn('floor_kept', short)
        for key in short:
            self.assertTrue(better(key, ours[key], ntt[key]),
                            '%s: %s guarantee %r not better than ntt %r'
                            % (name, key, ours[key], ntt[key]))
        # and the reference is the uncontrolled run
        self.assertEqual(1.0, result['none']['work_conservation'])

    def test_paper_4vm(self):
        self.check('paper-4vm')

    def test_paper_20vm(self):
        self.check('paper-20vm')

    def test_io_size_small_aggressor_charged_by_cost(self):
        # while the 4 KiB VM runs at its rate (0-80 s) it costs the array
        # little and nobody starves: guarantee never caps it then; ntt's
        # fixed IOPS border does
        scenario = scenario_mod.load('io-size')
        small = [vm.name for vm in scenario.vms].index('small4k')
        for name, expect in (('guarantee', False), ('ntt', True)):
            run = loop.run(scenario, policy_mod.load(
                name, **scenario.policies.get(name, {})), SEED)
            harmless = [a for a in run.actions
                        if a.disk == small and a.tightened and a.time <= 80]
            self.assertEqual(expect, bool(harmless), (name, harmless))


class TestThinkingClients(testtools.TestCase):
    """Issue 13 in the simulator (doc/source/admin/policies.rst)."""

    def compare(self, name: str) -> tuple[dict[str, loop.Run],
                                          dict[str, float],
                                          dict[str, float]]:
        """The runs of none and guarantee, and the measures of each."""
        scenario = scenario_mod.load(name)
        runs = {p: loop.run(scenario, policy_mod.load(
            p, **scenario.policies.get(p, {})), SEED)
            for p in ('none', 'guarantee')}
        return (runs, measures.measure(runs['none'], runs['none']),
                measures.measure(runs['guarantee'], runs['none']))

    def within(self, result: dict[str, float],
               **bounds: tuple[float, float]) -> None:
        """Each measure named in ``bounds`` in ``[low, high]``."""
        for key, (low, high) in bounds.items():
            self.assertTrue(low <= result[key] <= high,
                            '%s = %r not in [%r, %r]'
                            % (key, result[key], low, high))

    def test_think_time_meets_issue_13s_targets(self):
        runs, before, after = self.compare('think-time')
        # reproduced before the fix: the thinking clients fall behind
        self.within(before, quiet_worst=(0, 0.9))
        self.within(after, quiet_worst=(0.95, 1.1),
                    work_conservation=(0.9, 1.0),
                    cap_churn_per_min=(0, 0.2),
                    cap_changes_per_10min=(0, 2.0))
        # each quiet disk's mean latency under its threshold (6 x the
        # learned service time of its I/O size: the scenario's factor)
        run = runs['guarantee']
        scenario = run.scenario
        self.assertEqual(6, scenario.policies['guarantee'][
            'congestion_factor'])
        late = run.times >= 60
        for i, vm in enumerate(scenario.vms):
            if vm.role == 'heavy':
                continue
            cost = (1 / scenario.domain.iops_4k
                    + vm.jobs[0].bs / scenario.domain.bytes_sec)
            # the learned service ratio stays under 1.3 in this run
            threshold = 6 * 1.3 * cost * 1000
            self.assertLess(float(run.latency_ms[late, i].mean()),
                            threshold, vm.name)
            self.assertGreater(
                float(runs['none'].latency_ms[late, i].mean()), threshold,
                vm.name)

    def test_aggressors_hold_the_quiet_disks(self):
        _, before, after = self.compare('aggressors')
        self.within(before, quiet_worst=(0, 0.8), quiet_kept=(0, 0.6))
        # issue 13's targets, since the border follows the latency
        # objective and equal shares are capped a fraction apart (see the
        # policies page; 0.949 and 0.884 at a fixed border)
        self.within(after, quiet_kept=(0.95, 1.0), quiet_worst=(0.95, 1.1),
                    work_conservation=(0.9, 1.0),
                    cap_churn_per_min=(0, 0.2),
                    cap_changes_per_10min=(0, 2.0),
                    quiet_latency_ms=(0, 0.5 * before['quiet_latency_ms']))
