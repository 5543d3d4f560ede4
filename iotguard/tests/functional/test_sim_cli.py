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

"""``iotguard-sim compare paper-4vm`` end to end, as the README runs it."""

import json
import os
import subprocess
import sys
import tempfile

import testtools

from iotguard.sim import measures

POLICIES = ('none', 'ntt', 'guarantee')
VM_KEYS = {'name', 'role', 'demand_kbs', 'floor_kbs', 'avg_kbs', 'min_kbs',
           'max_kbs'}


class TestCompareCli(testtools.TestCase):

    def test_compare_paper_4vm(self):
        with tempfile.TemporaryDirectory() as tmp:
            out_json = os.path.join(tmp, 'paper-4vm.json')
            out_png = os.path.join(tmp, 'paper-4vm.png')
            proc = subprocess.run(
                [sys.executable, '-m', 'iotguard.cmd.sim', 'compare',
                 'paper-4vm', '--policies', ','.join(POLICIES),
                 '--json', out_json, '--plot', out_png],
                capture_output=True, text=True, timeout=300,
                env=dict(os.environ, MPLBACKEND='Agg'))
            self.assertEqual(0, proc.returncode, proc.stderr)
            self.assertNotIn('Traceback', proc.stderr)
            with open(out_png, 'rb') as f:
                self.assertEqual(b'\x89PNG\r\n\x1a\n', f.read(8))
            self.assertGreater(os.path.getsize(out_png), 10000)
            with open(out_json) as f:
                doc = json.load(f)
        self.assertIn('none avg', proc.stdout)
        self.assertEqual(('paper-4vm', 0), (doc['scenario'], doc['seed']))
        self.assertEqual(list(POLICIES), list(doc['policies']))
        for name in POLICIES:
            result = doc['policies'][name]
            self.assertEqual(set(measures.KEYS), set(result['measures']))
            self.assertEqual(['vm1', 'vm2', 'vm3', 'vm4'],
                             [vm['name'] for vm in result['vms']])
            for vm in result['vms']:
                self.assertEqual(VM_KEYS, set(vm))
        self.check_calibration(doc['policies']['none'])
        self.check_ntt_shape(doc['policies']['none'], doc['policies']['ntt'])

    def check_calibration(self, none):
        """``none`` has the shape of the paper's run without control."""
        heavy, vm2, vm3, vm4 = none['vms']
        # the light VMs collapse toward the paper's 85 KB/s...
        for light in (vm2, vm3, vm4):
            self.assertLess(light['min_kbs'], 120)
            self.assertLess(light['avg_kbs'], light['demand_kbs'])
        # ... while the heavy one takes about 90 % of the storage at the
        # end and averages about the paper's 1600 KB/s (max 2580)
        self.assertGreater(heavy['max_kbs'] / (heavy['max_kbs']
                                               + 3 * vm4['min_kbs']), 0.85)
        self.assertTrue(1300 < heavy['avg_kbs'] < 2200, heavy)
        self.assertTrue(2200 < heavy['max_kbs'] < 2900, heavy)
        self.assertEqual(1.0, none['measures']['work_conservation'])
        self.assertEqual(0, none['caps'])

    def check_ntt_shape(self, none, ntt):
        """``ntt`` has the shape of the paper's run with control."""
        heavy, vm2, vm3, vm4 = ntt['vms']
        self.assertGreater(ntt['caps'], 0)
        # VM3 and VM4 near their demand, VM2 far below its 800 (capped
        # when it leads: paper 420 KB/s, here about 600, and its minimum
        # far lower)
        self.assertGreater(vm3['avg_kbs'], 0.85 * vm3['demand_kbs'])
        self.assertGreater(vm4['avg_kbs'], 0.85 * vm4['demand_kbs'])
        self.assertLess(vm2['avg_kbs'], 0.8 * vm2['demand_kbs'])
        self.assertLess(vm2['min_kbs'], 0.6 * vm2['demand_kbs'])
        # the heavy VM well under its uncontrolled average, and the
        # aggregate below the uncontrolled one (ntt's own over-throttling:
        # caps at rate x b held for cap_time)
        self.assertLess(heavy['avg_kbs'], 0.8 * none['vms'][0]['avg_kbs'])
        self.assertLess(ntt['aggregate_kbs'], none['aggregate_kbs'])
        self.assertLess(ntt['measures']['work_conservation'], 1.0)
