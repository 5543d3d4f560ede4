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

"""Tiers per GiB through /v1, over a real database."""

from iotguard.tests.functional.api import base

A1 = 'aaaaaaaa-0000-4000-8000-000000000011'
A2 = 'aaaaaaaa-0000-4000-8000-000000000012'
ADMIN, MEMBER_A, READER_A = base.ADMIN, base.MEMBER_A, base.READER_A

#: gp2-like: 20 IOPS per GiB, at least 100, at most 8000.
PER_GIB = {'name': 'per-gib', 'min_iops': 100, 'min_iops_per_gb': 20,
           'max_iops': 8000, 'max_iops_per_gb': 40}


class PerGiBTests:

    def setUp(self):
        super().setUp()
        # 10000 IOPS (4 KiB), 4 KiB x 100000 bytes/s: an IOPS floor costs
        # 1.1e-4 of it per operation.
        self.db.domain_create('local:cn1', 'local', iops_4k=10000.0,
                              bytes_sec=409.6e6)
        for uuid, size in ((A1, 10), (A2, 500)):
            self.db.disk_upsert(uuid, 'vda', 'cn1', 'local:cn1', 'proj-a',
                                size_gib=size)

    def create(self, body=PER_GIB):
        response = self.call('POST', '/v1/tiers', who=ADMIN, body=body)
        self.assertEqual(201, response.status_code, response.text)
        return response.json['tier']

    def test_create_show_update(self):
        tier = self.create()
        self.assertEqual((100.0, 20.0, 8000.0, 40.0, 0.0, 0.0), (
            tier['min_iops'], tier['min_iops_per_gb'], tier['max_iops'],
            tier['max_iops_per_gb'], tier['min_bytes_sec_per_gb'],
            tier['max_bytes_sec_per_gb']))
        shown = self.call('GET', '/v1/tiers/per-gib', who=READER_A)
        self.assertEqual(20.0, shown.json['tier']['min_iops_per_gb'])
        response = self.call('PATCH', '/v1/tiers/per-gib', who=ADMIN,
                             body={'min_bytes_sec_per_gb': 1048576,
                                   'max_iops_per_gb': 0})
        self.assertEqual(200, response.status_code, response.text)
        tier = self.db.tier_get('per-gib')
        self.assertEqual((1048576.0, 0.0, 20.0), (
            tier.min_bytes_sec_per_gb, tier.max_iops_per_gb,
            tier.min_iops_per_gb))

    def test_bad_values_are_400_and_write_nothing(self):
        self.create()
        for body, part in (
                ({'min_iops_per_gb': -1}, 'min_iops_per_gb'),
                ({'max_bytes_sec_per_gb': 'fast'}, 'max_bytes_sec_per_gb'),
                ({'min_iops_per_gb': 1e16}, 'min_iops_per_gb'),
                ({'min_iops_per_gb': 50, 'max_iops_per_gb': 40},
                 'min_iops_per_gb is above max_iops_per_gb'),

                ({'min_bytes_sec_per_gb': 10, 'max_bytes_sec_per_gb': 5},
                 'above')):
            self.assertError(self.call('POST', '/v1/tiers', who=ADMIN,
                                       body=dict(body, name='bad')),
                             400, part)
            self.assertError(self.call('PATCH', '/v1/tiers/per-gib',
                                       who=ADMIN, body=body), 400, part)
        # Below the tier's floor per GiB (20).
        self.assertError(self.call('PATCH', '/v1/tiers/per-gib', who=ADMIN,
                                   body={'max_iops_per_gb': 10}), 400,
                         'above')
        self.assertEqual(['per-gib'], [t.name for t in self.db.tier_list()])
        self.assertEqual(20.0, self.db.tier_get('per-gib').min_iops_per_gb)

    def test_floors_priced_at_each_disk_size_by_admission(self):
        self.create()
        response = self.call('PUT', '/v1/instances/%s/tier' % A1,
                             who=ADMIN, body={'tier': 'per-gib'})
        self.assertEqual(200, response.status_code, response.text)
        numbers = response.json['instance']['admission'][0]
        # 10 GiB: max(100, 20 x 10) = 200 IOPS.
        self.assertAlmostEqual(200 * 1.1e-4, numbers['committed_after'])
        disk, = self.call('GET', '/v1/instances/%s' % A1,
                          who=READER_A).json['instance']['disks']
        self.assertEqual((10, None), (disk['size_gib'],
                                      disk['size_refused']))
        self.assertEqual({'min_iops': 200.0, 'min_bytes_sec': 0.0},
                         disk['floor'])
        self.assertEqual({'max_iops': 400.0, 'max_bytes_sec': 0.0},
                         disk['ceiling'])
        # 500 GiB: 10000 IOPS, at most 8000: 0.88 more, beyond 0.9.
        error = self.assertError(
            self.call('PUT', '/v1/instances/%s/tier' % A2, who=ADMIN,
                      body={'tier': 'per-gib'}), 409, 'per-gib')
        self.assertAlmostEqual(8200 * 1.1e-4,
                               error['numbers']['committed_after'])
        self.assertEqual([None], [d['tier'] for d in self.db.disk_list(
            instance_uuid=A2)])
        # A fixed tier of the same minimum fits there.
        self.create({'name': 'fixed', 'min_iops': 100, 'max_iops': 8000})
        self.assertEqual(200, self.call(
            'PUT', '/v1/instances/%s/tier' % A2, who=MEMBER_A,
            body={'tier': 'fixed'}).status_code)

    def test_a_refused_size_is_shown_with_the_disk(self):
        self.create()
        self.db.instance_tier_set(A1, 'per-gib', lambda *a: {})
        self.assertTrue(self.db.disk_size_refusal_set(
            A1, 'vda', 900, 'Tier per-gib does not fit'))
        self.assertFalse(self.db.disk_size_refusal_set(
            A1, 'vda', 900, 'Tier per-gib does not fit'))
        disk, = self.call('GET', '/v1/instances/%s' % A1,
                          who=READER_A).json['instance']['disks']
        self.assertEqual(10, disk['size_gib'])
        self.assertEqual((900, 'Tier per-gib does not fit'), (
            disk['size_refused']['size_gib'],
            disk['size_refused']['reason']))
        self.assertEqual(200.0, disk['floor']['min_iops'])


class PerGiBTestsSqlite(PerGiBTests, base.APITestCase):
    backend = 'sqlite'


class PerGiBTestsPostgresql(PerGiBTests, base.APITestCase):
    backend = 'postgresql'


class PerGiBTestsMysql(PerGiBTests, base.APITestCase):
    backend = 'mysql'
