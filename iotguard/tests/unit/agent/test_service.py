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

import logging
import threading
from unittest import mock

import fixtures

from iotguard.agent import service
from iotguard.agent import virt
from iotguard.agent.virt import base
from iotguard.agent.virt import libvirt as lv
from iotguard.agent.virt import simulated
from iotguard.tests import base as test_base
from iotguard.tests.unit.agent import fakes
from iotguard.wire import caps
from iotguard.wire import rpc


class LoadTest(test_base.TestCase):

    def test_entry_points(self):
        self.assertIsInstance(virt.load('simulated', self.conf),
                              simulated.SimulatedDriver)
        self.assertIsInstance(virt.load('libvirt', self.conf),
                              lv.LibvirtDriver)

    def test_unknown(self):
        e = self.assertRaises(ValueError, virt.load, 'xen', self.conf)
        self.assertIn('libvirt, simulated', str(e))


class AgentServiceTest(test_base.TestCase):
    """Wiring only, over oslo.messaging's in-memory fake:// transport."""

    def setUp(self):
        super().setUp()
        self.flags(host='h1')
        self.flags(sample_interval=3600.0, state_file='', group='agent')
        self.driver = fakes.FakeDriver([base.Disk(
            fakes.UUID_A, 'vda', static=caps.full({'total_iops_sec': 9}))])
        self.driver.start = mock.Mock()
        self.driver.stop = mock.Mock()
        self.transport = rpc.get_transport(self.conf, url='fake://')
        self.addCleanup(self.transport.cleanup)

    def test_start_tick_stop(self):
        agent = service.AgentService(self.conf, driver=self.driver,
                                     transport=self.transport)
        sent = []
        first = threading.Event()

        def report(ctxt, host, samples):
            sent.append((host, samples))
            first.set()
        with mock.patch('iotguard.wire.rpcapi.ControllerAPI.'
                        'report_samples', side_effect=report):
            agent.start()
            self.driver.start.assert_called_once_with(
                lifecycle_callback=agent.manager.mark_dirty)
            self.assertTrue(first.wait(10), 'the first interval never ran')
            agent.stop()
        self.driver.stop.assert_called_once_with()
        # The timer ran its first interval right away.
        self.assertEqual('h1', sent[0][0])
        self.assertEqual([fakes.UUID_A],
                         sent[0][1].instance_uuid)

    def test_watch_passes_when_due_or_when_a_disk_rose(self):
        self.flags(sample_interval=1.0, watch_interval=0.25,
                   urgent_samples=True, group='agent')
        agent = service.AgentService(self.conf, driver=self.driver,
                                     transport=self.transport, timer=False)
        self.assertEqual(0.25, agent.watch_s)
        agent.sampler = mock.Mock()
        agent.sampler.watch.return_value = frozenset()
        with mock.patch.object(agent, 'tick') as tick:
            agent.watch()        # the first: a pass is due
            agent.watch()        # nothing rose: no pass
            agent.sampler.watch.return_value = frozenset({'x'})
            agent.watch()        # one rose: the pass now, marking it
            agent.sampler.watch.side_effect = RuntimeError('libvirt away')
            agent.watch()        # a failed read waits for the pass
        self.assertEqual([mock.call(frozenset()), mock.call(frozenset({'x'}))],
                         tick.call_args_list)
        self.assertEqual(3, agent.sampler.watch.call_count)
        # without urgent samples, no watch
        self.flags(urgent_samples=False, group='agent')
        self.assertEqual(0.0, service.AgentService(
            self.conf, driver=self.driver, transport=self.transport,
            timer=False).watch_s)

    def test_failed_interval_is_logged_not_raised(self):
        log = self.useFixture(fixtures.FakeLogger())
        agent = service.AgentService(self.conf, driver=self.driver,
                                     transport=self.transport)
        agent.sampler = mock.Mock()
        with mock.patch.object(self.driver, 'list_disks',
                               side_effect=RuntimeError('boom')):
            agent.tick()
        self.assertIn('Agent interval failed', log.output)

    def test_unavailable_hypervisor_is_one_warning(self):
        # libvirtd restarting: one line an interval, not a traceback
        log = self.useFixture(fixtures.FakeLogger(level=logging.WARNING))
        agent = service.AgentService(self.conf, driver=self.driver,
                                     transport=self.transport)
        agent.sampler = mock.Mock()
        with mock.patch.object(self.driver, 'list_disks', side_effect=(
                base.Unavailable('libvirt at qemu:///system: refused'))):
            agent.tick()
        self.assertEqual(
            ['Agent interval skipped: libvirt at qemu:///system: refused; '
             'retrying next interval'], log.output.splitlines())
        self.assertEqual(1, agent.passes.failed)

    def test_report_outage_does_not_stop_lease_expiry(self):
        log = self.useFixture(fixtures.FakeLogger())
        agent = service.AgentService(self.conf, driver=self.driver,
                                     transport=self.transport, timer=False)
        with mock.patch('iotguard.wire.rpcapi.ControllerAPI.'
                        'report_samples',
                        side_effect=RuntimeError('no exchange')):
            agent.start()
            self.addCleanup(agent.stop)
            with mock.patch.object(agent.manager, 'periodic') as periodic:
                agent.tick()
                agent.tick()
        self.assertEqual(2, periodic.call_count)
        self.assertNotIn('Agent interval failed', log.output)
        self.assertEqual(1, log.output.count('Cannot report samples'))
        # timer=False: no interval thread, the owner calls tick().
        self.assertIsNone(agent._thread)

    def test_blocked_report_does_not_hold_the_interval(self):
        # A cast waiting for a broker that is away must not keep the next
        # interval (and its lease expiry) from running.
        agent = service.AgentService(self.conf, driver=self.driver,
                                     transport=self.transport)
        release = threading.Event()
        entered = threading.Event()

        def blocked(ctxt, host, samples):
            entered.set()
            release.wait(10)
        self.addCleanup(release.set)
        with mock.patch('iotguard.wire.rpcapi.ControllerAPI.'
                        'report_samples', side_effect=blocked):
            agent.start()
            self.addCleanup(agent.stop)
            self.assertTrue(entered.wait(10), 'no report was sent')
            with mock.patch.object(agent.manager, 'periodic') as periodic:
                agent.tick()
                agent.tick()
            self.assertEqual(2, periodic.call_count)
            # Only the newest batch waits behind the blocked cast.
            self.assertIsNotNone(agent._outbox)
            release.set()
