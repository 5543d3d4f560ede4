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

"""iotguard-agent: per-host block statistics and live, leased caps."""

import sys

import cotyledon
from cotyledon import types
from oslo_config import cfg

from iotguard.agent import service as agent_service
from iotguard import service


class AgentWorker(cotyledon.Service):
    name = 'iotguard-agent'

    def __init__(self, worker_id: types.WorkerId,
                 conf: cfg.ConfigOpts) -> None:
        super().__init__(worker_id)
        self.agent = agent_service.AgentService(conf)

    def run(self) -> None:
        self.agent.start()
        self.agent.wait()

    def terminate(self) -> None:
        self.agent.stop()


def main() -> None:
    conf = service.prepare_service(sys.argv[1:])
    manager = cotyledon.ServiceManager()
    manager.add(AgentWorker, workers=1, args=(conf,))
    manager.run()
