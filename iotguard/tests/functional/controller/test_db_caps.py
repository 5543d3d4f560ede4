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

"""The DB calls the controller adds to db.api, on every backend."""

import dataclasses
import datetime

from iotguard.api.handlers import disk as disk_handlers
from iotguard.controller import effects
from iotguard.db import caps as db_caps
from iotguard.tests import dbrows
from iotguard.tests.functional.db import backends

UUID_A = '11111111-1111-4111-8111-111111111111'
UUID_B = '22222222-2222-4222-8222-222222222222'
T0 = datetime.datetime(2026, 11, 22, 3, 0, 0, 123456)


class ControllerDbTests:

    def _cap_a(self, domain):
        """A 10 IOPS cap on UUID_A's vda decided at T0: (decision, lease)."""
        decision = dbrows.decision_create(
            self.db, domain, 'guarantee', UUID_A, 'vda', 'p', 'cap', {},
            {'total_iops_sec': 10}, 'why', {}, created_at=T0)
        lease = T0 + datetime.timedelta(seconds=15)
        dbrows.cap_set(self.db, UUID_A, 'vda', {'total_iops_sec': 10}, lease,
                       decision)
        return decision, lease

    def test_caps_renew(self):
        self.db.domain_create('local:cn1', 'local', iops_4k=1e4,
                              bytes_sec=5e8)
        self.db.disk_upsert(UUID_A, 'vda', 'cn1', 'local:cn1', 'p')
        self.db.disk_upsert(UUID_B, 'vda', 'cn1', 'local:cn1', 'p')
        a, b = self.db.disk_list()
        decision, lease = self._cap_a('local:cn1')
        later = lease + datetime.timedelta(seconds=5)
        self.assertEqual(0, self.db.caps_renew([], later))
        # b has no cap: only a's is renewed
        self.assertEqual(1, self.db.caps_renew([a['id'], b['id']], later))
        caps = {d['instance_uuid']: d['cap'] for d in self.db.disk_list()}
        self.assertEqual(later, caps[UUID_A]['lease_expires_at'])
        self.assertIsNone(caps[UUID_B])

    def test_disk_index(self):
        self.assertEqual({}, self.db.disk_index())
        self.db.domain_create('local:cn1', 'local')
        self.db.domain_create('pool', 'cinder')
        self.db.disk_upsert(UUID_A, 'vda', 'cn1', 'local:cn1', 'p')
        self.db.disk_upsert(UUID_A, 'vdb', 'cn1', 'pool', 'p',
                            volume_id=UUID_B)
        self.assertEqual({(UUID_A, 'vda'): ('local:cn1', 'cn1'),
                          (UUID_A, 'vdb'): ('pool', 'cn1')},
                         self.db.disk_index())
        # every controller holds it whole: the disks of one domain and
        # host share their (domain, host) and their device names
        self.db.disk_upsert(UUID_B, 'vda', 'cn1', 'local:cn1', 'p')
        index = self.db.disk_index()
        self.assertIs(index[(UUID_A, 'vda')], index[(UUID_B, 'vda')])
        keys = sorted(index)
        self.assertIs(keys[0][1], keys[2][1])

    def test_disk_bulk_insert(self):
        from iotguard import exception
        self.db.domain_create('pool', 'cinder')
        rows = [{'instance_uuid': UUID_A, 'dev': 'vda', 'host': 'cn1',
                 'domain': 'pool', 'project_id': 'p'},
                {'instance_uuid': UUID_B, 'dev': 'vdb', 'host': 'cn2',
                 'domain': 'pool', 'project_id': 'q', 'volume_id': UUID_A}]
        self.assertEqual(0, self.db.disk_bulk_insert([]))
        self.assertEqual(2, self.db.disk_bulk_insert(rows))
        disks = self.db.disk_list(domain='pool')
        self.assertEqual([('cn1', None), ('cn2', UUID_A)],
                         [(d['host'], d['volume_id']) for d in disks])
        self.assertRaises(exception.Conflict, self.db.disk_bulk_insert,
                          rows[:1])
        self.assertRaises(exception.NotFound, self.db.disk_bulk_insert,
                          [dict(rows[0], domain='nope', dev='vdz')])
        self.assertEqual(2, len(self.db.disk_list()))

    def test_domain_disks(self):
        from iotguard import exception
        self.db.tier_create({'name': 'gold', 'description': '',
                             'min_iops': 10.0, 'min_bytes_sec': 0.0,
                             'max_iops': 0.0, 'max_bytes_sec': 0.0,
                             'weight': 2.0, 'is_public': True})
        self.db.domain_create('pool', 'cinder')
        self.db.domain_create('other', 'cinder')
        self.db.disk_upsert(UUID_A, 'vda', 'cn1', 'pool', 'p')
        self.db.disk_upsert(UUID_B, 'vda', 'cn2', 'pool', 'q',
                            volume_id=UUID_A)
        self.db.disk_upsert(UUID_B, 'vdb', 'cn2', 'other', 'q')
        self.db.disk_tier_set(UUID_A, 'vda', 'gold', 'flavor', 'p')
        decision, lease = self._cap_a('pool')
        got = self.db.domain_disks('pool')
        listed = self.db.disk_list(domain='pool')
        self.assertEqual([(d['instance_uuid'], d['dev']) for d in listed],
                         [(d.instance_uuid, d.dev) for d in got])
        for light, full in zip(got, listed):
            for key in ('id', 'host', 'project_id', 'volume_id', 'domain',
                        'tier', 'tier_source'):
                self.assertEqual(full[key], getattr(light, key), key)
        # the caps in force apart, their times UNIX seconds
        self.assertEqual({got[0].id: db_caps.InForce(
            {'total_iops_sec': 10}, effects.to_timestamp(lease), decision,
            effects.to_timestamp(T0))}, self.db.domains_caps(['pool']))
        self.assertEqual('gold', got[0].tier.name)
        self.assertRaises(dataclasses.FrozenInstanceError, setattr, got[0],
                          'host', 'cn9')
        self.assertRaises(exception.NotFound, self.db.domain_disks, 'nope')
        # a round's read of many domains: each domain as read alone
        both = self.db.domains_disks(['other', 'pool', 'pool'])
        self.assertEqual({'other': self.db.domain_disks('other'),
                          'pool': got}, both)
        self.assertEqual({}, self.db.domains_disks([]))
        self.assertRaises(exception.NotFound, self.db.domains_disks,
                          ['pool', 'nope'])

    def test_disks_version_and_caps_of_a_round(self):
        self.db.domain_create('pool', 'cinder')
        self.db.domain_create('other', 'cinder')
        seen = [self.db.disks_version()]

        def changed():
            seen.append(self.db.disks_version())
            return seen[-1] != seen[-2]
        self.db.disk_upsert(UUID_A, 'vda', 'cn1', 'pool', 'p')
        self.assertTrue(changed())
        self.db.disk_upsert(UUID_B, 'vda', 'cn1', 'other', 'p')
        self.assertTrue(changed())
        self.assertFalse(changed())
        self.db.disk_upsert(UUID_B, 'vda', 'cn2', 'pool', 'p')   # moved
        self.assertTrue(changed())
        self.db.tier_create({'name': 'gold', 'description': '',
                             'min_iops': 10.0, 'min_bytes_sec': 0.0,
                             'max_iops': 0.0, 'max_bytes_sec': 0.0,
                             'weight': 2.0, 'is_public': True})
        self.assertTrue(changed())
        self.db.disk_tier_set(UUID_A, 'vda', 'gold', 'flavor', 'p')
        self.assertTrue(changed())
        self.db.tier_choice_unset(UUID_A, 'flavor', 'vda')
        self.assertTrue(changed())
        # caps are not part of it: the round reads them every time
        decision, lease = self._cap_a('pool')
        self.assertFalse(changed())
        self.assertEqual([self.db.disk_list(UUID_A)[0]['id']],
                         list(self.db.domains_caps(['pool', 'other'])))
        self.assertEqual({}, self.db.domains_caps(['other']))
        self.db.disk_delete(UUID_B, 'vda')
        self.assertTrue(changed())

    def test_caps_renew_a_whole_round(self):
        # more disks than one statement takes (500): one transaction
        self.db.domain_create('pool', 'cinder')
        rows = [{'instance_uuid': '%08d-1111-4111-8111-111111111111' % i,
                 'dev': 'vda', 'host': 'cn1', 'domain': 'pool',
                 'project_id': 'p'} for i in range(1203)]
        self.db.disk_bulk_insert(rows)
        lease = T0 + datetime.timedelta(seconds=15)
        self.db.caps_set([dict(r, limits={'total_iops_sec': 5},
                               lease_expires_at=lease, decision_id=None)
                          for r in rows[:1100]])
        ids = [d.id for d in self.db.domain_disks('pool')]
        later = lease + datetime.timedelta(seconds=5)
        self.assertEqual(1100, self.db.caps_renew(ids + ids[:7], later))
        caps = self.db.domains_caps(['pool'])
        self.assertEqual(1100, len(caps))
        self.assertEqual({effects.to_timestamp(later)},
                         {c.lease_expires_at for c in caps.values()})

    def test_disk_rates_bulk_update(self):
        from iotguard import exception
        self.db.domain_create('pool', 'cinder')
        self.db.disk_upsert(UUID_A, 'vda', 'cn1', 'pool', 'p')
        self.db.disk_upsert(UUID_B, 'vda', 'cn1', 'pool', 'p')
        a, b = self.db.disk_list()
        self.assertEqual(0, self.db.disk_rates_bulk_update([]))
        self.assertEqual(2, self.db.disk_rates_bulk_update([
            {'id': a['id'], 'sampled_at': T0, 'read_iops': 1.5,
             'write_iops': 2.0, 'read_bytes_sec': 3.0,
             'write_bytes_sec': 4.0, 'latency_ms': 5.0},
            {'id': b['id'], 'sampled_at': T0, 'read_iops': 7.0}]))
        got = {d['instance_uuid']: d for d in self.db.disk_list()}
        self.assertEqual((1.5, 2.0, 3.0, 4.0, 5.0, T0), tuple(
            got[UUID_A][k] for k in ('read_iops', 'write_iops',
                                     'read_bytes_sec', 'write_bytes_sec',
                                     'latency_ms', 'sampled_at')))
        self.assertEqual((7.0, None), (got[UUID_B]['read_iops'],
                                       got[UUID_B]['write_iops']))
        self.assertRaises(exception.Invalid, self.db.disk_rates_bulk_update,
                          [{'id': a['id'], 'iops': 1.0}])

    def test_disk_rates_bulk_update_many(self):
        """Several statements (chunks) of a round; what the API reads."""
        from unittest import mock

        from iotguard.db import disks as db_disks
        self.db.domain_create('pool', 'cinder')
        uuids = ['%08d-1111-4111-8111-111111111111' % n for n in range(7)]
        self.db.disk_bulk_insert([
            {'instance_uuid': u, 'dev': 'vda', 'host': 'cn1',
             'domain': 'pool', 'project_id': 'p'} for u in uuids])
        ids = {d['instance_uuid']: d['id'] for d in self.db.disk_list()}
        self.db.disk_upsert(UUID_A, 'vda', 'cn1', 'pool', 'p')
        other = self.db.disk_list(instance_uuid=UUID_A)[0]
        t1 = T0 + datetime.timedelta(seconds=5, microseconds=1)
        rows = [{'id': ids[u], 'sampled_at': t1, 'read_iops': n + 0.125,
                 'write_iops': None, 'read_bytes_sec': 4096.0 * n,
                 'write_bytes_sec': 1e12 / 3, 'latency_ms': 0.1 * n}
                for n, u in enumerate(uuids)]
        unknown = max(ids.values()) + other['id'] + 1000
        # the first write, then over it (3 statements of at most 3 disks)
        self.db.disk_rates_bulk_update([dict(r, sampled_at=T0,
                                             write_iops=9.0) for r in rows])
        with mock.patch.object(db_disks, 'RATES_CHUNK', 3):
            self.assertEqual(8, self.db.disk_rates_bulk_update(
                rows + [{'id': unknown, 'sampled_at': t1,
                         'read_iops': 1.0}]))
        got = {d['instance_uuid']: d for d in self.db.disk_list()}
        for n, u in enumerate(uuids):
            self.assertEqual(
                (n + 0.125, None, 4096.0 * n, 1e12 / 3, 0.1 * n, t1),
                tuple(got[u][k] for k in ('read_iops', 'write_iops',
                                          'read_bytes_sec',
                                          'write_bytes_sec', 'latency_ms',
                                          'sampled_at')))
        # a disk not in the batch is left alone
        self.assertEqual((None, None), (got[UUID_A]['read_iops'],
                                        got[UUID_A]['sampled_at']))
        # what GET /v1/disks shows of them
        self.assertEqual(
            {'read_iops': 1.125, 'write_iops': None, 'read_bytes_sec': 4096.0,
             'write_bytes_sec': 1e12 / 3, 'latency_ms': 0.1,
             'latency_p99_ms': None, 'sampled_at': t1},
            disk_handlers.view(got[uuids[1]])['rates'])
        self.assertIsNone(disk_handlers.view(got[UUID_A])['rates'])
        # a column NULL in a whole statement, and one disk alone
        self.assertEqual(1, self.db.disk_rates_bulk_update(
            [{'id': ids[uuids[0]], 'sampled_at': t1}]))
        disk = self.db.disk_list(instance_uuid=uuids[0])[0]
        self.assertEqual((None, None, t1), (
            disk['read_iops'], disk['latency_ms'], disk['sampled_at']))

    def test_batched_decisions_and_caps(self):
        from iotguard import exception
        self.db.domain_create('pool', 'cinder')
        self.db.disk_upsert(UUID_A, 'vda', 'cn1', 'pool', 'p')
        self.db.disk_upsert(UUID_B, 'vda', 'cn1', 'pool', 'p')
        self.assertEqual([], self.db.decisions_create([]))
        rows = [dict(domain='pool', policy='guarantee', instance_uuid=u,
                     dev='vda', project_id='p', action='cap',
                     old_limits={}, new_limits={'total_iops_sec': n},
                     reason='r%d' % n, numbers={'n': n}, created_at=T0)
                for n, u in ((1, UUID_A), (2, UUID_B))]
        ids = self.db.decisions_create(rows)
        self.assertEqual(2, len(ids))
        audit = {d['id']: d for d in self.db.decision_list(limit=10)}
        self.assertEqual(['r1', 'r2'], [audit[i]['reason'] for i in ids])
        lease = T0 + datetime.timedelta(seconds=15)
        dbrows.cap_set(self.db, UUID_A, 'vda', {'total_iops_sec': 9}, lease)
        self.assertEqual(2, self.db.caps_set([
            {'instance_uuid': u, 'dev': 'vda',
             'limits': {'total_iops_sec': n}, 'lease_expires_at': lease,
             'decision_id': i} for (n, u), i in zip(((1, UUID_A),
                                                     (2, UUID_B)), ids)]))
        caps = {d['instance_uuid']: d['cap'] for d in self.db.disk_list()}
        self.assertEqual(({'total_iops_sec': 1}, ids[0]),
                         (caps[UUID_A]['limits'], caps[UUID_A]['decision_id']))
        self.assertEqual({'total_iops_sec': 2}, caps[UUID_B]['limits'])
        self.assertRaises(exception.NotFound, self.db.caps_set, [
            {'instance_uuid': UUID_A, 'dev': 'vdz', 'limits': {},
             'lease_expires_at': lease, 'decision_id': None}])
        self.assertEqual(0, self.db.caps_set([]))
        self.assertEqual(1, self.db.caps_release([(UUID_A, 'vda')]))
        self.assertEqual(0, self.db.caps_release([(UUID_A, 'vda')]))
        self.assertEqual(0, self.db.caps_release([]))
        caps = {d['instance_uuid']: d['cap'] for d in self.db.disk_list()}
        self.assertIsNone(caps[UUID_A])
        self.assertIsNotNone(caps[UUID_B])


backends.on_every_backend(globals(), ControllerDbTests)
