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

"""The all-in-one main job, run as a newcomer runs it.

``iotguard-allinone`` runs in a subprocess (its module, with this
interpreter) on its embedded defaults: a SQLite file, the in-memory
``fake://`` transport, the simulated hypervisor running ``paper-4vm``,
here for 120 simulated seconds at 20x. While it runs, the test asks its
API over HTTP on localhost for the tiers, the heavy VM's instance view and
the audit trail; at the end it checks the output table, the JSON figures
(the same keys as ``iotguard-sim compare``) and the PNG plot.
"""

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
import urllib.request

import fixtures
import testtools

from iotguard.sim import measures
from iotguard.sim import world

HEADERS = {'X-User-Id': 'admin', 'X-Project-Id': 'admin',
           'X-Roles': 'admin'}
RESULT_KEYS = {'vms', 'measures', 'aggregate_kbs', 'queue_max',
               'response_ms_max', 'caps', 'window_s'}
TIMEOUT_S = 90


class AllInOneTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.json_path = os.path.join(self.tmp, 'out.json')
        self.plot_path = os.path.join(self.tmp, 'out.png')
        self.proc = subprocess.Popen(
            [sys.executable, '-m', 'iotguard.cmd.allinone',
             '--duration', '120', '--speed', '20', '--port', '0',
             '--db', os.path.join(self.tmp, 'iotguard.sqlite'),
             '--json', self.json_path, '--plot', self.plot_path],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            cwd=self.tmp)
        self.addCleanup(self._kill)
        self.lines = queue.Queue()
        self.output = []
        threading.Thread(target=self._read, daemon=True).start()

    def _kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def _read(self):
        for line in self.proc.stdout:
            self.output.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def url(self):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.lines.get(timeout=30)
            if line is None:
                self.fail('exited before the API: %s' % ''.join(self.output))
            found = re.search(r'API: (http://127\.0\.0\.1:\d+)/', line)
            if found:
                return found.group(1)
        self.fail('no API URL printed: %s' % ''.join(self.output))

    def get(self, base, path):
        request = urllib.request.Request(base + path, headers=HEADERS)
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def test_run_answers_caps_and_summary(self):
        base = self.url()
        tiers = self.get(base, '/v1/tiers')['tiers']
        self.assertEqual(['paper'], [t['name'] for t in tiers])
        self.assertEqual(614400.0, tiers[0]['min_bytes_sec'])

        heavy = world.instance_uuid('paper-4vm', 'vm1')
        cap = None
        deadline = time.monotonic() + TIMEOUT_S
        while cap is None and self.proc.poll() is None and \
                time.monotonic() < deadline:
            disk = self.get(base, '/v1/instances/' + heavy)[
                'instance']['disks'][0]
            cap = disk['cap']
            time.sleep(0.2)
        self.assertIsNotNone(cap, 'the heavy VM was never capped while '
                             'the all-in-one ran: %s' % ''.join(self.output))
        self.assertIn('total_bytes_sec', cap['limits'])
        self.assertIn('fair share', cap['reason'])
        self.assertEqual('paper-iscsi-raid6', disk['domain'])
        self.assertGreater(disk['rates']['write_bytes_sec'], 0)
        decisions = self.get(base, '/v1/decisions?instance=' + heavy)[
            'decisions']
        self.assertIn(cap['decision_id'], [d['id'] for d in decisions])
        self.assertEqual('cap', [d for d in decisions
                                 if d['id'] == cap['decision_id']][0][
                                     'action'])

        self.assertEqual(0, self.proc.wait(timeout=TIMEOUT_S),
                         ''.join(self.output))
        out = ''.join(self.output)
        # The live view (appended lines, stdout is not a terminal).
        self.assertIn('window 24/24', out)
        self.assertRegex(out, r'vm1\s+heavy\s+\d+\s+600\s+\d+\s+cap: ')
        # The summary table of iotguard-sim compare.
        self.assertIn('paper-4vm: throughput per VM', out)
        for key in measures.KEYS:
            self.assertIn(key, out)
        with open(self.json_path, encoding='utf-8') as f:
            document = json.load(f)
        self.assertEqual('paper-4vm', document['scenario'])
        self.assertEqual({'none', 'guarantee'}, set(document['policies']))
        # The reference run is the simulator's, which learns the capacity
        # beside it; the all-in-one's controller keeps its fit in its
        # database.
        for name, result in document['policies'].items():
            self.assertEqual(RESULT_KEYS | ({'estimator'} if name == 'none'
                                            else set()), set(result))
            self.assertEqual(set(measures.KEYS), set(result['measures']))
            self.assertEqual(['vm1', 'vm2', 'vm3', 'vm4'],
                             [vm['name'] for vm in result['vms']])
        self.assertGreaterEqual(document['policies']['guarantee']['caps'], 1)
        self.assertEqual(0, document['policies']['none']['caps'])
        # The services logged to the default file in the working directory.
        with open(os.path.join(self.tmp, 'iotguard-allinone.log')) as f:
            log = f.read()
        self.assertIn('iotguard-controller on allinone-controller started',
                      log)
        self.assertIn('iotguard-agent on host1 started', log)
        with open(self.plot_path, 'rb') as f:
            self.assertEqual(b'\x89PNG\r\n\x1a\n', f.read(8))
