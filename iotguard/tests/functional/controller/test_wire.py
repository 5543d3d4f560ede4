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

"""report_samples' one form over real RabbitMQ.

An agent's sampler (over a fake driver, its counters set by the test)
casts its batch with the real :class:`ControllerAPI` to a real
:class:`ControllerManager` and sample store (SQLite), over RabbitMQ: the
batch's disks reach the store; a malformed batch is refused whole and
the next one is taken. Each test has its own exchange and host name.
"""

import time
import uuid

from oslo_messaging import conffixture

from iotguard.agent import manager as agent_manager
from iotguard.agent import sampler as sampler_mod
from iotguard.agent.virt import base as virt_base
from iotguard.controller import manager as manager_mod
from iotguard.controller import samples as samples_mod
from iotguard.tests import base
from iotguard.tests.fixtures import database
from iotguard.tests.fixtures import rabbit
from iotguard.tests.unit.agent import fakes as agent_fakes
from iotguard.wire import rates
from iotguard.wire import rpc
from iotguard.wire import rpcapi

DOMAIN = 'ft-wire'


class WireOverRabbitTest(base.TestCase):

    def setUp(self):
        super().setUp()
        run = rabbit.run_id(self)
        self.host = 'cn-wire-' + run
        self.flags(host=self.host)
        self.flags(sample_interval=5.0, state_file='', group='agent')
        self.flags(register_local_disks=False, group='controller')
        self.useFixture(conffixture.ConfFixture(self.conf))
        self.conf.set_override('control_exchange', 'iotguard-wire-' + run)
        self.transport = rpc.get_transport(self.conf, url=rabbit.URL)
        self.addCleanup(self.transport.cleanup)

        self.db = self.useFixture(database.Database('sqlite', self.conf)).db
        self.db.domain_create(DOMAIN, 'local')
        self.disks = [virt_base.Disk(str(uuid.uuid4()), dev,
                                     project_id='p1',
                                     static={'total_iops_sec': 500})
                      for dev in ('vda', 'vdb')]
        for disk in self.disks:
            self.db.disk_upsert(disk.instance_uuid, disk.dev, self.host,
                                DOMAIN, 'p1')
        self.store = samples_mod.SampleStore(5.0)
        self.controller = manager_mod.ControllerManager(self.conf, self.db,
                                                        self.store)
        self.controller.index.refresh()

    def serve(self, endpoint, name):
        server = rpc.get_server(self.transport, rpc.TOPIC_CONTROLLER,
                                name + '-' + self.host, [endpoint])
        server.start()
        self.addCleanup(server.wait)
        self.addCleanup(server.stop)
        time.sleep(0.5)    # the queue is bound before the casts

    def agent(self):
        """A sampler whose second pass has rates; its API and clock."""
        driver = agent_fakes.FakeDriver(self.disks)
        for i, disk in enumerate(self.disks):
            driver.counters[disk.key] = dict.fromkeys(rates.COUNTER_KEYS, 0)
        mgr = agent_manager.AgentManager(self.conf, driver,
                                         store=agent_fakes.MemoryStore())
        api = rpcapi.ControllerAPI(self.transport)
        clock = [100.0]
        sampler = sampler_mod.Sampler(self.conf, driver, mgr, api,
                                      clock=lambda: clock[0])
        sampler.collect(driver.list_disks())          # the first: gaps
        clock[0] += 5.0
        for i, disk in enumerate(self.disks):
            driver.counters[disk.key].update(rd_reqs=500 * (i + 1),
                                             rd_bytes=4096 * 500 * (i + 1))
        return sampler, api

    def wait_for(self, predicate, timeout=10.0):
        deadline = time.monotonic() + timeout
        while not predicate() and time.monotonic() < deadline:
            time.sleep(0.05)
        return predicate()

    def stored(self):
        return [self.store.latest(d.instance_uuid, d.dev)
                for d in self.disks]

    def assert_stored(self):
        self.assertTrue(self.wait_for(lambda: all(self.stored())),
                        'the batch never reached the store')
        first, second = self.stored()
        self.assertEqual((100.0, 200.0), (first['read_iops'],
                                          second['read_iops']))
        self.assertEqual((500.0, 1.0), (first['static_iops'],
                                        first['rated']))

    def test_the_batch_reaches_the_store(self):
        self.serve(self.controller, 'new')
        sampler, api = self.agent()
        sampler.run_once()
        self.assert_stored()
        self.assertEqual(0, self.controller.stats['dropped'])

    def test_a_malformed_batch_is_refused_whole_the_next_taken(self):
        self.serve(self.controller, 'new')
        sampler, api = self.agent()
        batch = sampler.collect(sampler.driver.list_disks())
        wire = batch.to_wire()
        wire['disks']['read_iops'][1] = -1.0
        api.client.prepare().cast({}, 'report_samples', host=self.host,
                                  samples=wire)
        self.assertTrue(self.wait_for(
            lambda: self.controller.stats['dropped'] == 1))
        self.assertEqual([None, None], self.stored())
        api.report_samples({}, self.host, batch)
        self.assert_stored()
