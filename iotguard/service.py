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

"""Process set-up shared by every iotguard command."""

import collections.abc
import sys
import threading
import time
from typing import Any

import cotyledon
from cotyledon import types
from oslo_config import cfg
from oslo_log import log

from iotguard import conf as iotguard_conf
from iotguard import version


def prepare_service(argv: list[str] | None = None,
                    config_files: list[str] | None = None) -> cfg.ConfigOpts:
    """Return a fresh, parsed ``ConfigOpts`` with logging set up."""
    conf = cfg.ConfigOpts()
    log.register_options(conf)
    iotguard_conf.register_opts(conf)
    conf(argv if argv is not None else [], project='iotguard',
         version=version.version_info.version_string(),
         default_config_files=config_files)
    log.setup(conf, 'iotguard')
    return conf


def run_every(interval_s: float, stop: threading.Event,
              fn: collections.abc.Callable[[], object]) -> None:
    """Call ``fn()`` every ``interval_s`` seconds until ``stop`` is set.

    A call that overruns its interval makes the next one skip ahead rather
    than bunch up.
    """
    deadline = time.monotonic()
    while not stop.is_set():
        fn()
        deadline += interval_s
        now = time.monotonic()
        if deadline < now:
            deadline = now + interval_s
        stop.wait(deadline - now)


class Worker(cotyledon.Service):
    """The one worker process of iotguard-agent or iotguard-controller.

    A subclass names the process (``name``) and gives the class of its
    service (``service_class``: built from the configuration in the
    worker, with ``start``, ``wait`` and ``stop``).
    """

    service_class: Any

    def __init__(self, worker_id: types.WorkerId,
                 conf: cfg.ConfigOpts) -> None:
        super().__init__(worker_id)
        self.service = self.service_class(conf)

    def run(self) -> None:
        self.service.start()
        self.service.wait()

    def terminate(self) -> None:
        self.service.stop()

    @classmethod
    def main(cls) -> None:
        """The command: its configuration, then the worker under cotyledon."""
        manager = cotyledon.ServiceManager()
        manager.add(cls, workers=1, args=(prepare_service(sys.argv[1:]),))
        manager.run()
