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

"""The shipped alert rules, checked and unit-tested by Prometheus' promtool.

(controller.test_e2e has them fire in a real Prometheus scraping real
services.)
"""

import os
import shutil
import subprocess

from iotguard.tests import base
from iotguard.tests.fixtures import prometheus

ETC = os.path.dirname(prometheus.RULES)


class AlertRulesTest(base.TestCase):

    def promtool(self, *argv):
        if shutil.which('promtool') is None:
            self.fail('no promtool (Debian package prometheus, bindep.txt)')
        done = subprocess.run(['promtool', *argv], cwd=ETC,
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)
        return done.stdout

    def test_rules_are_valid(self):
        self.assertIn('SUCCESS: 7 rules found',
                      self.promtool('check', 'rules',
                                    'iotguard-alerts.yaml'))

    def test_rules_fire_as_their_tests_expect(self):
        self.assertIn('SUCCESS', self.promtool(
            'test', 'rules', 'iotguard-alerts-test.yaml'))
