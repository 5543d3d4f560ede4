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
disk (:mod:`iotguard.rates`), one ``report_samples`` fanout cast with
every disk of the host, and one ``agent_heartbeat``. A counter that went
backwards (reboot, re-attach) is reported as a gap and also marks the
instance for a re-check of its cap, since the domain was likely rebuilt.
"""

import time

from oslo_log import log as logging

from iotguard import batch as batch_mod
from iotguard import rates
from iotguard import version

LOG = logging.getLogger(__name__)


class Sampler:

    def __init__(self, conf, driver, manager, controller_api,
                 clock=time.monotonic, wall_clock=time.time):
        self.host = conf.host
        self.interval_s = conf.agent.sample_interval
        self.driver = driver
        self.manager = manager
        self.controller_api = controller_api
        self._clock = clock
        self._wall_clock = wall_clock
        self.series = rates.Series(
            max_gap_s=rates.STALE_INTERVALS * self.interval_s)
        self._driver_name = type(driver).__name__
        self._started_at = wall_clock()
        self._outage_since = None   # first failed report of an outage

    def collect(self, disks):
        """Read the counters once and build the batch, in columns.

        :mod:`iotguard.batch`'s wire form, built from the rates without a
        dict per disk.
        """
        at = self._clock()
        counters = self.driver.get_all_block_stats()
        timestamp = self._wall_clock()
        out = batch_mod.Builder(timestamp, self.interval_s)
        add = out.add
        update = self.series.update
        cap_in_force = self.manager.cap_in_force
        for key, values in counters.items():
            disk = disks.get(key)
            if disk is None:
                continue
            result = update(key, rates.Reading(at, values))
            if type(result) is rates.Gap:
                gap, measured = result.reason, None
                if result.reason == rates.GAP_RESET:
                    self.manager.mark_dirty(key[0], 'counter reset')
            else:
                gap, measured = None, result.values()
            in_force = cap_in_force(key)
            add(key[0], key[1], disk.volume_id, disk.project_id,
                result.interval_s, gap, measured, disk.static,
                *(in_force or ()))
        self.series.prune(counters)
        return out.wire()

    def heartbeat_info(self, batch):
        return {'driver': self._driver_name,
                'version': version.version_info.version_string(),
                'started_at': self._started_at,
                'timestamp': batch['timestamp'],
                'interval_s': self.interval_s,
                'disks': batch_mod.size(batch),
                'caps': self.manager.caps_count()}

    def run_once(self, disks=None):
        """Sample and report; returns the batch (for tests and the bench)."""
        if disks is None:
            disks = self.driver.list_disks()
        batch = self.collect(disks)
        self.report(batch)
        return batch

    def report(self, batch):
        """Cast the batch and the heartbeat; True when both went out.

        A bus without a controller (no fanout exchange yet) or a broker
        being restarted is an outage, not an error of the interval: one
        warning when it starts, one message when reports go out again.
        The caps in force keep their leases meanwhile.
        """
        ctxt = {}
        try:
            self.controller_api.report_samples(ctxt, self.host, batch)
            self.controller_api.agent_heartbeat(ctxt, self.host,
                                                self.heartbeat_info(batch))
        except Exception as e:
            if self._outage_since is None:
                self._outage_since = batch['timestamp']
                LOG.warning('Cannot report samples to the controllers (%s); '
                            'retrying every interval, caps in force lapse '
                            'at their leases', e)
            return False
        if self._outage_since is not None:
            LOG.info('Reporting samples to the controllers again after '
                     '%.0f s', batch['timestamp'] - self._outage_since)
            self._outage_since = None
        return True
