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
