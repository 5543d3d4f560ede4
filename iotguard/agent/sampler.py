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

"""One sampling pass: bulk counters -> rates -> one batch to the controllers.

Per interval: one bulk statistics read from the driver, the rates of every
disk (:mod:`iotguard.wire.rates`), one ``report_samples`` cast of the host's
:class:`iotguard.wire.batch.Batch`, and one ``agent_heartbeat``. A counter
that went backwards (reboot, re-attach) is reported as a gap and also
marks the instance for a re-check of its cap, since the domain was
likely rebuilt. With ``[agent] urgent_samples`` the batch marks the disks
whose demand rose since the last pass (:func:`iotguard.wire.rates.rising`)
so that the controller may act on them before its next round. With
``[agent] latency_histograms`` the driver's percentiles
(:attr:`iotguard.wire.rates.Readings.p99_ms`) go into the batch too.
"""

import collections.abc
import time

import numpy as np
import numpy.typing as npt
from oslo_config import cfg
from oslo_log import log as logging

from iotguard.agent import manager as manager_mod
from iotguard.agent.virt import base
from iotguard import version
from iotguard.wire import batch as batch_mod
from iotguard.wire import rates
from iotguard.wire import rpcapi

LOG = logging.getLogger(__name__)

_RESET = rates.GAP_CODES.index(rates.GAP_RESET)


class Sampler:

    def __init__(self, conf: cfg.ConfigOpts, driver: base.Driver,
                 manager: manager_mod.AgentManager,
                 controller_api: rpcapi.ControllerAPI,
                 clock: collections.abc.Callable[[], float] = time.monotonic,
                 wall_clock: collections.abc.Callable[[], float] = time.time
                 ) -> None:
        self.host = conf.host
        self.interval_s = conf.agent.sample_interval
        self.driver = driver
        self.manager = manager
        self.controller_api = controller_api
        self._clock = clock
        self._wall_clock = wall_clock
        self.table = rates.Table(
            max_gap_s=rates.STALE_INTERVALS * self.interval_s)
        # (read keys, batch.Disks, listing, positions of the listed disks
        #  in the read or None: all)
        self._layout: tuple[list[base.Key], batch_mod.Disks,
                            dict[base.Key, base.Disk],
                            npt.NDArray[np.intp] | None] = (
            [], batch_mod.Disks.of([]), {}, None)
        self.urgent: bool = conf.agent.urgent_samples
        # the reads between passes ([agent] watch_interval), for watch()
        self._watch = rates.Table(max_gap_s=self.interval_s)
        # the last pass's read keys and rates, for rates.rising
        self._before: tuple[list[base.Key], npt.NDArray[np.float64]] = (
            [], np.zeros((len(rates.RATE_FIELDS), 0)))
        self._started_at = wall_clock()
        self._outage_since: float | None = None  # first failed report

    def watch(self) -> frozenset[base.Key]:
        """The disks whose demand rose since the last pass, read now.

        One bulk read between two passes (``[agent] watch_interval``):
        each listed disk's rates since the last such read against its
        rates of the last pass (:func:`iotguard.wire.rates.rising`), so
        that a neighbour filling the queue is seen within one watch
        interval rather than one sample interval. Nothing when urgent
        samples are off or the disks changed since the last pass.
        """
        if not self.urgent:
            return frozenset()
        at = self._clock()
        listed = self._listed(self.driver.get_block_stats(), self._layout[2])
        step = self._watch.update(at, listed)
        self._watch.prune(listed.keys)
        keys, before = self._before
        if listed.keys != keys:
            return frozenset()
        rose = np.flatnonzero(rates.rising(before, step.rates))
        return frozenset(keys[i] for i in rose.tolist())

    def collect(self, disks: dict[base.Key, base.Disk],
                rose: frozenset[base.Key] = frozenset()) -> batch_mod.Batch:
        """Read the counters once and build the batch, in columns.

        In the steady state (the same disks as the last pass) nothing is
        done per disk in Python but for the disks with a gap. ``rose``:
        disks :meth:`watch` found rising, marked urgent too.
        """
        at = self._clock()
        readings = self.driver.get_block_stats()
        timestamp = self._wall_clock()
        listed = self._listed(readings, disks)
        measured = self.table.update(at, listed)
        self.table.prune(readings.keys)
        for i in np.flatnonzero(measured.gap == _RESET).tolist():
            self.manager.mark_dirty(listed.keys[i][0], 'counter reset')
        urgent = None
        if self.urgent:
            # The same disks as the last pass (the steady state): compared
            # row by row; after a change of the listing, from the next one.
            if listed.keys == self._before[0]:
                urgent = rates.rising(self._before[1], measured.rates)
                if rose:
                    urgent |= np.array([key in rose for key in listed.keys])
            self._before = (listed.keys, measured.rates)
        return batch_mod.Batch.of_pass(timestamp, self._layout[1], measured,
                                       urgent, listed.p99_ms)

    def _listed(self, readings: rates.Readings,
                disks: dict[base.Key, base.Disk]) -> rates.Readings:
        """The readings of the listed disks; the batch's disk columns.

        A disk read but not listed (it appeared between the listing and
        the read) waits for the next pass. Redone only when the read's
        disks or the listing changed.
        """
        if readings.keys == self._layout[0] and disks == self._layout[2]:
            index = self._layout[3]
        else:
            index = np.array([i for i, key in enumerate(readings.keys)
                              if key in disks], dtype=np.intp)
            self._layout = (list(readings.keys), batch_mod.Disks.of([
                (key[0], key[1], disks[key].volume_id, disks[key].project_id,
                 disks[key].static) for key in readings.keys
                if key in disks]), dict(disks),
                None if len(index) == len(readings.keys) else index)
            index = self._layout[3]
        return readings if index is None else readings.take(index)

    def run_once(self, disks: dict[base.Key, base.Disk] | None = None,
                 rose: frozenset[base.Key] = frozenset()
                 ) -> batch_mod.Batch:
        """Sample and report; returns the batch (for tests and the bench)."""
        if disks is None:
            disks = self.driver.list_disks()
        batch = self.collect(disks, rose)
        self.report(batch)
        return batch

    def report(self, batch: batch_mod.Batch) -> bool:
        """Cast the batch and the heartbeat; True when both went out.

        A bus without a controller (no fanout exchange yet) or a broker
        being restarted is an outage, not an error of the interval: one
        warning when it starts, one message when reports go out again.
        The caps in force keep their leases meanwhile.
        """
        ctxt: rpcapi.Context = {}
        try:
            self.controller_api.report_samples(ctxt, self.host, batch)
            self.controller_api.agent_heartbeat(ctxt, self.host, {
                'driver': type(self.driver).__name__,
                'version': version.version_info.version_string(),
                'started_at': self._started_at,
                'timestamp': batch.read_at,
                'interval_s': self.interval_s,
                'disks': len(batch),
                'caps': self.manager.caps_count()})
        except Exception as e:
            if self._outage_since is None:
                self._outage_since = batch.read_at
                LOG.warning('Cannot report samples to the controllers (%s); '
                            'retrying every interval, caps in force lapse '
                            'at their leases', e)
            return False
        if self._outage_since is not None:
            LOG.info('Reporting samples to the controllers again after '
                     '%.0f s', batch.read_at - self._outage_since)
            self._outage_since = None
        return True
