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

"""Tiers that burst through /v1, over a real database."""

import numpy as np

from iotguard.policy import guarantee
from iotguard.tests.functional.api import base

A1 = 'aaaaaaaa-0000-4000-8000-000000000021'
ADMIN, MEMBER_A, READER_A = base.ADMIN, base.MEMBER_A, base.READER_A

#: 4 x a 100-IOPS floor, above a 200-IOPS ceiling, for up to 10 minutes
BURSTY = {'name': 'bursty', 'min_iops': 100, 'max_iops': 200,
          'burst_factor': 4, 'burst_seconds': 600}


class BurstTests:

    def setUp(self):
        super().setUp()
        self.db.domain_create('local:cn1', 'local', iops_4k=10000.0,
                              bytes_sec=409.6e6)
        self.db.disk_upsert(A1, 'vda', 'cn1', 'local:cn1', 'proj-a')

    def create(self, body=BURSTY):
        response = self.call('POST', '/v1/tiers', who=ADMIN, body=body)
        self.assertEqual(201, response.status_code, response.text)
        return response.json['tier']

    def test_create_show_update(self):
        tier = self.create()
        self.assertEqual((4.0, 600.0), (tier['burst_factor'],
                                        tier['burst_seconds']))
        shown = self.call('GET', '/v1/tiers/bursty', who=READER_A)
        self.assertEqual(600.0, shown.json['tier']['burst_seconds'])
        response = self.call('PATCH', '/v1/tiers/bursty', who=ADMIN,
                             body={'burst_factor': 0, 'burst_seconds': 0})
        self.assertEqual(200, response.status_code, response.text)
        tier = self.db.tier_get('bursty')
        self.assertEqual((0.0, 0.0), (tier.burst_factor, tier.burst_seconds))
        # a tier made without them has none
        plain = self.create({'name': 'plain', 'min_iops': 10})
        self.assertEqual((0.0, 0.0), (plain['burst_factor'],
                                      plain['burst_seconds']))

    def test_bad_values_are_400_and_write_nothing(self):
        self.create()
        for body, part in (
                ({'burst_factor': -1}, 'burst_factor'),
                ({'burst_factor': 'fast'}, 'burst_factor'),
                ({'burst_seconds': 1e9}, 'burst_seconds'),
                ({'burst_factor': 1, 'burst_seconds': 60},
                 'burst_factor above 1'),
                ({'burst_factor': 0.5}, 'burst_factor above 1'),
                ({'burst_factor': 0, 'burst_seconds': 60},
                 'burst_seconds without burst_factor')):
            self.assertError(self.call('POST', '/v1/tiers', who=ADMIN,
                                       body=dict(body, name='bad')),
                             400, part)
            self.assertError(self.call('PATCH', '/v1/tiers/bursty',
                                       who=ADMIN, body=body), 400, part)
        # the tier's factor without its seconds
        self.assertError(self.call('PATCH', '/v1/tiers/bursty', who=ADMIN,
                                   body={'burst_seconds': 0}), 400,
                         'burst_seconds above 0')
        self.assertEqual(['bursty'], [t.name for t in self.db.tier_list()])
        tier = self.db.tier_get('bursty')
        self.assertEqual((4.0, 600.0), (tier.burst_factor,
                                        tier.burst_seconds))

    def test_the_disk_shows_its_credits(self):
        self.create()
        self.db.instance_tier_set(A1, 'bursty', lambda *a: {})
        disk, = self.call('GET', '/v1/instances/%s' % A1,
                          who=READER_A).json['instance']['disks']
        # none earned yet: a new disk starts without credits
        self.assertEqual({'credits_s': 0.0, 'used_s': 0.0}, disk['burst'])
        # what the controller's policy remembers of the domain
        memory = guarantee.Memory(
            disk_ids=('%s/vda' % A1, 'other/vdb'), asked=np.zeros(2),
            wanted=np.zeros(2), credits=np.array([42.5, 7.0]),
            used=np.array([12.0, 0.0]), at=1.0)
        self.db.domain_policy_states_update({'local:cn1': memory.to_dict()})
        disk, = self.call('GET', '/v1/instances/%s' % A1,
                          who=READER_A).json['instance']['disks']
        self.assertEqual({'credits_s': 42.5, 'used_s': 12.0}, disk['burst'])
        domain = self.call('GET', '/v1/domains/local:cn1', who=ADMIN)
        self.assertEqual([{'credits_s': 42.5, 'used_s': 12.0}],
                         [d['burst'] for d in domain.json['domain']['disks']])
        # a tier without a burst shows none
        self.create({'name': 'plain', 'min_iops': 10})
        self.db.instance_tier_set(A1, 'plain', lambda *a: {})
        disk, = self.call('GET', '/v1/instances/%s' % A1,
                          who=READER_A).json['instance']['disks']
        self.assertIsNone(disk['burst'])


class BurstTestsSqlite(BurstTests, base.APITestCase):
    backend = 'sqlite'


class BurstTestsPostgresql(BurstTests, base.APITestCase):
    backend = 'postgresql'


class BurstTestsMysql(BurstTests, base.APITestCase):
    backend = 'mysql'
