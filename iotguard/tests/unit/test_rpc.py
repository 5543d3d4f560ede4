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

"""The RPC clients give up on a dead broker instead of blocking."""

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
