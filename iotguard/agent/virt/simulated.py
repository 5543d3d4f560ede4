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

"""The agent's driver over the simulator's world (``iotguard.sim.world``).

It shows the disks the world places on ``[DEFAULT] host``, so a whole cloud
of agents runs without libvirt. When the driver builds the world itself
(from ``[agent] simulated_scenario``) it advances it with the wall clock
before every statistics read; a world passed in (all-in-one, tests,
benchmark) is advanced by its owner.
"""

import collections.abc
import contextlib
import time
from typing import Any

from oslo_config import cfg

from iotguard.agent.virt import base
from iotguard.sim import scenario
from iotguard.sim import world as world_mod
from iotguard.wire import caps
from iotguard.wire import rates


class SimulatedDriver(base.Driver):

    def __init__(self, conf: cfg.ConfigOpts,
                 world: world_mod.World | None = None,
                 clock: collections.abc.Callable[[], float] = time.monotonic,
                 lock: contextlib.AbstractContextManager[Any] | None = None
                 ) -> None:
        self.host = conf.host
        self._conf = conf
        self._world = world
        # Held around every read of the counters and every read or write
        # of an iotune: the all-in-one steps its world in another thread.
        self._lock = lock or contextlib.nullcontext()
        self._owned: world_mod.World | None = None  # built by start()
        self._clock = clock
        self._t0 = 0.0
        # What the world's disk ids give, kept until they change:
        self._ids: list[str] | None = None
        self._mine: list[str] = []  # this host's disk ids
        self._listing: dict[base.Key, base.Disk] = {}  # in the order of _mine
        self._keys: list[base.Key] = []  # the same tuples every pass

    @property
    def world(self) -> world_mod.World:
        assert self._world is not None, 'start() builds the world'
        return self._world

    def start(self, lifecycle_callback: base.Callback | None = None) -> None:
        if self._world is None:
            name = self._conf.agent.simulated_scenario
            if not name:
                raise ValueError('[agent] simulated_scenario is required '
                                 'by the simulated driver')
            self._world = self._owned = world_mod.World(
                scenario.load(name), seed=self._conf.agent.simulated_seed)
        self._t0 = self._clock() - self._world.now

    def _catch_up(self) -> None:
        if self._owned is not None:
            dt = (self._clock() - self._t0) - self._owned.now
            if dt > 0:
                self._owned.step(dt)

    def _my_disks(self) -> list[str]:
        """This host's disk ids, read again when the world's disks change."""
        ids = self.world.disk_ids()
        if ids != self._ids:
            self._ids, self._mine, self._listing = ids, [], {}
            for disk_id in ids:
                info: dict[str, Any] = self.world.disk_info(disk_id)
                if info.get('host', 'host1') == self.host:
                    disk = base.Disk(
                        instance_uuid=info['instance_uuid'], dev=info['dev'],
                        volume_id=info.get('volume_id'),
                        project_id=info.get('project_id'),
                        static=caps.full(self.world.static_iotune(disk_id)))
                    self._mine.append(disk_id)
                    self._listing[disk.key] = disk
            self._keys = list(self._listing)
        return self._mine

    def list_disks(self) -> dict[base.Key, base.Disk]:
        self._my_disks()
        return dict(self._listing)

    def get_block_stats(self) -> rates.Readings:
        self._catch_up()
        ids = self._my_disks()
        with self._lock:
            return rates.Readings(self._keys, self.world.counter_array(ids))

    @staticmethod
    def _id(instance_uuid: str, dev: str) -> str:
        return '%s/%s' % (instance_uuid, dev)

    def get_iotune(self, instance_uuid: str, dev: str) -> dict[str, int]:
        with self._lock:
            limits = self.world.get_iotune(self._id(instance_uuid, dev))
        return caps.full(limits)

    def set_iotune(self, instance_uuid: str, dev: str, limits: caps.Limits,
                   static: caps.Limits | None = None) -> None:
        self._catch_up()
        with self._lock:
            self.world.set_iotune(self._id(instance_uuid, dev),
                                  caps.full(limits))
