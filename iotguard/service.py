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
from oslo_messaging import opts as messaging_opts

from iotguard import conf as iotguard_conf
from iotguard import version


#: oslo.messaging's ``[oslo_messaging_rabbit]`` defaults iotguard's
#: services change. ``heartbeat_timeout_threshold``: a connection whose
#: peer has sent nothing for twice this is declared dead and reopened
#: (oslo.messaging's 60 s: a link cut for less than 120 s is never noticed,
#: and after it comes back TCP's backed-off retransmissions leave the
#: agent deaf for about as long again; its caps lapse meanwhile, its floors
#: are not kept). RabbitMQ's own guidance is 5-20 s.
#: ``rabbit_interval_max``: the longest wait between two attempts to
#: reconnect (oslo.messaging's 30 s: after a broker outage of minutes, up
#: to 30 s more without samples or caps once it is back; caps lapse and
#: floors go unkept meanwhile). The attempts still back off (1, 3, then
#: every 4 s); a refused connection costs the broker next to nothing.
RABBIT_DEFAULTS = {'heartbeat_timeout_threshold': 10,
                   'rabbit_interval_max': 4}
RABBIT_GROUP = 'oslo_messaging_rabbit'


def set_messaging_defaults(conf: cfg.ConfigOpts) -> None:
    """iotguard's :data:`RABBIT_DEFAULTS`; a configured value still wins."""
    for group, opts in messaging_opts.list_opts():
        if group == RABBIT_GROUP:
            conf.register_opts(opts, group=group)
    for name, value in RABBIT_DEFAULTS.items():
        conf.set_default(name, value, group=RABBIT_GROUP)


def set_lib_defaults() -> None:
    """:data:`RABBIT_DEFAULTS` in oslo.messaging's own option objects.

    oslo-config-generator's hook (``oslo.config.opts.defaults``): the
    configuration sample and reference then show the defaults iotguard's
    services run with. The objects are oslo.messaging's private ones (its
    ``list_opts`` returns copies); without them, the sample shows the
    library's defaults and nothing else changes.
    """
    try:
        from oslo_messaging._drivers import impl_rabbit
        cfg.set_defaults(impl_rabbit.rabbit_opts, **RABBIT_DEFAULTS)
    except (ImportError, AttributeError):   # pragma: no cover
        pass


def prepare_service(argv: list[str] | None = None,
                    config_files: list[str] | None = None) -> cfg.ConfigOpts:
    """Return a fresh, parsed ``ConfigOpts`` with logging set up."""
    conf = cfg.ConfigOpts()
    log.register_options(conf)
    iotguard_conf.register_opts(conf)
    set_messaging_defaults(conf)
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
