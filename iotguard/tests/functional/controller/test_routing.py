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

"""Samples routed to their domain's owner, on the real parts.

Two controllers share twelve domains through tooz on Redis, on one
database (PostgreSQL, SQLite when no server runs); agents' batches are
cast over RabbitMQ by the real :class:`ControllerAPI`, each to one
controller, which keeps its own domains' disks and routes the others'
to their owner. Every disk must end up in its owner's sample store and
nowhere else, however the broker spread the batches. No decision round
runs (``timer=False``): only the ingest is under test.
"""

import time
import uuid

from oslo_messaging import conffixture

from iotguard.controller import service as controller_service
from iotguard.tests import base
from iotguard.tests.fixtures import database
from iotguard.tests.fixtures import rabbit
from iotguard.tests.functional.controller import test_partition
from iotguard.wire import batch as batch_mod
from iotguard.wire import rpc
from iotguard.wire import rpcapi

HOSTS = 4
DOMAINS = 12
DISKS_PER_HOST = 9      # each host has disks in nine of the domains


class RoutingOverRabbitTest(base.TestCase):

    def setUp(self):
        super().setUp()
        run = rabbit.run_id(self)
        reason = test_partition._redis_unreachable()
        if reason:
            self.skipTest(reason)
        backend = ('postgresql' if database.unavailable('postgresql') is None
                   else 'sqlite')
        self.db = self.useFixture(database.Database(backend, self.conf)).db
        self.flags(host='ctl-' + run)
        self.flags(backend_url=test_partition.REDIS_URL, member_timeout=2,
                   group_name='iotguard-route-' + run, group='coordination')
        self.flags(register_local_disks=False, group='controller')
        self.useFixture(conffixture.ConfFixture(self.conf))
        self.conf.set_override('control_exchange', 'iotguard-route-' + run)
        self.transport = rpc.get_transport(self.conf, url=rabbit.URL)
        self.addCleanup(self.transport.cleanup)
        self.domains = ['route-%02d-%s' % (i, run) for i in range(DOMAINS)]
        for name in self.domains:
            self.db.domain_create(name, 'ceph')
        self.disks = {}       # (uuid, dev) -> (domain, host)
        for h in range(HOSTS):
            host = 'cn%d-%s' % (h, run)
            for d in range(DISKS_PER_HOST):
                key = (str(uuid.uuid4()), 'vd' + 'abcdefghi'[d])
                domain = self.domains[(h * 3 + d) % DOMAINS]
                self.db.disk_upsert(key[0], key[1], host, domain, 'p1')
                self.disks[key] = (domain, host)

    def controller(self, name):
        service = controller_service.ControllerService(
            self.conf, transport=self.transport, member_id=name,
            timer=False)
        service.start()
        self.addCleanup(service.stop)
        return service

    def batches(self, timestamp):
        out = {}
        for key, (_domain, host) in self.disks.items():
            out.setdefault(host, []).append(batch_mod.Row(
                key[0], key[1], timestamp, 1.0, project_id='p1',
                rates=dict(zip(batch_mod.RATES,
                               (1.0, 2.0, 4096.0, 8192.0, 1.0, 1.0)))))
        return {host: batch_mod.Batch.of_rows(rows)
                for host, rows in out.items()}

    def test_each_disk_reaches_its_owner_alone(self):
        run = self.conf.control_exchange.rsplit('-', 1)[1]
        a = self.controller('ctl-a-' + run)
        b = self.controller('ctl-b-' + run)

        def split():
            mine = [set(c.partition.my_domains(self.domains)) for c in (a, b)]
            return (mine if mine[0] and mine[1] and not mine[0] & mine[1]
                    and mine[0] | mine[1] == set(self.domains) else None)
        owned = base.wait_for(split, 10)
        self.assertTrue(owned, 'the two controllers never split the '
                        'domains')

        api = rpcapi.ControllerAPI(self.transport)
        for _round in range(3):
            for host, batch in self.batches(time.time()).items():
                api.report_samples({}, host, batch)
            time.sleep(0.3)

        def placed():
            for key, (domain, _host) in self.disks.items():
                for service, theirs in ((a, owned[0]), (b, owned[1])):
                    held = service.store.latest(*key) is not None
                    if held != (domain in theirs):
                        return False
            return True
        self.assertTrue(base.wait_for(placed, 10),
                        'a disk is missing from its owner or held by the '
                        'other controller: stats %s / %s'
                        % (a.manager.stats, b.manager.stats))
        self.assertEqual(len(self.disks), len(a.store) + len(b.store))
        # both took their turn of the casts, and routed the other's share
        self.assertGreater(a.manager.stats['forwarded'], 0)
        self.assertGreater(b.manager.stats['forwarded'], 0)
        self.assertEqual(0, a.manager.stats['dropped'])
        self.assertEqual(0, b.manager.stats['dropped'])
