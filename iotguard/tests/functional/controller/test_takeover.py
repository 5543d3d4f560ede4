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

"""A domain taken over mid-run is decided as if it had not moved.

Real parts: controllers sharing the domain through tooz on Redis, the
samples cast over RabbitMQ by the real :class:`ControllerAPI`, the
decisions and the policy's state in PostgreSQL (SQLite when no server
runs). The same script of samples runs twice, each on a database of its
own: once decided by one controller throughout, once by a controller
that leaves the group after three rounds and a second one that takes
the domain over. The decisions must be the same, round by round.

The script needs the ``guarantee`` policy's memory: a 4 KiB writer
thinking between synchronous writes is seen uncongested (its demand and
the domain's service time are learned), then a flood queues ahead of it.
Only a policy that remembers the first rounds caps the flood at once
(a new one learns the congested service time as normal:
``test_guarantee``'s ``test_thinking_client_behind_the_queue_gets_the_
flood_capped``); the takeover comes right before that round.
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

KIB = 1024.0
THINK_S = 0.018375
#: (writer's latency ms, flood's IOPS, flood's latency ms) per round
SCRIPT = [(1.625, 60.0, 20.0)] * 3 + [(10.0, 80.0, 200.0)] * 4
#: the rounds the first controller decides in the run with a takeover
BEFORE = 3
DECISION_FIELDS = ('instance_uuid', 'dev', 'action', 'old_limits',
                   'new_limits', 'reason', 'numbers', 'policy')


class TakeoverTest(base.TestCase):

    def setUp(self):
        super().setUp()
        reason = test_partition._redis_unreachable()
        if reason:
            self.skipTest(reason)
        self.run_id = rabbit.run_id(self)
        self.backend = ('postgresql'
                        if database.unavailable('postgresql') is None
                        else 'sqlite')
        self.host = 'cn-' + self.run_id
        self.domain = 'pool-' + self.run_id
        self.flags(host='ctl-' + self.run_id)
        self.flags(backend_url=test_partition.REDIS_URL, member_timeout=2,
                   group_name='iotguard-takeover-' + self.run_id,
                   group='coordination')
        self.flags(register_local_disks=False, group='controller')
        self.useFixture(conffixture.ConfFixture(self.conf))
        self.conf.set_override('control_exchange',
                               'iotguard-takeover-' + self.run_id)
        self.transport = rpc.get_transport(self.conf, url=rabbit.URL)
        self.addCleanup(self.transport.cleanup)
        self.api = rpcapi.ControllerAPI(self.transport)
        self.writer = (str(uuid.uuid4()), 'vda')
        self.flood = (str(uuid.uuid4()), 'vda')

    def database(self):
        """A fresh database with the domain, its tier and its two disks."""
        db = self.useFixture(database.Database(self.backend, self.conf)).db
        db.domain_create(self.domain, 'local', iops_4k=1000.0,
                         bytes_sec=6553600.0, policy='guarantee')
        db.tier_create(database.tier_values('silver', min_iops=20.0))
        for key in (self.writer, self.flood):
            db.disk_upsert(key[0], key[1], self.host, self.domain, 'p1')
        db.disk_tier_set(self.writer[0], self.writer[1], 'silver',
                         'flavor', 'p1')
        return db

    def controller(self, db, name):
        service = controller_service.ControllerService(
            self.conf, transport=self.transport, db=db,
            member_id='%s-%s' % (name, self.run_id), timer=False)
        service.start()
        self.addCleanup(service.stop)
        self.assertTrue(base.wait_for(
            lambda: service.partition.owns(self.domain), 10),
            '%s never owned the domain' % name)
        return service

    def round(self, service, db, step):
        """Cast the step's samples, run a round; its decisions."""
        latency_ms, flood_ops, flood_ms = SCRIPT[step]
        now = time.time()
        writer_ops = 1.0 / (THINK_S + latency_ms / 1000.0)
        rows = []
        for key, ops, size, ms in ((self.writer, writer_ops, 4 * KIB,
                                    latency_ms),
                                   (self.flood, flood_ops, 64 * KIB,
                                    flood_ms)):
            rows.append(batch_mod.Row(
                key[0], key[1], now - 0.2, 1.0, project_id='p1',
                rates=dict(zip(batch_mod.RATES,
                               (0.0, ops, 0.0, ops * size, 0.0, ms)))))
        self.api.report_samples({}, self.host,
                                batch_mod.Batch.of_rows(rows))

        def arrived():
            return all((service.store.latest(*key) or {}).get('timestamp')
                       == now - 0.2 for key in (self.writer, self.flood))
        self.assertTrue(base.wait_for(arrived, 10),
                        'the samples of step %d never arrived' % step)
        seen = len(db.decision_list(1000))
        service.tick(now)
        self.assertEqual([self.domain],
                         [r.domain for r in service.last_results])
        made = db.decision_list(1000)
        return [tuple(d[f] for f in DECISION_FIELDS)
                for d in made[:len(made) - seen][::-1]]

    def test_decisions_are_the_same_with_a_takeover(self):
        db = self.database()
        alone = self.controller(db, 'alone')
        kept = [self.round(alone, db, step) for step in range(len(SCRIPT))]
        alone.stop()

        db = self.database()
        first = self.controller(db, 'first')
        moved = [self.round(first, db, step) for step in range(BEFORE)]
        state = db.domain_policy_state(self.domain)
        first.stop()        # leaves the group: the domain moves
        second = self.controller(db, 'second')
        moved += [self.round(second, db, step)
                  for step in range(BEFORE, len(SCRIPT))]

        self.assertEqual(kept, moved)
        # what the second controller went on from: the service time and
        # the writer's demand, learned uncongested
        self.assertEqual('guarantee', state['policy'])
        self.assertAlmostEqual(1.0, state['state']['service'], places=3)
        memory = state['state']
        self.assertIsNotNone(memory['disks']['%s/%s' % self.writer][0])
        # ... without which the flood is not capped at once
        self.assertEqual([], kept[BEFORE - 1])
        self.assertEqual([(self.flood[0], 'cap')],
                         [(d[0], d[2]) for d in kept[BEFORE]])
