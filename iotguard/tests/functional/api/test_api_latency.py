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

"""Tiers' latency objectives through /v1, over a real database."""

from iotguard.tests.functional.api import base

ADMIN, READER_A = base.ADMIN, base.READER_A

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


class LatencyTestsSqlite(LatencyTests, base.APITestCase):
    backend = 'sqlite'


class LatencyTestsPostgresql(LatencyTests, base.APITestCase):
    backend = 'postgresql'


class LatencyTestsMysql(LatencyTests, base.APITestCase):
    backend = 'mysql'
