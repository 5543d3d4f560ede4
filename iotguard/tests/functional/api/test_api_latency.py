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

"""Tiers' latency objectives and disks' measured p99 through /v1."""

import datetime

from iotguard.tests import dbrows
from iotguard.tests.functional.api import base

ADMIN, MEMBER_A, READER_A = base.ADMIN, base.MEMBER_A, base.READER_A
A1 = 'aaaaaaaa-0000-4000-8000-000000000031'
A2 = 'aaaaaaaa-0000-4000-8000-000000000032'

GOLD = {'name': 'gold', 'min_iops': 100, 'latency_p99_ms': 5}


class LatencyTests:

    def create(self, body=GOLD):
        response = self.call('POST', '/v1/tiers', who=ADMIN, body=body)
        self.assertEqual(201, response.status_code, response.text)
        return response.json['tier']

    def test_create_show_update(self):
        self.assertEqual(5.0, self.create()['latency_p99_ms'])
        shown = self.call('GET', '/v1/tiers/gold', who=READER_A)
        self.assertEqual(5.0, shown.json['tier']['latency_p99_ms'])
        response = self.call('PATCH', '/v1/tiers/gold', who=ADMIN,
                             body={'latency_p99_ms': 0.5})
        self.assertEqual(200, response.status_code, response.text)
        self.assertEqual(0.5, self.db.tier_get('gold').latency_p99_ms)
        # a tier made without one has none
        plain = self.create({'name': 'plain', 'min_iops': 10})
        self.assertEqual(0.0, plain['latency_p99_ms'])

    def test_bad_values_are_400_and_write_nothing(self):
        self.create()
        for value in (-1, 'fast', 1e9, None, True):
            body = {'latency_p99_ms': value}
            self.assertError(self.call('POST', '/v1/tiers', who=ADMIN,
                                       body=dict(body, name='bad')),
                             400, 'latency_p99_ms')
            self.assertError(self.call('PATCH', '/v1/tiers/gold',
                                       who=ADMIN, body=body),
                             400, 'latency_p99_ms')
        self.assertEqual(['gold'], [t.name for t in self.db.tier_list()])
        self.assertEqual(5.0, self.db.tier_get('gold').latency_p99_ms)

    def test_admission_refuses_an_objective_it_cannot_keep(self):
        # 10000 IOPS (4 KiB), 409.6e6 bytes/s: a 4 KiB operation costs
        # 0.11 ms, a 1000-IOPS floor 0.11 of the domain
        self.db.domain_create('local:cn1', 'local', iops_4k=10000.0,
                              bytes_sec=409.6e6)
        for uuid in (A1, A2):
            self.db.disk_upsert(uuid, 'vda', 'cn1', 'local:cn1', 'proj-a')
        self.create({'name': 'fast', 'min_iops': 1000,
                     'latency_p99_ms': 1.0})
        response = self.call('PUT', '/v1/instances/%s/tier' % A1,
                             who=ADMIN, body={'tier': 'fast'})
        self.assertEqual(200, response.status_code, response.text)
        numbers = response.json['instance']['admission'][0]
        # ln(100) x 0.11 ms / (1 - 0.11)
        self.assertAlmostEqual(0.5692, numbers['predicted_p99_ms'], 4)
        # what the controller's round reads: the objective with the tier
        member, _ = self.db.domain_disks('local:cn1')
        self.assertEqual(1.0, member.tier.latency_p99_ms)
        # the guarantee policy learned a service time 3 x the cost: a
        # second disk (0.22 committed) would see 1.948 ms
        self.db.domain_policy_states_update({'local:cn1': {
            'policy': 'guarantee', 'state': {'service': 3.0}}})
        error = self.assertError(self.call(
            'PUT', '/v1/instances/%s/tier' % A2, who=ADMIN,
            body={'tier': 'fast'}), 409, 'predicted p99')
        self.assertAlmostEqual(1.948, error['numbers']['predicted_p99_ms'],
                               3)
        self.assertEqual(1.0, error['numbers']['latency_objective_ms'])
        # a member reads the predicted p99, not the domain's load
        error = self.assertError(self.call(
            'PUT', '/v1/instances/%s/tier' % A2, who=MEMBER_A,
            body={'tier': 'fast'}), 409, '1.948 ms')
        self.assertNotIn('numbers', error)
        self.assertEqual([None], [d['tier'] for d in self.db.disk_list(
            instance_uuid=A2)])

    def test_a_disk_shows_its_measured_p99_beside_the_mean(self):
        self.db.domain_create('local:cn1', 'local', iops_4k=10000.0,
                              bytes_sec=409.6e6)
        for dev in ('vda', 'vdb'):
            self.db.disk_upsert(A1, dev, 'cn1', 'local:cn1', 'proj-a')
        self.create()
        response = self.call('PUT', '/v1/instances/%s/tier' % A1,
                             who=ADMIN, body={'tier': 'gold'})
        self.assertEqual(200, response.status_code, response.text)
        sampled_at = datetime.datetime(2026, 11, 22, 3, 40, 5)
        # vda's agent measures a p99 over gold's 5 ms; vdb's none
        dbrows.disk_update_rates(self.db, A1, 'vda', sampled_at,
                                 read_iops=100.0, latency_ms=2.5,
                                 latency_p99_ms=7.75)
        dbrows.disk_update_rates(self.db, A1, 'vdb', sampled_at,
                                 read_iops=100.0, latency_ms=2.5)
        for who in (ADMIN, READER_A):
            vda, vdb = self.call('GET', '/v1/instances/' + A1,
                                 who=who).json['instance']['disks']
            self.assertEqual(
                [('vda', 2.5, 7.75), ('vdb', 2.5, None)],
                [(d['dev'], d['rates']['latency_ms'],
                  d['rates']['latency_p99_ms']) for d in (vda, vdb)])
        # the tier's objective is as it was
        self.assertEqual(5.0, self.call(
            'GET', '/v1/tiers/gold',
            who=READER_A).json['tier']['latency_p99_ms'])
        disks = self.call('GET', '/v1/domains/local:cn1',
                          who=ADMIN).json['domain']['disks']
        self.assertEqual({'vda': 7.75, 'vdb': None},
                         {d['dev']: d['rates']['latency_p99_ms']
                          for d in disks})


class LatencyTestsSqlite(LatencyTests, base.APITestCase):
    backend = 'sqlite'


class LatencyTestsPostgresql(LatencyTests, base.APITestCase):
    backend = 'postgresql'


class LatencyTestsMysql(LatencyTests, base.APITestCase):
    backend = 'mysql'
