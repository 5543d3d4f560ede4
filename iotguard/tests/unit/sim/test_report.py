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

import json
import os
import tempfile

from iotguard.policy import none
from iotguard.sim import loop
from iotguard.sim import measures
from iotguard.sim import report
from iotguard.tests import base
from iotguard.tests.unit.sim import helpers

VM_KEYS = {'name', 'role', 'demand_kbs', 'floor_kbs', 'avg_kbs', 'min_kbs',
           'max_kbs'}


class TestReport(base.TestCase):

    def setUp(self):
        super().setUp()
        self.run = loop.run(helpers.make(), none.NoPolicy())

    def test_result_shape(self):
        result = report.result(self.run, self.run)
        self.assertEqual(2, len(result['vms']))
        for vm in result['vms']:
            self.assertEqual(VM_KEYS, set(vm))
        self.assertEqual(set(measures.KEYS), set(result['measures']))
        self.assertEqual(1.0, result['measures']['work_conservation'])
        heavy, light = result['vms']
        self.assertEqual(('heavy', None, 600.0),
                         (heavy['role'], heavy['demand_kbs'],
                          heavy['floor_kbs']))
        self.assertEqual(300.0, light['demand_kbs'])
        self.assertLessEqual(light['min_kbs'], light['avg_kbs'])
        self.assertLessEqual(light['avg_kbs'], light['max_kbs'])
        doc = report.document('unit', 0, {'none': result})
        self.assertEqual(doc, json.loads(json.dumps(doc)))

    def test_table(self):
        results = {'none': report.result(self.run, self.run),
                   'again': report.result(self.run, self.run)}
        text = report.table('unit', results)
        self.assertIn('none avg', text)
        self.assertIn('again max', text)
        for key in measures.KEYS:
            self.assertIn(key, text)
        self.assertIn('heavy', text)

    def test_plot_writes_a_png(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'fig.png')
            report.plot({'none': self.run, 'other': self.run}, path)
            with open(path, 'rb') as f:
                self.assertEqual(b'\x89PNG\r\n\x1a\n', f.read(8))
