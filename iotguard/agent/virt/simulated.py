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

import time

from iotguard.agent.virt import base
from iotguard import caps
from iotguard import rates


class SimulatedDriver(base.Driver):

    def __init__(self, conf, world=None, clock=time.monotonic):
        self.host = conf.host
        self._conf = conf
        self._world = world
        self._owns_world = world is None
        self._clock = clock
        self._t0 = None
        self._disks = {}  # disk id -> base.Disk, or False: another host's
        # What the world's disk ids give, kept until they change:
        self._ids = None
        self._mine = []      # this host's disk ids
        self._listing = {}   # key -> base.Disk, in the order of _mine
        self._keys = []      # their keys (the same tuples every pass)

    @property
    def world(self):
        return self._world

    def start(self, lifecycle_callback=None):
        if self._world is None:
            from iotguard.sim import scenario
            from iotguard.sim import world
            name = self._conf.agent.simulated_scenario
            if not name:
                raise ValueError('[agent] simulated_scenario is required '
                                 'by the simulated driver')
            self._world = world.World(scenario.load(name),
                                      seed=self._conf.agent.simulated_seed)
        self._t0 = self._clock() - self._world.now

    def _catch_up(self):
        if self._owns_world and self._t0 is not None:
            dt = (self._clock() - self._t0) - self._world.now
            if dt > 0:
                self._world.step(dt)

    def _my_disks(self):
        ids = self._world.disk_ids()
        if ids != self._ids:
            disks = {}
            for disk_id in ids:
                disk = self._disks.get(disk_id)
                if disk is None:
                    info = self._world.disk_info(disk_id)
                    if info.get('host', 'host1') != self.host:
                        disk = False
                    else:
                        disk = base.Disk(
                            instance_uuid=info['instance_uuid'],
                            dev=info['dev'],
                            volume_id=info.get('volume_id'),
                            project_id=info.get('project_id'),
                            static=caps.full(
                                self._world.static_iotune(disk_id)))
                disks[disk_id] = disk
            self._disks = disks
            self._ids = ids
            mine = {i: d for i, d in disks.items() if d}
            self._mine = list(mine)
            self._listing = {d.key: d for d in mine.values()}
            self._keys = list(self._listing)
        return self._mine

    def list_disks(self):
        self._my_disks()
        return dict(self._listing)

    def get_all_block_stats(self):
        return self.get_block_stats().as_dict()

    def get_block_stats(self):
        self._catch_up()
        ids = self._my_disks()
        return rates.Readings(self._keys, self._world.counter_array(ids))

    @staticmethod
    def _id(instance_uuid, dev):
        return '%s/%s' % (instance_uuid, dev)

    def get_iotune(self, instance_uuid, dev):
        return caps.full(self._world.get_iotune(self._id(instance_uuid, dev)))

    def set_iotune(self, instance_uuid, dev, limits, static=None):
        self._catch_up()
        self._world.set_iotune(self._id(instance_uuid, dev),
                               caps.full(limits))
