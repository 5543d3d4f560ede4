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

"""The agent process wired together: driver, manager, sampler, RPC, timer.

Threads only (no eventlet): the RPC server uses the ``threading`` executor,
libvirt events run in the driver's thread, one timer thread runs the
interval: ``manager.periodic`` (leases, re-applies) then ``sampler.collect``
(statistics), and one report thread casts the newest batch to the
controllers, so a cast that waits for a broker being restarted never
delays the lease expiry. A failure in one interval is logged; the next
runs.
"""

import collections.abc
import math
import threading
import time
from wsgiref import simple_server

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging

from iotguard.agent import manager as manager_mod
from iotguard.agent import sampler as sampler_mod
from iotguard.agent import virt
from iotguard.agent.virt import base
from iotguard import metrics
from iotguard import service
from iotguard.wire import batch as batch_mod
from iotguard.wire import rpc
from iotguard.wire import rpcapi

LOG = logging.getLogger(__name__)


class AgentService:

    def __init__(self, conf: cfg.ConfigOpts, driver: base.Driver | None = None,
                 transport: oslo_messaging.Transport | None = None,
                 clock: collections.abc.Callable[[], float] | None = None,
                 timer: bool = True) -> None:
        # ``clock`` (UNIX time) and ``timer=False``: the all-in-one runs the
        # intervals on simulated time by calling tick() itself.
        self.conf = conf
        self._clock = clock
        self._timer = timer
        self.host = conf.host
        self.interval_s = conf.agent.sample_interval
        self.watch_s = (conf.agent.watch_interval
                        if conf.agent.urgent_samples else 0.0)
        self._next_pass = -math.inf     # watch(): when a pass is due
        self.driver = driver or virt.load(conf.agent.virt_driver, conf)
        self.transport = transport
        self.manager = manager_mod.AgentManager(conf, self.driver,
                                                clock=clock or time.time)
        self.sampler: sampler_mod.Sampler  # by start()
        self.server: oslo_messaging.MessageHandlingServer | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._reporter: threading.Thread | None = None
        self._outbox: batch_mod.Batch | None = None  # newest, not yet sent
        self._outbox_ready = threading.Condition()
        self.passes = metrics.Passes()
        self.metrics_server: simple_server.WSGIServer | None = None

    def start(self) -> None:
        if self.transport is None:
            self.transport = rpc.get_transport(self.conf)
        clocks = ({} if self._clock is None
                  else {'clock': self._clock, 'wall_clock': self._clock})
        self.sampler = sampler_mod.Sampler(
            self.conf, self.driver, self.manager,
            rpcapi.ControllerAPI(self.transport), **clocks)
        self.driver.start(lifecycle_callback=self.manager.mark_dirty)
        self.manager.recover()
        self.server = rpc.get_server(self.transport, rpc.TOPIC_AGENT,
                                     self.host, [self.manager])
        self.server.start()
        self.metrics_server = metrics.serve(
            self.conf.prometheus.host, self.conf.prometheus.agent_port,
            self.collect_metrics)
        if self._timer:
            self._reporter = threading.Thread(target=self._report,
                                              name='iotguard-agent-report',
                                              daemon=True)
            self._reporter.start()
            interval_s, step = ((self.watch_s, self.watch)
                                if 0 < self.watch_s < self.interval_s
                                else (self.interval_s, self.tick))
            self._thread = threading.Thread(
                target=service.run_every, args=(interval_s, self._stop, step),
                name='iotguard-agent-interval', daemon=True)
            self._thread.start()
        LOG.info('iotguard-agent on %s started (driver %s, every %.1f s)',
                 self.host, type(self.driver).__name__, self.interval_s)

    def watch(self) -> None:
        """One ``[agent] watch_interval``: the pass when it is due, or now.

        A pass comes early when a disk's demand rose since the last one
        (:meth:`iotguard.agent.sampler.Sampler.watch`); the next is then
        due a whole sample interval later.
        """
        now = time.monotonic()
        rose: frozenset[base.Key] = frozenset()
        if now < self._next_pass:
            try:
                rose = self.sampler.watch()
            except Exception as e:
                LOG.debug('Watch read failed (%s); the pass reads again', e)
            if not rose:
                return
        self._next_pass = now + self.interval_s
        self.tick(rose)

    def tick(self, rose: frozenset[base.Key] = frozenset()) -> None:
        """One interval: caps first, then statistics.

        With the timer, the batch goes to the report thread: a cast that
        blocks while the broker is away must not hold the next interval's
        lease expiry back. Without it (an owner drives), it is sent here.
        """
        started = time.monotonic()
        try:
            disks = self.driver.list_disks()
            self.manager.periodic(disks)
            batch = self.sampler.collect(disks, rose)
        except base.Unavailable as e:
            # libvirtd restarting: its caps stay in QEMU meanwhile
            LOG.warning('Agent interval skipped: %s; retrying next '
                        'interval', e)
            self.passes.failed += 1
            return
        except Exception:
            LOG.exception('Agent interval failed; retrying next interval')
            self.passes.failed += 1
            return
        self.passes.add(time.monotonic() - started, len(disks))
        if self._reporter is None:
            self.sampler.report(batch)
            return
        with self._outbox_ready:
            self._outbox = batch   # the newest wins; older ones are stale
            self._outbox_ready.notify()

    def _report(self) -> None:
        while True:
            with self._outbox_ready:
                while self._outbox is None and not self._stop.is_set():
                    self._outbox_ready.wait()
                if self._stop.is_set() or self._outbox is None:
                    return
                batch, self._outbox = self._outbox, None
            try:
                self.sampler.report(batch)
            except Exception:
                LOG.exception('Report failed; the next interval sends its '
                              'own')

    def stop(self) -> None:
        self._stop.set()
        with self._outbox_ready:
            self._outbox_ready.notify()
        if self.server is not None:
            self.server.stop()
            self.server.wait()
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self._reporter is not None:
            # A cast blocked on an unreachable broker never returns; the
            # thread is a daemon.
            self._reporter.join(timeout=5)
        self.driver.stop()
        if self.metrics_server is not None:
            self.metrics_server.shutdown()

    def collect_metrics(self) -> list[metrics.Family]:
        """What Prometheus reads from this agent (:mod:`metrics`)."""
        return self.passes.collect(self.manager.caps_count(),
                                   self.manager.lapsed)

    def wait(self) -> None:
        self._stop.wait()
