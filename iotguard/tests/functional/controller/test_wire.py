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

"""report_samples' two forms and their version over real RabbitMQ.

An agent's sampler (over a fake driver, its counters set by the test)
casts its batch with the real :class:`ControllerAPI` to a real
:class:`ControllerManager` and sample store (SQLite), over RabbitMQ:

* no version cap (1.1): the batch goes out in columns and its disks reach
  the store;
* ``[upgrade_levels] controller = 1.0``: it goes out as a dict per disk,
  which the 1.1 controller still takes;
* a controller that speaks only 1.0 refuses (its RPC dispatcher logs
  UnsupportedVersion) a 1.1 cast and takes a 1.0 one: why the controllers
  are upgraded first.

Each test has its own exchange and host name.
"""

import time
import uuid

import oslo_messaging
from oslo_messaging import conffixture

from iotguard.agent import manager as agent_manager
from iotguard.agent import sampler as sampler_mod
from iotguard.agent.virt import base as virt_base
from iotguard.controller import manager as manager_mod
from iotguard.controller import samples as samples_mod
from iotguard import rates
from iotguard import rpc
from iotguard import rpcapi
from iotguard.tests import base
from iotguard.tests.fixtures import database
from iotguard.tests.fixtures import rabbit
from iotguard.tests.unit.agent import fakes as agent_fakes

DOMAIN = 'ft-wire'


class OldController:
    """A controller of RPC 1.0: what it is sent, untouched."""

    target = oslo_messaging.Target(version='1.0')

    def __init__(self):
        self.batches = []

    def report_samples(self, ctxt, host, samples):
        self.batches.append(samples)

    def agent_heartbeat(self, ctxt, host, info):
        pass


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
        self.controller.refresh_index()

    def serve(self, endpoint, name):
        server = rpc.get_server(self.transport, rpc.TOPIC_CONTROLLER,
                                name + '-' + self.host, [endpoint])
        server.start()
        self.addCleanup(server.wait)
        self.addCleanup(server.stop)
        time.sleep(0.5)    # the fanout queue is bound before the casts

    def agent(self, version_cap=None):
        """A sampler whose second pass has rates; its API and clock."""
        driver = agent_fakes.FakeDriver(self.disks)
        for i, disk in enumerate(self.disks):
            driver.counters[disk.key] = dict.fromkeys(rates.COUNTER_KEYS, 0)
        mgr = agent_manager.AgentManager(self.conf, driver,
                                         store=agent_fakes.MemoryStore())
        api = rpcapi.ControllerAPI(self.transport, version_cap=version_cap)
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
        self.assertEqual({'total_iops_sec': 500}, first['static'])
        self.assertIsNone(first['gap'])

    def test_columns_reach_the_store(self):
        self.serve(self.controller, 'new')
        sampler, api = self.agent()
        self.assertTrue(api.sends_columns())
        batch = sampler.run_once()
        self.assertIs(dict, type(batch.to_wire()['disks']))
        self.assert_stored()
        self.assertEqual(0, self.controller.stats['dropped'])

    def test_old_form_still_reaches_the_store(self):
        self.serve(self.controller, 'new')
        sampler, api = self.agent(version_cap='1.0')
        self.assertFalse(api.sends_columns())
        sampler.run_once()
        self.assert_stored()

    def test_a_1_0_controller_takes_only_the_1_0_form(self):
        old = OldController()
        self.serve(old, 'old')
        newest, _ = self.agent()
        newest.run_once()                 # refused by old's dispatcher
        capped, _ = self.agent(version_cap='1.0')
        capped.run_once()
        self.assertTrue(self.wait_for(lambda: old.batches))
        time.sleep(0.5)                   # the 1.1 cast went first
        [got] = old.batches
        self.assertEqual(list, type(got['disks']))
        self.assertEqual({d.instance_uuid for d in self.disks},
                         {d['instance_uuid'] for d in got['disks']})
