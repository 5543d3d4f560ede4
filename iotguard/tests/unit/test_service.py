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

import io
import threading
from unittest import mock

from oslo_config import cfg
from oslo_config import generator
from oslo_messaging._drivers import impl_rabbit

from iotguard.agent import service as agent_service
from iotguard.cmd import agent as cmd_agent
from iotguard.cmd import controller as cmd_controller
from iotguard.controller import service as controller_service
from iotguard import service
from iotguard.tests import base
from iotguard.wire import rpc


class RunEveryTest(base.TestCase):

    def test_calls_until_stopped(self):
        stop = threading.Event()
        calls = []

        def tick():
            calls.append(len(calls))
            if len(calls) == 3:
                stop.set()

        service.run_every(0.0, stop, tick)
        self.assertEqual([0, 1, 2], calls)

    def test_stopped_before_start_calls_nothing(self):
        stop = threading.Event()
        stop.set()
        service.run_every(0.0, stop, self.fail)


class WorkerTest(base.TestCase):

    def test_commands_build_their_service_in_the_worker(self):
        for command, name, service_class in (
                (cmd_agent, 'iotguard-agent', agent_service.AgentService),
                (cmd_controller, 'iotguard-controller',
                 controller_service.ControllerService)):
            worker_class = command.main.__self__
            self.assertEqual(name, worker_class.name)
            with mock.patch.object(worker_class, 'service_class') as made:
                worker = worker_class(0, self.conf)
            self.assertIs(service_class, worker_class.service_class)
            made.assert_called_once_with(self.conf)
            worker.run()
            worker.terminate()
            self.assertEqual([mock.call.start(), mock.call.wait(),
                              mock.call.stop()], made.return_value.mock_calls)

    def test_main_runs_one_worker_on_the_command_line(self):
        with mock.patch.object(service, 'prepare_service') as prepare, \
                mock.patch('cotyledon.ServiceManager') as manager, \
                mock.patch('sys.argv', ['iotguard-agent', '--debug']):
            cmd_agent.main()
        prepare.assert_called_once_with(['--debug'])
        manager.return_value.add.assert_called_once_with(
            cmd_agent.AgentWorker, workers=1,
            args=(prepare.return_value,))
        manager.return_value.run.assert_called_once_with()


class MessagingDefaultsTest(base.TestCase):

    def test_heartbeat_threshold_is_iotguards_unless_configured(self):
        conf = service.prepare_service([])
        self.assertEqual(
            10, conf.oslo_messaging_rabbit.heartbeat_timeout_threshold)
        conf.set_override('heartbeat_timeout_threshold', 45,
                          group='oslo_messaging_rabbit')
        self.assertEqual(
            45, conf.oslo_messaging_rabbit.heartbeat_timeout_threshold)

    def test_the_transport_keeps_the_default(self):
        # oslo.messaging registers its rabbit options again when it loads
        # the driver: the default must survive that.
        conf = service.prepare_service([])
        transport = rpc.get_transport(conf, url='rabbit://u:p@127.0.0.1:1/')
        self.addCleanup(transport.cleanup)
        self.assertEqual(10, transport.conf.oslo_messaging_rabbit
                         .heartbeat_timeout_threshold)
        self.assertEqual(4, transport.conf.oslo_messaging_rabbit
                         .rabbit_interval_max)

    def test_the_configuration_sample_shows_it(self):
        # What oslo-config-generator writes, through iotguard's hook (it
        # changes oslo.messaging's option objects: put back after).
        was = {opt.name: opt.default for opt in impl_rabbit.rabbit_opts
               if opt.name in service.RABBIT_DEFAULTS}
        self.addCleanup(cfg.set_defaults, impl_rabbit.rabbit_opts, **was)
        conf = cfg.ConfigOpts()
        generator.register_cli_opts(conf)
        conf(['--namespace', 'iotguard', '--namespace', 'oslo.messaging'])
        sample = io.StringIO()
        generator.generate(conf, output_file=sample)
        self.assertIn('\n#heartbeat_timeout_threshold = 10\n',
                      sample.getvalue())
        self.assertIn('\n#rabbit_interval_max = 4\n', sample.getvalue())
