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

"""The RPC clients: bounded retries, what they cast where."""

import dataclasses
from unittest import mock

import numpy as np

from iotguard.tests import base
from iotguard.wire import batch as batch_mod
from iotguard.wire import rpc
from iotguard.wire import rpcapi


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


class ControllerAPITest(base.TestCase):
    """One version: each batch to one controller, shares to their owner."""

    def setUp(self):
        super().setUp()
        self.transport = rpc.get_transport(self.conf, url='fake://')
        self.addCleanup(self.transport.cleanup)
        self.batch = batch_mod.Batch.of_rows([batch_mod.Row(
            '11111111-2222-3333-4444-555555555555', 'vda', 1000.0, 5.0,
            rates=dict.fromkeys(batch_mod.RATES, 1.0),
            static={'total_iops_sec': 100}, project_id='p1')])
        self.api = rpcapi.ControllerAPI(self.transport)

    def sent(self, call, *args):
        """What ``call`` casts: (prepare's kwargs, method, cast kwargs)."""
        real, casts = self.api.client.prepare, []

        def prepare(**kw):
            context = real(**kw)
            context.cast = mock.Mock()
            casts.append((kw, context.cast))
            return context

        with mock.patch.object(self.api.client, 'prepare',
                               side_effect=prepare):
            call({}, *args)
        [(kw, cast)] = [(kw, cast) for kw, cast in casts if cast.called]
        [(args, cast_kw)] = cast.call_args_list
        return kw, args[1], cast_kw

    def test_report_samples_casts_the_wire_form_to_one_controller(self):
        self.assertEqual('1.2', rpcapi.CONTROLLER_RPC_API_VERSION)
        kw, method, cast_kw = self.sent(self.api.report_samples, 'cn1',
                                        self.batch)
        # a batch that marks no disk urgent is 1.0 (older controllers)
        self.assertEqual(({'version': '1.0'}, 'report_samples'),
                         (kw, method))
        self.assertEqual({'host', 'samples'}, set(cast_kw))
        self.assertEqual('cn1', cast_kw['host'])
        self.assertEqual(self.batch.to_wire(), cast_kw['samples'])
        self.assertEqual(self.batch.keys(),
                         batch_mod.decode(cast_kw['samples']).keys())

    def test_a_batch_marking_a_disk_urgent_is_sent_as_1_1(self):
        urgent = dataclasses.replace(self.batch, urgent=np.ones(1, bool))
        kw, method, cast_kw = self.sent(self.api.report_samples, 'cn1',
                                        urgent)
        self.assertEqual(({'version': '1.1'}, 'report_samples'),
                         (kw, method))
        self.assertEqual([0], cast_kw['samples']['disks']['urgent'])
        self.assertEqual([0], batch_mod.decode(
            cast_kw['samples']).urgent_rows())
        kw, _method, _kw = self.sent(self.api.store_samples, 'member-2',
                                     [(None, self.batch), ('cn1', urgent)])
        self.assertEqual('1.1', kw['version'])

    def test_a_batch_with_percentiles_is_sent_as_1_2(self):
        p99 = dataclasses.replace(self.batch, p99_ms=np.full(1, 7.5))
        kw, method, cast_kw = self.sent(self.api.report_samples, 'cn1',
                                        p99)
        self.assertEqual(({'version': '1.2'}, 'report_samples'),
                         (kw, method))
        self.assertEqual([7.5], list(batch_mod.decode(
            cast_kw['samples']).p99_ms))
        both = dataclasses.replace(p99, urgent=np.ones(1, bool))
        for batches in ([(None, self.batch), ('cn1', p99)],
                        [('cn1', both)]):
            kw, _method, _kw = self.sent(self.api.store_samples,
                                         'member-2', batches)
            self.assertEqual('1.2', kw['version'])

    def test_store_samples_casts_the_shares_to_their_owner(self):
        kw, method, cast_kw = self.sent(self.api.store_samples, 'member-2',
                                        [(None, self.batch),
                                         ('cn1', self.batch)])
        self.assertEqual(({'server': 'member-2', 'version': '1.0'},
                          'store_samples'), (kw, method))
        self.assertEqual([(None, self.batch.to_wire()),
                          ('cn1', self.batch.to_wire())],
                         cast_kw['batches'])

    def test_heartbeats_go_to_every_controller(self):
        kw, method, cast_kw = self.sent(self.api.agent_heartbeat, 'cn1',
                                        {'disks': 1})
        self.assertEqual(({'fanout': True}, 'agent_heartbeat'), (kw, method))


class AgentAPITest(base.TestCase):
    """Leases go out on the host's clock."""

    def setUp(self):
        super().setUp()
        self.transport = rpc.get_transport(self.conf, url='fake://')
        self.addCleanup(self.transport.cleanup)

    def cast(self, api, host, caps):
        with mock.patch.object(api.client, 'prepare') as prepare:
            api.apply_caps({}, host, caps)
        prepare.assert_called_once_with(server=host, version='1.0')
        [(args, kw)] = prepare.return_value.cast.call_args_list
        self.assertEqual('apply_caps', args[1])
        return kw['caps']

    def test_leases_are_put_on_the_host_clock(self):
        cap = {'instance_uuid': 'u', 'dev': 'vda', 'limits': {},
               'lease_expires_at': 1000.0, 'decision_id': '1'}
        api = rpcapi.AgentAPI(self.transport, host_offset={
            'cn1': 30.0, 'cn2': -30.0, 'cn3': 0.0}.__getitem__)
        self.assertEqual(1030.0, self.cast(api, 'cn1', [cap])[0][
            'lease_expires_at'])
        self.assertEqual(dict(cap, lease_expires_at=970.0),
                         self.cast(api, 'cn2', [cap])[0])
        self.assertEqual([cap], self.cast(api, 'cn3', [cap]))
        self.assertEqual(1000.0, cap['lease_expires_at'])   # not changed
        self.assertEqual([cap], self.cast(rpcapi.AgentAPI(self.transport),
                                          'cn1', [cap]))
