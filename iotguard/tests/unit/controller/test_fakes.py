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

"""FakeDB against the real database: what the controller reads must match.

The controller's unit tests run on :class:`fakes.FakeDB`; here the same
calls go to it and to a real :class:`iotguard.db.api.Connection` on a
SQLite file, and every answer the round reads is compared.
"""

import datetime

from iotguard.controller import effects
from iotguard.tests import base
from iotguard.tests.fixtures import database
from iotguard.tests.unit.controller import fakes

T0 = datetime.datetime(2026, 11, 27, 3, 0, 0, 123456)
UUIDS = ['%08d-1111-4111-8111-111111111111' % n for n in range(4)]
DOMAIN = {'iops_4k': 300.0, 'bytes_sec': 3.4e6}


class FakeDBContractTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.conf.set_override('default_tier', 'gold', group='tiers')
        self.real = self.useFixture(database.Database('sqlite',
                                                      self.conf)).db
        self.fake = fakes.FakeDB()
        gold = fakes.tier('gold', min_iops=50.0, max_iops=400.0)
        self.real.tier_create(gold)
        for name in ('pool', 'other'):
            self.fake.add_domain(name, kind='local', **DOMAIN)
            self.real.domain_create(name, 'local', **DOMAIN)
        # the real database gives every disk the default tier, gold
        for n, uuid in enumerate(UUIDS):
            where = ('pool' if n < 3 else 'other', 'cn%d' % (n % 2))
            self.fake.add_disk(where[0], where[1], gold, uuid, 'vda', 'p1')
            self.real.disk_upsert(uuid, 'vda', where[1], where[0], 'p1')

    def both(self, method, *args):
        """What the fake and the real database answer; equal."""
        fake = getattr(self.fake, method)(*args)
        real = getattr(self.real, method)(*args)
        self.assertEqual(real, fake, method)
        return real

    def test_domains(self):
        keys = ('id', 'name', 'kind', 'iops_4k', 'bytes_sec', 'policy',
                'params')
        self.assertEqual(
            [{k: d[k] for k in keys} for d in self.real.domain_list()],
            sorted(({k: d[k] for k in keys} for d in self.fake.domain_list()),
                   key=lambda d: d['name']))
        self.assertEqual({k: self.real.domain_get('pool')[k] for k in keys},
                         {k: self.fake.domain_get('pool')[k] for k in keys})

    def test_what_a_round_reads_and_writes(self):
        disks = self.both('domains_disks', ['pool', 'other'])
        self.assertEqual(['gold'] * 3, [d.tier.name for d in disks['pool']])
        self.assertEqual(disks['pool'], self.both('domain_disks', 'pool'))
        self.assertEqual({}, self.both('domains_caps', ['pool', 'other']))
        rows = [{'domain': 'pool', 'policy': 'guarantee',
                 'instance_uuid': u, 'dev': 'vda', 'project_id': 'p1',
                 'action': 'cap', 'old_limits': {},
                 'new_limits': {'total_iops_sec': 10 + n}, 'reason': 'why',
                 'numbers': {}, 'created_at': T0}
                for n, u in enumerate(UUIDS[:3])]
        ids = self.both('decisions_create', rows)
        lease = T0 + datetime.timedelta(seconds=15)
        self.both('caps_set', [
            {'instance_uuid': r['instance_uuid'], 'dev': 'vda',
             'limits': r['new_limits'], 'lease_expires_at': lease,
             'decision_id': i} for r, i in zip(rows, ids)])
        caps = self.both('domains_caps', ['pool', 'other'])
        self.assertEqual(3, len(caps))
        self.assertEqual({}, self.both('domains_caps', ['other']))
        later = lease + datetime.timedelta(seconds=10)
        first, second = disks['pool'][0].id, disks['pool'][1].id
        self.assertEqual(2, self.both('caps_renew', [
            first, second, disks['other'][0].id], later))
        self.assertEqual(1, self.both('cap_delete_expired',
                                      lease + datetime.timedelta(seconds=1)))
        self.assertEqual(1, self.both('caps_release',
                                      [(UUIDS[1], 'vda')]))
        caps = self.both('domains_caps', ['pool'])
        self.assertEqual([first], list(caps))
        self.assertEqual(effects.to_timestamp(later),
                         caps[first].lease_expires_at)

    def test_disks_version_changes_with_the_disks(self):
        before = (self.fake.disks_version(), self.real.disks_version())
        self.fake.disk_upsert(UUIDS[0], 'vda', 'cn7', 'other', 'p1')
        self.real.disk_upsert(UUIDS[0], 'vda', 'cn7', 'other', 'p1')
        after = (self.fake.disks_version(), self.real.disks_version())
        self.assertNotEqual(before[0], after[0])
        self.assertNotEqual(before[1], after[1])
        self.both('domains_disks', ['pool', 'other'])
        self.both('disk_delete', UUIDS[3], 'vda')
        self.both('domains_disks', ['pool', 'other'])
