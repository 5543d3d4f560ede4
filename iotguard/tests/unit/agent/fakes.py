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

"""In-memory stand-ins for the agent's unit tests (no I/O)."""

import numpy as np

from iotguard.agent.virt import base
from iotguard.wire import caps
from iotguard.wire import rates

UUID_A = '6f1e2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b'
UUID_B = '0b1c2d3e-4f50-4617-8a9b-abcdefabcdef'


def readings(counters):
    """``rates.Readings`` of ``{key: {counter: value}}`` (missing: 0)."""
    return rates.Readings(list(counters), np.array(
        [[c.get(k, 0) for k in rates.COUNTER_KEYS] for c in counters.values()],
        dtype=np.uint64).reshape(len(counters), len(rates.COUNTER_KEYS)))


class FakeDriver(base.Driver):
    """A hypervisor with a few disks; records every set_iotune call."""

    def __init__(self, disks=None):
        self.disks = {}
        self.live = {}
        self.counters = {}
        self.set_calls = []
        self.statics_given = []
        self.fail_set = False
        for disk in disks or ():
            self.add(disk)

    def add(self, disk, live=None):
        self.disks[disk.key] = disk
        self.live[disk.key] = caps.full(disk.static if live is None
                                        else live)
        self.counters.setdefault(disk.key, {})

    def rebuild(self, key):
        """What Nova does on a hard reboot: live back to the XML values."""
        self.live[key] = caps.full(self.disks[key].static)

    def list_disks(self):
        return dict(self.disks)

    def get_all_block_stats(self):
        return {k: dict(v) for k, v in self.counters.items()
                if k in self.disks}

    def get_block_stats(self):
        return readings(self.get_all_block_stats())

    def get_iotune(self, instance_uuid, dev):
        return dict(self.live[(instance_uuid, dev)])

    def set_iotune(self, instance_uuid, dev, limits, static=None):
        if self.fail_set:
            raise RuntimeError('hypervisor says no')
        caps.check_limits(limits)
        self.set_calls.append(((instance_uuid, dev), dict(limits)))
        self.statics_given.append(static)
        self.live[(instance_uuid, dev)] = caps.full(limits)


class FakeWorld:
    """The iotguard.sim.world.World contract, just enough of it."""

    def __init__(self, disks):
        # disks: {disk_id: (info, static)}
        self.now = 0.0
        self._info = {i: info for i, (info, _s) in disks.items()}
        self._static = {i: caps.full(s) for i, (_info, s) in disks.items()}
        self._tune = dict((i, dict(s)) for i, s in self._static.items())
        self._counters = {i: dict.fromkeys(
            ('rd_reqs', 'rd_bytes', 'rd_times', 'wr_reqs', 'wr_bytes',
             'wr_times', 'fl_reqs'), 0) for i in disks}
        self.steps = []
        self.set_calls = []

    def disk_ids(self):
        return list(self._info)

    def disk_info(self, disk_id):
        return dict(self._info[disk_id])

    def counters(self, disk_id):
        return dict(self._counters[disk_id])

    def counter_array(self, disk_ids):
        return readings({i: self._counters[i] for i in disk_ids}).counters

    def get_iotune(self, disk_id):
        return dict(self._tune[disk_id])

    def set_iotune(self, disk_id, params):
        if disk_id not in self._tune:
            raise KeyError(disk_id)
        self.set_calls.append((disk_id, dict(params)))
        self._tune[disk_id].update(params)

    def static_iotune(self, disk_id):
        return dict(self._static[disk_id])

    def step(self, dt):
        self.steps.append(dt)
        self.now += dt
        for c in self._counters.values():
            c['wr_reqs'] += int(100 * dt)
            c['wr_bytes'] += int(100 * dt) * 4096
            c['wr_times'] += int(100 * dt) * 2 * 10 ** 6


class MemoryStore:
    """The manager's state file, in memory (the file has its own test)."""

    def __init__(self):
        self.saved = {}

    def save(self, held):
        self.saved = dict(held)   # caps.Cap records are immutable

    def load(self):
        return dict(self.saved)


class FakeControllerAPI:
    """Records what the agent casts to the controllers."""

    def __init__(self):
        self.batches = []
        self.heartbeats = []

    def report_samples(self, ctxt, host, samples):
        self.batches.append((host, samples))

    def agent_heartbeat(self, ctxt, host, info):
        self.heartbeats.append((host, info))
