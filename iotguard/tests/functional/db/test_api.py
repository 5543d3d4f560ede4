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

"""iotguard.db.api against real databases, one fresh database per test."""

import datetime
import functools
import threading
import time

from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslo_db import exception as db_exc
from oslo_limit import fixture as limit_fixture
import sqlalchemy as sa

from iotguard.api import limits
from iotguard.db import api as db_api
from iotguard import exception
from iotguard.policy import admission
from iotguard.tests import base
from iotguard.tests import dbrows
from iotguard.tests.fixtures import database
from iotguard.tests.functional.db import backends

UUID_A = '11111111-1111-4111-8111-111111111111'
UUID_B = '22222222-2222-4222-8222-222222222222'
T0 = datetime.datetime(2026, 11, 22, 3, 0, 0, 123456)


class DbApiTests:

    def _domain_with_disks(self):
        self.db.domain_create('local:cn1', 'local', iops_4k=10000.0,
                              bytes_sec=500e6)
        self.db.disk_upsert(UUID_A, 'vda', 'cn1', 'local:cn1', 'proj-a')
        self.db.disk_upsert(UUID_A, 'vdb', 'cn1', 'local:cn1', 'proj-a',
                            volume_id=UUID_B)
        self.db.disk_upsert(UUID_B, 'vda', 'cn1', 'local:cn1', 'proj-b')

    def test_policy_states_written_at_once_and_read_back_exactly(self):
        for name in ('p1', 'p2', 'p3'):
            self.db.domain_create(name, 'ceph')
        self.assertIsNone(self.db.domain_policy_state('p1'))
        # a domain of 3,000 disks: more than MySQL's TEXT holds
        big = {'policy': 'guarantee', 'state': {
            'service': 0.1 + 0.2, 'border': None,
            'disk_ids': ['%036d/vda' % i for i in range(3000)],
            'asked': [1.0 / (i + 3) if i % 7 else None
                      for i in range(3000)],
            'wanted': [i % 3 - 1 for i in range(3000)]}}
        statements = []
        sa.event.listen(self.engine, 'before_cursor_execute',
                        lambda *args: statements.append(args[2]))
        self.db.domain_policy_states_update({
            'p1': big, 'p2': {'policy': 'none', 'state': None},
            'gone': big})
        self.assertEqual(1, len([s for s in statements
                                 if s.lstrip().upper().startswith('UPDATE')]))
        self.assertEqual(big, self.db.domain_policy_state('p1'))
        self.assertEqual({'policy': 'none', 'state': None},
                         self.db.domain_policy_state('p2'))
        self.assertIsNone(self.db.domain_policy_state('p3'))
        self.assertRaises(exception.NotFound, self.db.domain_policy_state,
                          'gone')
        # listing the domains leaves the states alone (deferred)
        statements.clear()
        self.assertEqual(3, len(self.db.domain_list()))
        self.assertNotIn('policy_state', ' '.join(statements))

    def test_disk_record_by_the_minute(self):
        self._domain_with_disks()
        t0 = datetime.datetime(2026, 11, 28, 6, 0)
        minute = datetime.timedelta(minutes=1)
        for k in range(3):
            dbrows.minute_add(self.db, UUID_A, 'vda', t0 + k * minute,
                              floor_kept_s=50.0 + k, iops=100.0 * (k + 1),
                              floor_iops=100.0, floor_bytes_sec=4e6,
                              cap_iops=None if k else 900.0,
                              cap_bytes_sec=None if k else 3.5e7)
        got = self.db.disk_minutes(UUID_A, 'vda', t0 + minute, t0 + 3 * minute)
        self.assertEqual([(t0 + minute, 51.0, 200.0, 100.0, 4e6, None, None),
                          (t0 + 2 * minute, 52.0, 300.0, 100.0, 4e6, None,
                           None)],
                         [(m.minute, m.floor_kept_s, m.iops, m.floor_iops,
                           m.floor_bytes_sec, m.cap_iops, m.cap_bytes_sec)
                          for m in got])
        # a second controller's share of a minute (a takeover) adds up,
        # its floor the later, the tighter cap of each kind kept
        dbrows.minute_add(self.db, UUID_A, 'vda', t0, seconds=20.0,
                          floor_due_s=20.0, floor_kept_s=20.0, capped_s=10.0,
                          iops=500.0, cap_reason='capped at 400 IOPS',
                          floor_iops=150.0, cap_iops=400.0)
        first = self.db.disk_minutes(UUID_A, 'vda', t0, t0 + minute)[0]
        self.assertEqual((80.0, 80.0, 70.0, 10.0, 200.0,
                          'capped at 400 IOPS', 150.0, None, 400.0, 3.5e7),
                         (first.seconds, first.floor_due_s,
                          first.floor_kept_s, first.capped_s, first.iops,
                          first.cap_reason, first.floor_iops,
                          first.floor_bytes_sec, first.cap_iops,
                          first.cap_bytes_sec))
        # another project's disk is not found, nor an unknown one
        self.assertRaises(exception.NotFound, self.db.disk_minutes, UUID_A,
                          'vda', t0, t0 + minute, project_id='proj-b')
        self.assertRaises(exception.NotFound, self.db.disk_minutes, UUID_A,
                          'vdz', t0, t0 + minute)
        self.assertEqual(1, len(self.db.disk_minutes(
            UUID_A, 'vda', t0, t0 + minute, project_id='proj-a')))
        # past the retention: purged; the disk gone: its record too
        self.assertEqual(2, self.db.disk_minutes_purge(t0 + 2 * minute))
        self.assertEqual([t0 + 2 * minute], [m.minute for m in self.db.
                                             disk_minutes(UUID_A, 'vda', t0,
                                                          t0 + 9 * minute)])
        self.db.disk_delete(UUID_A, 'vda')
        self.assertEqual(0, self.db.disk_minutes_purge(t0 + 9 * minute))

    def test_a_minute_stored_by_another_controller_meanwhile(self):
        # The handover's race: this controller read no row for the minute,
        # the one handing over inserted it, this one's insert is refused
        # as a duplicate (forced here): its share is added in a second pass
        self._domain_with_disks()
        t0 = datetime.datetime(2026, 11, 28, 6, 0)
        ours = dbrows.minute(self.db, UUID_A, 'vda', t0, seconds=20.0,
                             floor_kept_s=20.0)
        real = self.db._minutes_add
        calls = []

        def racing(minutes):
            calls.append(minutes)
            if len(calls) == 1:
                real([dbrows.minute(self.db, UUID_A, 'vda', t0,
                                    seconds=40.0, floor_kept_s=30.0)])
                raise db_exc.DBDuplicateEntry(['disk_id', 'minute'])
            return real(minutes)
        self.db._minutes_add = racing
        self.db.disk_minutes_add([ours])
        got, = self.db.disk_minutes(UUID_A, 'vda', t0, t0 + datetime.
                                    timedelta(minutes=1))
        self.assertEqual((2, 60.0, 50.0),
                         (len(calls), got.seconds, got.floor_kept_s))

    def test_tier_crud(self):
        made = self.db.tier_create(database.tier_values(
            'gold', min_iops=500.0, max_bytes_sec=1e9))
        self.assertEqual('gold', made.name)
        got = self.db.tier_get('gold')
        self.assertEqual(500.0, got.min_iops)
        self.assertEqual(1e9, got.max_bytes_sec)
        self.assertIsNotNone(got.created_at)
        updated = self.db.tier_update('gold', {'weight': 3.0})
        self.assertEqual(3.0, updated.weight)
        self.assertIsNotNone(updated.updated_at)
        self.db.tier_delete('gold')
        self.assertRaises(exception.NotFound, self.db.tier_get, 'gold')
        self.assertRaises(exception.NotFound, self.db.tier_delete, 'gold')
        self.assertRaises(exception.NotFound, self.db.tier_update, 'gold',
                          {'weight': 1.0})

    def test_duplicate_tier_is_conflict(self):
        self.db.tier_create(database.tier_values('gold'))
        self.db.tier_create(database.tier_values('silver'))
        self.assertRaises(exception.Conflict, self.db.tier_create,
                          database.tier_values('gold'))
        self.assertRaises(exception.Conflict, self.db.tier_update,
                          'silver', {'name': 'gold'})
        self.assertEqual(['gold', 'silver'],
                         [t.name for t in self.db.tier_list()])

    def test_private_tier_visibility(self):
        self.db.tier_create(database.tier_values('public'))
        self.db.tier_create(database.tier_values('private', is_public=False),
                            projects=['proj-a'])
        self.assertEqual(['private', 'public'],
                         [t.name for t in self.db.tier_list()])
        self.assertEqual(['private', 'public'],
                         [t.name for t in self.db.tier_list('proj-a')])
        self.assertEqual(['public'],
                         [t.name for t in self.db.tier_list('proj-b')])
        self.assertRaises(exception.NotFound, self.db.tier_get, 'private',
                          'proj-b')
        self.assertEqual(('proj-a',),
                         self.db.tier_get('private', 'proj-a').projects)
        self.db.tier_update('private', {}, projects=['proj-b'])
        self.assertEqual(['private', 'public'],
                         [t.name for t in self.db.tier_list('proj-b')])
        self.assertEqual(['public'],
                         [t.name for t in self.db.tier_list('proj-a')])
        # Deleting the tier deletes its project list (ON DELETE CASCADE).
        self.db.tier_delete('private')
        self.db.tier_create(database.tier_values('private', is_public=False))
        self.assertEqual((), self.db.tier_get('private').projects)

    def test_tier_in_use_cannot_be_deleted(self):
        self._domain_with_disks()
        self.db.tier_create(database.tier_values('gold'))
        self.db.disk_tier_set(UUID_A, '*', 'gold', 'flavor', 'proj-a')
        self.assertRaises(exception.Conflict, self.db.tier_delete, 'gold')
        self.assertEqual('gold', self.db.tier_get('gold').name)

    def test_default_tier_cannot_be_deleted(self):
        self.flags(group='tiers', default_tier='bronze')
        db = db_api.Connection(self.conf)
        self.addCleanup(db.dispose)
        db.tier_create(database.tier_values('bronze'))
        self.assertRaises(exception.Conflict, db.tier_delete, 'bronze')

    def test_domain_crud(self):
        self.db.domain_create('ceph:pool1', 'ceph')
        self.assertRaises(exception.Conflict, self.db.domain_create,
                          'ceph:pool1', 'ceph')
        got = self.db.domain_get('ceph:pool1')
        self.assertIsNone(got.iops_4k)
        self.assertEqual({}, got.params)
        self.db.domain_update('ceph:pool1', {
            'iops_4k': 20000.0, 'bytes_sec': 1.5e9, 'policy': 'ntt',
            'params': {'hysteresis': 0.1}})
        got = self.db.domain_get('ceph:pool1')
        self.assertEqual((20000.0, 1.5e9, 'ntt', {'hysteresis': 0.1}),
                         (got.iops_4k, got.bytes_sec, got.policy,
                          got.params))
        self.assertEqual(['ceph:pool1'],
                         [d.name for d in self.db.domain_list()])
        self.assertRaises(exception.NotFound, self.db.domain_get, 'nope')
        self.assertRaises(exception.NotFound, self.db.domain_update, 'nope',
                          {'policy': 'none'})

    def test_tier_resolution_order(self):
        self._domain_with_disks()
        for name in ('meta', 'flavor', 'voltype', 'vda-flavor', 'default'):
            self.db.tier_create(database.tier_values(name))
        self.flags(group='tiers', default_tier='default')
        db = db_api.Connection(self.conf)
        self.addCleanup(db.dispose)

        def tiers():
            return {(d['instance_uuid'], d['dev']):
                    (d['tier'].name, d['tier_source'])
                    for d in db.disk_list()}

        self.assertEqual({(UUID_A, 'vda'): ('default', 'default'),
                          (UUID_A, 'vdb'): ('default', 'default'),
                          (UUID_B, 'vda'): ('default', 'default')}, tiers())
        db.disk_tier_set(UUID_A, 'vdb', 'voltype', 'volume_type', 'proj-a')
        db.disk_tier_set(UUID_A, '*', 'flavor', 'flavor', 'proj-a')
        # The flavor's tier is for the disks it describes, the volume
        # type's for its volume (vdb).
        current = tiers()
        self.assertEqual(('flavor', 'flavor'), current[(UUID_A, 'vda')])
        self.assertEqual(('voltype', 'volume_type'),
                         current[(UUID_A, 'vdb')])
        db.disk_tier_set(UUID_A, 'vda', 'vda-flavor', 'flavor', 'proj-a')
        self.assertEqual(('vda-flavor', 'flavor'), tiers()[(UUID_A, 'vda')])
        db.instance_tier_set(UUID_A, 'meta', lambda *a: {})
        current = tiers()
        self.assertEqual(('meta', 'api'), current[(UUID_A, 'vda')])
        self.assertEqual(('meta', 'api'), current[(UUID_A, 'vdb')])
        self.assertEqual(('default', 'default'), current[(UUID_B, 'vda')])
        self.assertRaises(exception.Invalid, db.disk_tier_set, UUID_A, 'vda',
                          'meta', 'guess', 'proj-a')

    def _gold_silver_and_b_silver(self):
        self._domain_with_disks()
        self.db.tier_create(database.tier_values('gold', min_iops=100.0))
        self.db.tier_create(database.tier_values('silver', min_iops=10.0))
        self.db.instance_tier_set(UUID_B, 'silver', lambda *a: {})

    def test_no_default_tier_means_no_tier(self):
        self._domain_with_disks()
        disk = self.db.disk_list(instance_uuid=UUID_B)[0]
        self.assertIsNone(disk['tier'])
        self.assertIsNone(disk['tier_source'])

    def test_instance_tier_set_gives_admission_the_domain(self):
        self._gold_silver_and_b_silver()
        seen = []

        def admit(tier, domain, others, before, after):
            seen.append((tier, domain.name, domain.iops_4k,
                         [t.name for t in others],
                         [t.name for t in before],
                         [t.name for t in after]))
            return {'domain': domain.name, 'ok': True}

        result = self.db.instance_tier_set(UUID_A, 'gold', admit)
        self.assertEqual([('gold', 'local:cn1', 10000.0, ['silver'], [],
                           ['gold', 'gold'])], seen)
        self.assertEqual([{'domain': 'local:cn1', 'ok': True}],
                         result['admission'])
        self.assertEqual('proj-a', result['project_id'])

    def test_instance_tier_set_refused_writes_nothing(self):
        self._domain_with_disks()
        self.db.tier_create(database.tier_values('gold', min_iops=100.0))
        self.db.tier_create(database.tier_values('silver', min_iops=10.0))
        self.db.instance_tier_set(UUID_A, 'silver', lambda *a: {})

        def refuse(*args):
            raise exception.AdmissionRejected(tier='gold', domain='d',
                                              committed=1.0, max_ratio=0.9)

        self.assertRaises(exception.AdmissionRejected,
                          self.db.instance_tier_set, UUID_A, 'gold', refuse)
        self.assertEqual({'silver'}, {d['tier'].name for d in
                                      self.db.disk_list(UUID_A)})
        self.assertRaises(exception.Conflict, self.db.tier_delete, 'silver')
        self.db.tier_delete('gold')

    def _tiers_of(self, uuid):
        return {d['dev']: (d['tier'] and d['tier'].name, d['tier_source'],
                           d['tier_refused'] and d['tier_refused']['tier'])
                for d in self.db.disk_list(uuid)}

    def test_flavor_tier_choice_under_the_api_one(self):
        self._domain_with_disks()
        self.db.tier_create(database.tier_values('gold', min_iops=100.0))
        self.db.tier_create(database.tier_values('silver', min_iops=10.0))
        seen = []

        def admit(tier, domain, others, before, after):
            seen.append((tier, len(others), [t.name for t in after]))
            return {}

        self.db.instance_tier_set(UUID_A, 'silver', admit, source='flavor')
        self.assertEqual({(UUID_A, '*'): ('silver', 'admitted')},
                         self.db.tier_requests('flavor', [UUID_A, UUID_B]))
        # Only the disk the flavor describes (vdb is a volume) was
        # admitted and got it.
        self.assertEqual([('silver', 0, ['silver'])], seen)
        self.assertEqual({'vda': ('silver', 'flavor', None),
                          'vdb': (None, None, None)}, self._tiers_of(UUID_A))
        # The tenant's admitted choice wins over the flavor's.
        self.db.instance_tier_set(UUID_A, 'gold', admit)
        self.assertEqual({'vda': ('gold', 'api', None),
                          'vdb': ('gold', 'api', None)},
                         self._tiers_of(UUID_A))
        self.assertEqual(('gold', 0, ['gold', 'gold']), seen[-1])
        self.db.tier_choice_unset(UUID_A, 'flavor')
        self.assertEqual({}, self.db.tier_requests('flavor', [UUID_A]))
        self.assertRaises(exception.Invalid, self.db.instance_tier_set,
                          UUID_A, 'gold', admit, source='nova-metadata')

    def test_volume_type_tier_admitted_for_its_disk_only(self):
        self._gold_silver_and_b_silver()
        seen = []

        def admit(tier, domain, others, before, after):
            seen.append(([t.name for t in others],
                         [t.name for t in before],
                         [t.name for t in after]))
            return {}

        self.db.instance_tier_set(UUID_A, 'gold', admit,
                                  source='volume_type', dev='vdb')
        self.assertEqual([(['silver'], [], ['gold'])], seen)
        self.assertEqual({'vda': (None, None, None),
                          'vdb': ('gold', 'volume_type', None)},
                         self._tiers_of(UUID_A))
        self.assertEqual({(UUID_A, 'vdb'): ('gold', 'admitted')},
                         self.db.tier_requests('volume_type', [UUID_A]))
        # A volume type's tier on a disk that is no volume asks nothing
        # of admission and gives nothing.
        seen.clear()
        self.db.instance_tier_set(UUID_A, 'silver', admit,
                                  source='volume_type', dev='vda')
        self.assertEqual([], seen)
        self.assertEqual((None, None, None), self._tiers_of(UUID_A)['vda'])

    def test_refused_tier_is_shown_until_given_or_gone(self):
        self._domain_with_disks()
        self.db.tier_create(database.tier_values('silver', min_iops=10.0))
        self.db.instance_tier_set(UUID_A, 'silver', lambda *a: {},
                                  source='flavor')
        # Refused after a resize: the flavor's choice goes, the refusal
        # shows where the flavor's tier would apply, once.
        self.assertTrue(self.db.tier_refusal_set(
            UUID_A, '*', 'flavor', 'platinum', 'does not fit', 'proj-a'))
        self.assertFalse(self.db.tier_refusal_set(
            UUID_A, '*', 'flavor', 'platinum', 'still no room', 'proj-a'))
        self.assertEqual({'vda': (None, None, 'platinum'),
                          'vdb': (None, None, None)}, self._tiers_of(UUID_A))
        vda = self.db.disk_list(UUID_A)[0]['tier_refused']
        self.assertEqual(('flavor', 'still no room'),
                         (vda['source'], vda['reason']))
        self.assertIsNotNone(vda['since'])
        self.assertEqual({(UUID_A, '*'): ('platinum', 'refused')},
                         self.db.tier_requests('flavor', [UUID_A]))
        # A tier from a stronger source hides it.
        self.db.instance_tier_set(UUID_A, 'silver', lambda *a: {})
        self.assertEqual(('silver', 'api', None),
                         self._tiers_of(UUID_A)['vda'])
        self.db.tier_choice_unset(UUID_A, 'api')
        # Given later: the refusal goes.
        self.db.tier_create(database.tier_values('platinum', min_iops=1.0))
        self.db.instance_tier_set(UUID_A, 'platinum', lambda *a: {},
                                  source='flavor')
        self.assertEqual(('platinum', 'flavor', None),
                         self._tiers_of(UUID_A)['vda'])
        self.assertEqual({(UUID_A, '*'): ('platinum', 'admitted')},
                         self.db.tier_requests('flavor', [UUID_A]))
        # A deleted instance takes its refusals along.
        self.db.tier_refusal_set(UUID_A, 'vdb', 'volume_type', 'x' * 64,
                                 'r' * 300, 'proj-a')
        self.assertEqual(255, len(self.db.disk_list(UUID_A)[1]
                                  ['tier_refused']['reason']))
        self.assertEqual(2, self.db.tier_choices_forget(
            instance_uuids=[UUID_A]))
        self.assertEqual({}, self.db.tier_requests('volume_type', [UUID_A]))

    def test_tier_choices_of_deleted_instances_are_forgotten(self):
        self._domain_with_disks()
        self.db.tier_create(database.tier_values('silver', min_iops=10.0))
        self.db.instance_tier_set(UUID_A, 'silver', lambda *a: {})
        self.db.instance_tier_set(UUID_B, 'silver', lambda *a: {})
        self.assertRaises(exception.Conflict, self.db.tier_delete, 'silver')
        # A full resync that started before the choices keeps them all.
        past = datetime.datetime(2000, 1, 1)
        self.assertEqual(0, self.db.tier_choices_forget(keep=[],
                                                        before=past))
        # One listing that no longer shows B, after the choices.
        later = datetime.datetime(2100, 1, 1)
        self.assertEqual(1, self.db.tier_choices_forget(keep=[UUID_A],
                                                        before=later))
        # A's choice (one row for all its disks) when Nova deletes it.
        self.assertEqual(1, self.db.tier_choices_forget(
            instance_uuids=[UUID_A]))
        self.db.tier_delete('silver')

    def test_instance_tier_set_checks_owner_and_tier(self):
        self._domain_with_disks()
        self.db.tier_create(database.tier_values('gold'))
        self.db.tier_create(database.tier_values('mine', is_public=False),
                            projects=['proj-b'])
        ok = (lambda *a: {})
        self.assertRaises(exception.NotFound, self.db.instance_tier_set,
                          UUID_A, 'gold', ok, project_id='proj-b')
        self.assertRaises(exception.NotFound, self.db.instance_tier_set,
                          '33333333-3333-4333-8333-333333333333', 'gold', ok)
        self.assertRaises(exception.NotFound, self.db.instance_tier_set,
                          UUID_A, 'nope', ok)
        # A private tier is for its projects only, even for an admin call.
        self.assertRaises(exception.NotFound, self.db.instance_tier_set,
                          UUID_A, 'mine', ok)
        self.db.instance_tier_set(UUID_B, 'mine', ok, project_id='proj-b')
        self.assertEqual([], [d for d in self.db.disk_list(UUID_A)
                              if d['tier']])

    def test_disks_caps_and_rates(self):
        self._domain_with_disks()
        dbrows.disk_update_rates(self.db, UUID_A, 'vda', T0, read_iops=10.0,
                                 write_iops=5.0, latency_ms=1.5)
        vda_id = self.db.disk_list(instance_uuid=UUID_A)[0]['id']
        self.assertRaises(exception.Invalid, self.db.disk_rates_bulk_update,
                          [{'id': vda_id, 'sampled_at': T0, 'iops': 1.0}])
        decision = dbrows.decision_create(
            self.db, 'local:cn1', 'guarantee', UUID_A, 'vda', 'proj-a', 'cap',
            {}, {'total_iops_sec': 100}, 'pushes vdb below its floor',
            {'u': 0.95}, created_at=T0)
        lease = T0 + datetime.timedelta(seconds=30)
        dbrows.cap_set(self.db, UUID_A, 'vda', {'total_iops_sec': 100}, lease,
                       decision)
        vda, vdb = self.db.disk_list(instance_uuid=UUID_A)
        self.assertEqual((10.0, 5.0, 1.5, T0), (
            vda['read_iops'], vda['write_iops'], vda['latency_ms'],
            vda['sampled_at']))
        self.assertEqual({'limits': {'total_iops_sec': 100},
                          'lease_expires_at': lease, 'decision_id': decision,
                          'reason': 'pushes vdb below its floor'},
                         vda['cap'])
        self.assertIsNone(vdb['cap'])
        self.assertEqual(UUID_B, vdb['volume_id'])
        self.assertEqual(['local:cn1'] * 2, [vda['domain'], vdb['domain']])
        self.assertEqual(0, self.db.cap_delete_expired(T0))
        self.assertEqual(1, self.db.cap_delete_expired(
            lease + datetime.timedelta(seconds=1)))
        self.assertEqual(0, self.db.caps_release([(UUID_A, 'vda')]))
        self.assertRaises(exception.NotFound, self.db.caps_set, [
            {'instance_uuid': UUID_A, 'dev': 'vdz', 'limits': {},
             'lease_expires_at': lease, 'decision_id': None}])
        self.assertEqual([UUID_B], [d['instance_uuid'] for d in
                                    self.db.disk_list(project_id='proj-b')])
        self.assertEqual(3, len(self.db.disk_list(domain='local:cn1')))
        self.assertRaises(exception.NotFound, self.db.disk_list,
                          domain='nope')

    def test_p99_written_beside_the_mean_null_when_not_measured(self):
        self._domain_with_disks()
        ids = {(d['instance_uuid'], d['dev']): d['id']
               for d in self.db.disk_list()}

        def write(p99_vda, at):
            # one statement: the mixed rows go through each back end's
            # bulk form (arrays, JSON_TABLE, executemany)
            self.db.disk_rates_bulk_update([
                {'id': ids[UUID_A, 'vda'], 'sampled_at': at,
                 'latency_ms': 1.5, 'latency_p99_ms': p99_vda},
                {'id': ids[UUID_A, 'vdb'], 'sampled_at': at,
                 'latency_ms': 2.5},
                {'id': ids[UUID_B, 'vda'], 'sampled_at': at,
                 'latency_ms': 3.5, 'latency_p99_ms': 40.25}])
            return {(d['instance_uuid'], d['dev']): (d['latency_ms'],
                                                     d['latency_p99_ms'])
                    for d in self.db.disk_list()}

        self.assertEqual({(UUID_A, 'vda'): (1.5, 9.625),
                          (UUID_A, 'vdb'): (2.5, None),
                          (UUID_B, 'vda'): (3.5, 40.25)}, write(9.625, T0))
        # a p99 no longer measured is not kept from before
        later = T0 + datetime.timedelta(seconds=30)
        self.assertEqual((1.5, None), write(None, later)[UUID_A, 'vda'])

    def test_disk_upsert_moves_and_delete(self):
        self._domain_with_disks()
        self.db.domain_create('local:cn2', 'local')
        self.db.disk_upsert(UUID_A, 'vda', 'cn2', 'local:cn2', 'proj-a')
        moved = self.db.disk_list(instance_uuid=UUID_A)[0]
        self.assertEqual(('cn2', 'local:cn2'), (moved['host'],
                                                moved['domain']))
        self.assertEqual(3, len(self.db.disk_list()))
        self.assertRaises(exception.NotFound, self.db.disk_upsert, UUID_A,
                          'vda', 'cn3', 'local:cn3', 'proj-a')
        self.db.disk_delete(UUID_A, 'vda')
        self.assertRaises(exception.NotFound, self.db.disk_delete, UUID_A,
                          'vda')
        self.assertEqual(2, len(self.db.disk_list()))

    def test_domain_merge_moves_disks_and_keeps_one_profile(self):
        # Nova's pool (no profile) and Cinder's pool (calibrated) on one
        # Ceph cluster become the domain 'ceph'.
        self.db.domain_create('ceph:vms', 'ceph', policy='ntt',
                              params={'hysteresis': 0.1})
        self.db.domain_create('c1@ceph#ceph', 'cinder', iops_4k=900.0,
                              bytes_sec=9e6, form='max')
        self.db.disk_upsert(UUID_A, 'vda', 'cn1', 'ceph:vms', 'proj-a')
        self.db.disk_upsert(UUID_A, 'vdb', 'cn1', 'c1@ceph#ceph', 'proj-a',
                            volume_id=UUID_B)
        self.db.disk_upsert(UUID_B, 'vda', 'cn2', 'ceph:vms', 'proj-b')
        domain, moved = self.db.domain_merge(
            'ceph', ['ceph:vms', 'c1@ceph#ceph'], 'ceph')
        self.assertEqual(3, moved)
        self.assertEqual(('ceph', 'ceph', 900.0, 9e6, 'max', 'ntt',
                          {'hysteresis': 0.1}),
                         (domain.name, domain.kind, domain.iops_4k,
                          domain.bytes_sec, domain.form,
                          domain.policy, domain.params))
        self.assertEqual(['ceph'], [d.name for d in self.db.domain_list()])
        self.assertEqual({(UUID_A, 'vda'): ('ceph', 'cn1'),
                          (UUID_A, 'vdb'): ('ceph', 'cn1'),
                          (UUID_B, 'vda'): ('ceph', 'cn2')},
                         self.db.disk_index())

    def test_domain_merge_into_existing_keeps_its_profile(self):
        self._domain_with_disks()
        self.db.domain_create('shared', 'ceph', iops_4k=50.0,
                              bytes_sec=5e6)
        domain, moved = self.db.domain_merge('shared', ['local:cn1'], 'ceph')
        self.assertEqual((3, 50.0, 5e6), (moved, domain.iops_4k,
                                          domain.bytes_sec))

    def test_domain_merge_refused_writes_nothing(self):
        self._domain_with_disks()
        self.assertRaises(exception.NotFound, self.db.domain_merge, 'ceph',
                          ['local:cn1', 'nope'], 'ceph')
        self.assertRaises(exception.Invalid, self.db.domain_merge,
                          'local:cn1', ['local:cn1'], 'ceph')
        self.assertRaises(exception.Invalid, self.db.domain_merge, 'ceph',
                          [], 'ceph')
        self.assertEqual(['local:cn1'],
                         [d.name for d in self.db.domain_list()])
        self.assertEqual({'local:cn1'},
                         {d for d, _ in self.db.disk_index().values()})

    def test_decisions_paginate_newest_first(self):
        ids = []
        for i in range(7):
            ids.append(dbrows.decision_create(
                self.db, 'local:cn1' if i % 2 else 'ceph:p', 'guarantee',
                UUID_A if i < 5 else UUID_B, 'vda',
                'proj-a' if i < 5 else 'proj-b', 'cap', {},
                {'total_iops_sec': i}, 'r%d' % i, {'i': i},
                created_at=T0 + datetime.timedelta(seconds=i)))
        page = self.db.decision_list(limit=3)
        self.assertEqual(ids[::-1][:3], [d['id'] for d in page])
        page2 = self.db.decision_list(limit=3, marker=page[-1]['id'])
        self.assertEqual(ids[::-1][3:6], [d['id'] for d in page2])
        self.assertEqual({'i': 3}, page2[0]['numbers'])
        self.assertEqual(ids[:5][::-1], [
            d['id'] for d in self.db.decision_list(limit=10,
                                                   project_id='proj-a')])
        self.assertEqual([ids[5], ids[3], ids[1]], [
            d['id'] for d in self.db.decision_list(limit=10,
                                                   domain='local:cn1')])
        self.assertEqual(ids[6:4:-1], [d['id'] for d in self.db.decision_list(
            limit=10, instance_uuid=UUID_B)])
        self.assertEqual(ids[6:3:-1], [d['id'] for d in self.db.decision_list(
            limit=10, since=T0 + datetime.timedelta(seconds=4))])
        self.assertRaises(exception.NotFound, self.db.decision_list, 3,
                          marker=ids[6], project_id='proj-a')
        self.assertRaises(exception.NotFound, self.db.decision_list, 3,
                          marker=max(ids) + 100)

    def test_agents(self):
        self.db.agent_heartbeat('cn1', 'libvirt', now=T0, version='1.0',
                                interval_s=5.0, disks=3, caps=1)
        self.db.agent_heartbeat('cn1', 'libvirt',
                                now=T0 + datetime.timedelta(seconds=5),
                                version='1.1', interval_s=2.5, disks=4,
                                caps=0, clock_offset_s=1.5)
        self.db.agent_heartbeat('cn0', 'simulated', now=T0)
        cn0 = {'host': 'cn0', 'driver': 'simulated', 'version': None,
               'last_heartbeat': T0, 'interval_s': None, 'disks': None,
               'caps': None, 'clock_offset_s': None, 'created_at': T0}
        cn1 = {'host': 'cn1', 'driver': 'libvirt', 'version': '1.1',
               'last_heartbeat': T0 + datetime.timedelta(seconds=5),
               'interval_s': 2.5, 'disks': 4, 'caps': 0,
               'clock_offset_s': 1.5, 'created_at': T0}
        self.assertEqual([cn0, cn1], self.db.agent_list())
        self.assertEqual([cn1], self.db.agent_list(host='cn1'))
        self.assertEqual([], self.db.agent_list(host='cn2'))


backends.on_every_backend(globals(), DbApiTests)
del DbApiTests


class ConcurrentAdmissionTests:
    """Two tier choices at once on a domain that has room for one."""

    def test_concurrent_choices_cannot_overcommit(self):
        self.db.domain_create('local:cn1', 'local', iops_4k=10000.0,
                              bytes_sec=400e6)
        self.db.disk_upsert(UUID_A, 'vda', 'cn1', 'local:cn1', 'proj-a')
        self.db.disk_upsert(UUID_B, 'vda', 'cn1', 'local:cn1', 'proj-b')
        # 2500 IOPS cost 0.2756 each: one fits under 0.5, two do not.
        self.db.tier_create(database.tier_values('big', min_iops=2500.0))
        check = functools.partial(admission.check, max_ratio=0.5)
        inside = threading.Event()

        def slow_check(*args):
            numbers = check(*args)
            inside.set()
            time.sleep(1.0)     # hold the domain while the other one tries
            return numbers

        outcomes = {}

        def choose(instance, admit):
            try:
                self.db.instance_tier_set(instance, 'big', admit)
                outcomes[instance] = 'admitted'
            except exception.AdmissionRejected:
                outcomes[instance] = 'refused'

        first = threading.Thread(target=choose, args=(UUID_A, slow_check))
        first.start()
        self.assertTrue(inside.wait(30))
        second = threading.Thread(target=choose, args=(UUID_B, check))
        second.start()
        first.join(60)
        second.join(60)
        self.assertEqual({UUID_A: 'admitted', UUID_B: 'refused'}, outcomes)
        self.assertEqual({UUID_A: 'big', UUID_B: None}, {
            d['instance_uuid']: d['tier'] and d['tier'].name
            for d in self.db.disk_list()})

    def test_concurrent_choices_within_unified_limits(self):
        """Two choices of one project in two domains, its limit for one.

        The limit is checked under the locks of the project's domains:
        the second waits for the first and sees its floor (before, both
        passed: the check ran outside the lock).
        """
        global_conf = self.useFixture(config_fixture.Config(cfg.CONF))
        global_conf.config(group='oslo_limit', endpoint_id='iotguard')
        # 2500 IOPS of 4 KiB: 2657 units (a floor unit is 1 IOPS or
        # 64 KiB/s); the project's limit holds one.
        self.useFixture(limit_fixture.LimitFixture(
            {limits.LOCAL: 3000, limits.SHARED: 0}, {}))
        for host in ('cn1', 'cn2'):
            self.db.domain_create('local:' + host, 'local', iops_4k=10000.0,
                                  bytes_sec=400e6)
        self.db.disk_upsert(UUID_A, 'vda', 'cn1', 'local:cn1', 'proj-a')
        self.db.disk_upsert(UUID_B, 'vda', 'cn2', 'local:cn2', 'proj-a')
        self.db.tier_create(database.tier_values('big', min_iops=2500.0))
        check = functools.partial(admission.check, max_ratio=0.5)
        enforce = limits.enforcer(self.conf)
        inside = threading.Event()

        def slow_limit(*args):
            enforce(*args)
            inside.set()
            time.sleep(1.0)     # hold the locks while the other one tries
        outcomes = {}

        def choose(instance, limit):
            try:
                self.db.instance_tier_set(instance, 'big', check,
                                          limit=limit)
                outcomes[instance] = 'admitted'
            except exception.Conflict as exc:
                outcomes[instance] = str(exc)

        first = threading.Thread(target=choose, args=(UUID_A, slow_limit))
        first.start()
        self.assertTrue(inside.wait(30))
        second = threading.Thread(target=choose, args=(UUID_B, enforce))
        second.start()
        first.join(60)
        second.join(60)
        self.assertEqual('admitted', outcomes[UUID_A])
        self.assertIn('iotguard_floor_units_local: limit 3000, committed '
                      '2657, this choice 2657 more', outcomes[UUID_B])
        self.assertEqual({UUID_A: 'big', UUID_B: None}, {
            d['instance_uuid']: d['tier'] and d['tier'].name
            for d in self.db.disk_list()})


for _backend in database.BACKENDS:
    _name = 'ConcurrentAdmissionTests%s' % _backend.capitalize()
    globals()[_name] = type(_name, (backends.BackendMixin,
                                    ConcurrentAdmissionTests,
                                    base.TestCase),
                            {'backend': _backend, '__module__': __name__})
del ConcurrentAdmissionTests
