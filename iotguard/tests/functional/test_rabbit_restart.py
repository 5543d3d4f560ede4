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

"""The agent and the controller survive a RabbitMQ restart mid-run.

A private RabbitMQ node (``rabbit.RabbitNode``: its own name, ports, data
and log directories under a temporary directory; never the machine's
shared node on 5672) is
started for the test. The agent (simulated driver, real time) and the
controller run over it as in the controller's RabbitMQ test: the noisy
neighbour gets capped. Then the broker is stopped for longer than a lease
and started again on the same ports: meanwhile the agent's cap lapses at
its lease (its report casts wait for the broker in their own thread, not
in the interval's); once the broker is back, samples reach the
controller again and the cap is applied to the hypervisor again. Skipped
when no private node starts within 30 s.
"""

import os
import subprocess
import time
import uuid

import fixtures

from iotguard.agent import service as agent_service
from iotguard.controller import service as controller_service
from iotguard.tests import base
from iotguard.tests.fixtures import database
from iotguard.tests.fixtures import rabbit
from iotguard.tests.functional.controller import test_loop_rabbit as lr
from iotguard.wire import rpc

DOWN_S = lr.LEASE_S + 1.0


class RabbitRestartTest(base.TestCase):

    def setUp(self):
        super().setUp()
        try:
            self.broker = self.useFixture(rabbit.RabbitNode())
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            self.skipTest('no private RabbitMQ node: %s' % e)
        run = uuid.uuid4().hex[:10]
        self.host = 'cn-' + run
        self.domain = 'ft-pool-' + run
        self.db = self.useFixture(database.Database('sqlite', self.conf)).db
        path = self.useFixture(fixtures.TempDir()).path
        scenario_file = os.path.join(path, 'noisy.yaml')
        with open(scenario_file, 'w') as f:
            f.write(lr.SCENARIO % {'name': 'noisy-' + run,
                                   'domain': self.domain, 'host': self.host,
                                   'noisy_at': 1.0})
        self.flags(host=self.host)
        self.flags(virt_driver='simulated', simulated_scenario=scenario_file,
                   sample_interval=lr.SAMPLE_S, state_file='', group='agent')
        self.flags(decision_interval=lr.INTERVAL_S,
                   lease_seconds=lr.LEASE_S, register_local_disks=False,
                   group='controller')
        self.transport = rpc.get_transport(self.conf, url=self.broker.url)
        self.addCleanup(self.transport.cleanup)
        self.log = self.useFixture(fixtures.FakeLogger())
        self.disks = lr.seed_membership(self.db, self.domain, self.host,
                                        scenario_file)
        self.noisy = self.disks['noisy']

    def wait_for(self, predicate, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.1)
        return bool(predicate())

    def applied(self):
        """The noisy disk's cap is in force on the hypervisor."""
        world = self.agent.driver.world
        disk_id = '%s/%s' % self.noisy
        return (self.agent.manager.cap_in_force(self.noisy) is not None
                and world.get_iotune(disk_id)
                != world.static_iotune(disk_id))

    def heard_since(self, moment):
        sample = self.controller.store.latest(*self.noisy)
        return sample is not None and sample['timestamp'] > moment

    def test_broker_restart_mid_run(self):
        self.agent = agent_service.AgentService(self.conf,
                                                transport=self.transport)
        self.agent.start()
        self.addCleanup(self.agent.stop)
        self.controller = controller_service.ControllerService(
            self.conf, transport=self.transport, db=self.db)
        self.controller.start()
        self.addCleanup(self.controller.stop)
        self.assertTrue(self.wait_for(self.applied, 20),
                        'the noisy neighbour was never capped')

        self.broker.stop()
        down = time.time()
        self.assertTrue(self.wait_for(lambda: not self.applied(),
                                      DOWN_S + 2 * lr.SAMPLE_S),
                        'the cap did not lapse at its lease while the '
                        'broker was down')
        lapsed_after = time.time() - down
        time.sleep(max(0.0, DOWN_S - (time.time() - down)))
        self.broker.start()
        back = time.time()
        self.assertTrue(self.wait_for(lambda: self.heard_since(back), 30),
                        'no sample reached the controller after the '
                        'broker came back')
        heard_after = time.time() - back
        self.assertTrue(self.wait_for(self.applied, 30),
                        'the cap was not applied again after the broker '
                        'came back')
        applied_after = time.time() - back
        self.assertTrue(self.agent._thread.is_alive())
        self.assertTrue(self.controller._thread.is_alive())
        # oslo.messaging's rabbit driver waits for the broker inside the
        # cast (no error to report); nothing of iotguard failed meanwhile.
        self.assertNotIn('Agent interval failed', self.log.output)
        self.assertNotIn('Decision round failed', self.log.output)
        self.assertNotIn('Report failed', self.log.output)
        print('cap lapsed %.1f s after the broker stopped; after it came '
              'back: samples in %.1f s, cap applied in %.1f s'
              % (lapsed_after, heard_after, applied_after))
