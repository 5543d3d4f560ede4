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

"""Each benchmark of ``benchmarks/`` run as the docs run it, small.

``python -m benchmarks.NAME`` from the checkout, on the real RabbitMQ,
Redis and a SQLite file of its own: the command ends well and prints its
summary with figures. How fast is the benchmarks' own business (the pages
that quote them); this keeps them runnable. The partition harness has its
own test (``controller/test_partition_bench.py``).
"""

import os
import re
import subprocess
import sys

import iotguard
from iotguard.tests import base
from iotguard.tests.fixtures import rabbit

CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(
    iotguard.__file__)))
REDIS = os.environ.get('IOTGUARD_TEST_REDIS_URL', 'redis://127.0.0.1:6379')
NUMBER = r'\s+(\d+(\.\d+)?)'


class BenchmarksTest(base.TestCase):

    def setUp(self):
        super().setUp()
        if not os.path.isdir(os.path.join(CHECKOUT, 'benchmarks')):
            self.skipTest('not a checkout: no benchmarks/ beside iotguard')

    def bench(self, name, *args, summary):
        """Run benchmark ``name``; the ``summary`` regex's figure, > 0."""
        proc = subprocess.run(
            [sys.executable, '-m', 'benchmarks.' + name] + list(args),
            cwd=CHECKOUT, capture_output=True, text=True, timeout=300)
        self.assertEqual(0, proc.returncode, proc.stderr[-3000:])
        found = re.search(summary, proc.stdout, re.MULTILINE)
        self.assertIsNotNone(found, proc.stdout)
        self.assertGreater(float(found.group(1)), 0, proc.stdout)

    def test_agent(self):
        self.bench('agent', '--disks', '20', '--passes', '2',
                   summary=r'^\s+20' + NUMBER)

    def test_broker(self):
        rabbit.run_id(self)
        self.bench('broker', '--messages', '20', '--disks-per-host', '5',
                   '--runs', '1', '--url', rabbit.URL,
                   summary=r'^oslo-controller' + NUMBER)

    def test_controller(self):
        rabbit.run_id(self)
        self.bench('controller', '--hosts', '10', '--disks-per-host', '5',
                   '--domains', '2', '--rounds', '2', '--url', rabbit.URL,
                   summary=r'^steady ingest:' + NUMBER)

    def test_routing(self):
        rabbit.run_id(self)
        self.bench('routing', '--controllers', '2', '--hosts', '10',
                   '--disks-per-host', '5', '--domains', '2', '--rounds',
                   '2', '--redis-url', REDIS, '--url', rabbit.URL,
                   summary=r'^summary .* wall' + NUMBER)

    def test_rates(self):
        self.bench('rates', '--disks', '200', '--runs', '1',
                   summary=r'^bulk\s+wall min/median/max' + NUMBER)

    def test_index(self):
        self.bench('index', '--disks', '500', '--runs', '1',
                   summary=r'^bytes per disk min/median/max' + NUMBER)
