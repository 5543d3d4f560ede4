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

"""iotguard-controller: the per-domain decision loop."""

import sys

import cotyledon
from cotyledon import types
from oslo_config import cfg

from iotguard.controller import service as controller_service
from iotguard import service


class ControllerWorker(cotyledon.Service):
    name = 'iotguard-controller'

    def __init__(self, worker_id: types.WorkerId,
                 conf: cfg.ConfigOpts) -> None:
        super().__init__(worker_id)
        self.controller = controller_service.ControllerService(conf)

    def run(self) -> None:
        self.controller.start()
        self.controller.wait()

    def terminate(self) -> None:
        self.controller.stop()


def main() -> None:
    conf = service.prepare_service(sys.argv[1:])
    manager = cotyledon.ServiceManager()
    manager.add(ControllerWorker, workers=1, args=(conf,))
    manager.run()
