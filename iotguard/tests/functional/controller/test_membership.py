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

from iotguard.controller import disk_index
from iotguard.controller import membership
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
