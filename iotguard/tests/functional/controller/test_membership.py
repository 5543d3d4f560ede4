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

"""Membership over real RabbitMQ and a real database.

Nova's and Cinder's notifications are sent as they send them (an
oslo.messaging ``Notifier``, ``messagingv2``, priority ``info``, each
service on its own exchange) on this test's own exchanges and topics;
membership is persisted with :mod:`iotguard.db.api` in a throwaway
PostgreSQL database (SQLite when PostgreSQL is not there). Nova and
Cinder themselves are the fake openstacksdk connection of the unit tests.
"""

import threading
import time

import fixtures
from testtools import content

from iotguard.controller import disk_index
from iotguard.controller import membership
from iotguard.tests import base
from iotguard.tests.fixtures import database
from iotguard.tests.functional.controller import test_ceilometer as rabbit
from iotguard.tests.unit.controller import test_membership as unit


class MembershipOverRabbitTest(rabbit.RabbitTestCase):

    def setUp(self):
        super().setUp()
        backend = 'postgresql' if database.unavailable(
            'postgresql') is None else 'sqlite'
        self.db = self.useFixture(database.Database(backend,
                                                    conf=self.conf)).db
        topics = ['notifications-ft-' + self.run_id,
                  'versioned-ft-' + self.run_id]
        self.flags(group='membership', notification_topics=topics,
                   notification_exchanges=['nova-ft-' + self.run_id,
                                           'cinder-ft-' + self.run_id])
        self.flags(host='ctl-' + self.run_id)
        self.conn = unit.FakeConnection()
        self.conn.servers = {
            unit.VM1: unit.server(unit.VM1, 'cmp-1', volumes=[unit.VOL1])}
        self.conn.volumes = {unit.VOL1: unit.volume(
            unit.VOL1, unit.POOL, [(unit.VM1, '/dev/vdb')])}
        self.rebuilt = []
        self.called = threading.Event()
        self.membership = membership.Membership(
            self.conf, disk_index.DiskIndex(self.db), connection=self.conn,
            on_rebuilt=self.on_rebuilt)
        self.addCleanup(self.membership.stop)
        self.start(membership.get_listener(self.conf, self.transport,
                                           self.membership))
        # Nova and Cinder publish on their own exchanges, not iotguard's.
        self.nova = self.notifier('nova', 'compute.cmp-1', topics[:1])
        self.nova_v2 = self.notifier('nova', 'nova-compute:cmp-2',
                                     topics[1:])
        self.cinder = self.notifier('cinder', 'volume.cinder-1', topics[:1])

    def on_rebuilt(self, instance_uuid, host):
        self.rebuilt.append((instance_uuid, host))
        self.called.set()

    def wait_rebuilt(self):
        self.assertTrue(self.called.wait(15), 'on_rebuilt never called')
        self.called.clear()

    def index(self):
        return {k: v for k, v in self.db.disk_index().items()
                if k[0] == unit.VM1}

    def test_events_update_the_database_and_call_back(self):
        self.membership.refresh()
        self.assertEqual({(unit.VM1, 'vda'): ('local:cmp-1', 'cmp-1'),
                          (unit.VM1, 'vdb'): (unit.POOL, 'cmp-1')},
                         self.index())
        self.assertEqual('cinder', self.db.domain_get(unit.POOL).kind)

        # Live migration to cmp-2 (unversioned, as Nova sends by default).
        self.conn.servers[unit.VM1].compute_host = 'cmp-2'
        self.nova.info({}, 'compute.instance.live_migration.post.dest.end',
                       {'instance_id': unit.VM1, 'host': 'cmp-2'})
        self.wait_rebuilt()
        self.assertEqual([(unit.VM1, 'cmp-2')], self.rebuilt)
        self.assertEqual({(unit.VM1, 'vda'): ('local:cmp-2', 'cmp-2'),
                          (unit.VM1, 'vdb'): (unit.POOL, 'cmp-2')},
                         self.index())

        # A retype, on Cinder's exchange: the volume's disk gets the tier
        # its new type names.
        self.db.tier_create(database.tier_values('gold'))
        self.conn.types = {'iotguard-gold': {'iotguard:tier': 'gold'}}
        self.conn.volumes[unit.VOL1].volume_type = 'iotguard-gold'
        self.cinder.info({}, 'volume.retype', {
            'volume_id': unit.VOL1,
            'volume_attachment': [{'instance_uuid': unit.VM1}]})
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not self.db.tier_requests(
                'volume_type', [unit.VM1]):
            time.sleep(0.1)
        self.assertEqual({(unit.VM1, 'vdb'): ('gold', 'admitted')},
                         self.db.tier_requests('volume_type', [unit.VM1]))

        # Garbage on the bus is survived; then a versioned rebuild.
        self.nova_v2.info({}, 'instance.rebuild.end', ['not', 'a', 'dict'])
        self.nova_v2.info({}, 'instance.rebuild.end', {
            'nova_object.name': 'InstanceActionRebuildPayload',
            'nova_object.data': {'uuid': unit.VM1, 'host': 'cmp-2'}})
        self.wait_rebuilt()
        self.assertEqual(2, len(self.rebuilt))

        # Delete: the disks leave the database, no call back.
        del self.conn.servers[unit.VM1]
        self.nova.info({}, 'compute.instance.delete.end',
                       {'instance_id': unit.VM1})
        deadline = time.monotonic() + 15
        while self.index() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual({}, self.index())
        self.assertEqual(2, len(self.rebuilt))
        self.assertIsNone(unit.domain_of(self.membership, unit.VM1, 'vda'))

    def test_a_volume_extend_admits_its_floor_per_gib_again(self):
        """Cinder's volume.resize.end, its payload as Cinder builds it."""
        self.db.domain_create(unit.POOL, 'cinder', iops_4k=1000.0,
                              bytes_sec=4e8)
        self.db.tier_create(database.tier_values('per-gib',
                                                 min_iops_per_gb=10.0))
        self.conn.types = {'iotguard-per-gib': {'iotguard:tier': 'per-gib'}}
        volume = self.conn.volumes[unit.VOL1]
        volume.volume_type = 'iotguard-per-gib'
        notifier = unit.FakeNotifier()
        self.membership.notifier = notifier
        self.membership.refresh()

        def disk():
            found, = [d for d in self.db.disk_list(instance_uuid=unit.VM1)
                      if d['dev'] == 'vdb']
            return found

        self.assertEqual((10, 100.0), (disk()['size_gib'],
                                       disk()['tier'].min_iops))

        def extended(size):
            volume.size = size
            self.cinder.info({}, 'volume.resize.end', unit.cinder_usage(
                unit.VOL1, unit.POOL, [(unit.VM1, '/dev/vdb', 'attached')],
                size=size, volume_type='iotguard-per-gib'))

        extended(50)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and disk()['size_gib'] != 50:
            time.sleep(0.1)
        self.assertEqual((50, 500.0, None), (
            disk()['size_gib'], disk()['tier'].min_iops,
            disk()['size_refused']))
        # 1000 IOPS would be all of the pool: refused, the 50 GiB floor
        # kept, the refusal on the disk and notified.
        extended(100)
        while time.monotonic() < deadline + 15 and not disk()['size_refused']:
            time.sleep(0.1)
        refused = disk()['size_refused']
        self.assertEqual((50, 500.0, 100), (
            disk()['size_gib'], disk()['tier'].min_iops, refused['size_gib']))
        self.assertEqual(['size_refused'], [
            kind for kind, _ in notifier.sent if kind != 'admitted'])

    def test_a_volume_migration_is_followed_within_seconds(self):
        """Cinder migrates the attached volume: no event tells the end.

        The events of ``cinder migrate`` of an attached volume, as Cinder
        sends them (:class:`test_membership.TestMigrations`): the copy's
        attach.start, the source's detach.end; then Cinder swaps the
        records unannounced. Membership reads the volume until its
        migration ends and moves the disk to the new pool's domain.
        """
        self.useFixture(fixtures.MockPatchObject(
            membership, 'MIGRATION_POLL_S', 0.2))
        self.membership.refresh()
        self.assertEqual((unit.POOL, 'cmp-1'), self.index()[(unit.VM1,
                                                             'vdb')])
        self.conn.volumes[unit.VOL1].migration_status = 'migrating'
        self.conn.volumes[unit.COPY] = unit.volume(
            unit.COPY, unit.POOL2, migration_status='target:' + unit.VOL1,
            status='reserved')
        with self.assertLogs('iotguard.controller.membership',
                             'INFO') as logs:
            self.cinder.info({}, 'volume.attach.start', unit.cinder_usage(
                unit.COPY, unit.POOL2, [(unit.VM1, None, 'reserved')],
                status='reserved'))
            self.cinder.info({}, 'volume.detach.end', unit.cinder_usage(
                unit.VOL1, unit.POOL, status='available'))
            self.assertTrue(base.wait_for(
                lambda: unit.VOL1 in self.membership.following, 15))
            time.sleep(0.5)
            self.assertEqual((unit.POOL, 'cmp-1'),
                             self.index()[(unit.VM1, 'vdb')])
            # migrate_volume_completion: the source's record is the
            # copy's now, on POOL2.
            self.conn.volumes[unit.VOL1] = unit.volume(
                unit.VOL1, unit.POOL2, [(unit.VM1, '/dev/vdb')],
                migration_status='success')
            began = time.monotonic()
            self.assertTrue(base.wait_for(
                lambda: self.index()[(unit.VM1, 'vdb')][0] == unit.POOL2,
                15), self.index())
            self.addDetail('seconds from swapped to followed',
                           content.text_content('%.1f' % (
                               time.monotonic() - began)))
            self.assertTrue(base.wait_for(
                lambda: not self.membership.following, 5))
        self.assertEqual(1, sum(
            'Volume %s migration followed: domain %s -> %s' % (
                unit.VOL1, unit.POOL, unit.POOL2) in line
            for line in logs.output), logs.output)
        self.assertEqual('cinder', self.db.domain_get(unit.POOL2).kind)
