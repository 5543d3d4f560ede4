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

"""The RPC clients: bounded retries, the version they send."""

from unittest import mock

from iotguard.agent import service
from iotguard.bench import batches as batches_mod
from iotguard import caps
from iotguard import rpc
from iotguard import rpcapi
from iotguard.tests import base


class ClientRetryTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.transport = rpc.get_transport(self.conf, url='fake://')
        self.addCleanup(self.transport.cleanup)

    def test_both_clients_retry_a_bounded_number_of_times(self):
        for api in (rpcapi.AgentAPI(self.transport),
                    rpcapi.ControllerAPI(self.transport)):
            self.assertEqual(rpc.SEND_RETRY, api.client.retry)
            self.assertIsNotNone(api.client.retry)
            # prepared per call, the bound is kept
            self.assertEqual(rpc.SEND_RETRY,
                             api.client.prepare(version='1.0').retry)


class ReportSamplesVersionTest(base.TestCase):
    """Routed (1.2), then columns (1.1), as the version cap allows."""

    def setUp(self):
        super().setUp()
        self.transport = rpc.get_transport(self.conf, url='fake://')
        self.addCleanup(self.transport.cleanup)
        out = batches_mod.Builder(1000.0, 5.0)
        out.add('11111111-2222-3333-4444-555555555555', 'vda', None, 'p1',
                5.0, None, (1.0,) * 7, {'total_iops_sec': 100})
        self.columns = out.wire()

    def sent(self, api):
        """What ``report_samples`` casts: (prepare's kwargs, samples)."""
        real, casts = api.client.prepare, []

        def prepare(**kw):
            context = real(**kw)
            context.cast = mock.Mock()
            casts.append((kw, context.cast))
            return context

        with mock.patch.object(api.client, 'prepare', side_effect=prepare):
            api.report_samples({}, 'cn1', self.columns)
        [(kw, cast)] = [(kw, cast) for kw, cast in casts if cast.called]
        [(args, cast_kw)] = cast.call_args_list
        self.assertEqual(('report_samples', 'cn1'),
                         (args[1], cast_kw['host']))
        self.assertEqual(kw.get('fanout') is None,
                         cast_kw.get('route', False))
        return kw, cast_kw['samples']

    def test_newest_casts_to_one_controller_which_routes(self):
        api = rpcapi.ControllerAPI(self.transport)
        kw, samples = self.sent(api)
        self.assertEqual({'version': '1.2'}, kw)
        self.assertIs(self.columns, samples)

    def test_capped_at_1_1_sends_columns_to_all(self):
        api = rpcapi.ControllerAPI(self.transport, version_cap='1.1')
        self.assertTrue(api.sends_columns())
        kw, samples = self.sent(api)
        self.assertEqual({'fanout': True, 'version': '1.1'}, kw)
        self.assertIs(self.columns, samples)

    def test_capped_at_1_0_sends_a_dict_per_disk(self):
        api = rpcapi.ControllerAPI(self.transport, version_cap='1.0')
        self.assertFalse(api.sends_columns())
        kw, samples = self.sent(api)
        self.assertEqual({'fanout': True, 'version': '1.0'}, kw)
        [disk] = samples['disks']
        caps.validate_sample(disk)
        self.assertEqual({'total_iops_sec': 100}, disk['static'])

    def test_the_agent_takes_its_cap_from_upgrade_levels(self):
        self.flags(controller='1.0', group='upgrade_levels')
        agent = service.AgentService(self.conf, driver=mock.Mock(),
                                     transport=self.transport, timer=False)
        with mock.patch.object(agent, 'manager'), \
                mock.patch.object(rpc, 'get_server'):
            agent.start()
        self.assertFalse(agent.sampler.controller_api.sends_columns())
