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

"""Three controller processes deciding over tooz, one killed mid-run.

The harness of ``python -m benchmarks.partition`` at a small size:
real :class:`ControllerService` processes, tooz on the real Redis (a
group of this run's own), a database of this test's own (PostgreSQL when
reachable, else a SQLite file), casts to RabbitMQ. It checks what the
bench measures, not how fast: the domains split without overlap, a
SIGKILLed controller's domains are decided again by the survivors within
two decision intervals, and no cap in force at the kill lapses.
"""

import os

from benchmarks import partition as bench
from iotguard.tests import base
from iotguard.tests.fixtures import database
from iotguard.tests.fixtures import rabbit
from iotguard.tests.functional.controller import test_partition

INTERVAL_S = 2.5


class PartitionBenchTest(base.TestCase):

    def setUp(self):
        super().setUp()
        rabbit.run_id(self)
        reason = test_partition._redis_unreachable()
        if reason:
            self.skipTest(reason)
        backend = ('postgresql' if database.unavailable('postgresql') is None
                   else 'sqlite')
        # migrate=False: the harness migrates the database it is given
        self.db_url = self.useFixture(database.Database(
            backend, migrate=False)).url

    def test_kill_one_of_three(self):
        args = bench.parser().parse_args([
            '--controllers', '3', '--hosts', '30', '--disks-per-host', '10',
            '--domains', '12', '--interval', str(INTERVAL_S), '--rounds',
            '6', '--kill-after', '2', '--db-url', self.db_url,
            '--redis-url', test_partition.REDIS_URL, '--url', rabbit.URL])
        lines = []
        result = bench.run(args, out=lines.append)
        report = os.linesep.join(lines)

        # Before the kill, every interval: each domain has one owner.
        before = [r for r in result.rounds if r.ended <= result.killed_at]
        for k in range(2, args.kill_after + 1):
            owned = [name for r in before if r.round == k for name in r.owned]
            self.assertEqual(sorted(owned), sorted(set(owned)), report)
            self.assertEqual(args.domains, len(owned), report)
        self.assertTrue(result.victim_domains, report)
        self.assertIsNotNone(result.reowned_s, report)
        self.assertLessEqual(result.reowned_s, 2 * INTERVAL_S, report)
        # Caps were in force (round 1 caps the noisy disks) and none lapsed.
        self.assertGreater(result.leases.checked, 0, report)
        self.assertEqual([], result.leases.lapsed, report)
        self.assertEqual(result.leases.checked,
                         result.leases.renewed + result.leases.released,
                         report)
        # The survivors decide every disk after the kill.
        last = [r for r in result.rounds if r.round == args.rounds]
        self.assertEqual(args.hosts * args.disks_per_host,
                         sum(r.disks for r in last), report)
