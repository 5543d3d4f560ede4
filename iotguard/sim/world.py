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

"""A simulated hypervisor over the storage model, stepped in time.

It reads like libvirt: cumulative per-disk block statistics (the bulk
stats' ``rd_reqs``, ``rd_bytes``, ``rd_times`` in ns, ...) and the 12
iotune keys of each disk, settable live with libvirt's and QEMU's rules.
The agent's ``simulated`` driver sits on it, and so does the simulator's
own control loop. Time is simulated only: nothing here reads a clock.
"""

import dataclasses
import itertools
import math
import uuid

import numpy as np
import numpy.typing as npt

from iotguard.sim import scenario as scenario_mod
from iotguard.sim import storage
from iotguard.sim import throttle
from iotguard.sim import workload
from iotguard.wire import rates

NS = 1e9


def instance_uuid(scenario_name: str, vm_name: str) -> str:
    """The VM's deterministic instance UUID."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL,
                          'iotguard-sim:%s/%s' % (scenario_name, vm_name)))


@dataclasses.dataclass
class _Disk:
    vm: scenario_mod.Vm
    info: dict[str, object]
    throttle: throttle.Throttle
    streams: list[storage.Stream]
    runners: list[workload.Runner]
    counters: dict[str, float]


class World:
    """The scenario's VMs on their shared storage, stepped by ``step``."""

    def __init__(self, scenario: scenario_mod.Scenario, seed: int = 0) -> None:
        self.scenario = scenario
        self._rng = np.random.default_rng(seed)
        self._now = 0.0
        self._disks: dict[str, _Disk] = {}
        streams: list[storage.Stream] = []
        for index, vm in enumerate(scenario.vms):
            uid = instance_uuid(scenario.name, vm.name)
            disk_streams = [storage.Stream(
                disk=index, size=job.bs,
                cost=storage.op_cost(job.bs, scenario.domain),
                read_fraction=job.read_fraction) for job in vm.jobs]
            streams.extend(disk_streams)
            self._disks['%s/%s' % (uid, vm.dev)] = _Disk(
                vm=vm,
                info={'instance_uuid': uid, 'name': vm.name, 'dev': vm.dev,
                      'host': vm.host, 'domain': scenario.domain.name,
                      'project_id': vm.project_id,
                      'volume_id': vm.volume_id, 'tier': vm.tier},
                throttle=throttle.Throttle(vm.limits),
                streams=disk_streams,
                runners=[workload.Runner(job, s)
                         for job, s in zip(vm.jobs, disk_streams)],
                counters=dict.fromkeys(rates.COUNTER_KEYS, 0.0))
        self._disk_list = list(self._disks.values())
        self._runners = [r for d in self._disk_list for r in d.runners]
        self._tick_at = 0.0
        self.storage = storage.Storage(scenario.domain, streams)

    # -- the hypervisor interface -------------------------------------

    @property
    def now(self) -> float:
        """Simulated seconds since the start."""
        return self._now

    def disk_ids(self) -> list[str]:
        return list(self._disks)

    def disk_info(self, disk_id: str) -> dict[str, object]:
        return dict(self._disk(disk_id).info)

    def counters(self, disk_id: str) -> dict[str, int]:
        """Cumulative block statistics, as libvirt's bulk stats give them."""
        return {k: int(v) for k, v in self._disk(disk_id).counters.items()}

    def counter_array(self, disk_ids: list[str]) -> npt.NDArray[np.uint64]:
        """:meth:`counters` of several disks at once: one row each.

        In the order of :data:`~iotguard.wire.rates.COUNTER_KEYS`, as the
        agent's bulk read gives them, without a dict per disk.
        """
        try:
            disks = list(map(self._disks.__getitem__, disk_ids))
        except KeyError as e:
            raise KeyError('unknown disk %r' % e.args[0]) from None
        flat = np.fromiter(itertools.chain.from_iterable(
            d.counters.values() for d in disks), dtype=np.float64,
            count=len(disks) * len(rates.COUNTER_KEYS))
        return flat.astype(np.uint64).reshape(len(disks),
                                              len(rates.COUNTER_KEYS))

    def get_iotune(self, disk_id: str) -> dict[str, int]:
        return dict(self._disk(disk_id).throttle.tune)

    def set_iotune(self, disk_id: str, params: dict[str, int]) -> None:
        """Change a disk's throttle live (``setBlockIoTune``, AFFECT_LIVE).

        Keys not given keep their value, except within a group (see
        :func:`iotguard.sim.throttle.merge`). ``ValueError`` for unknown
        keys, negative values or an inconsistent set; ``KeyError`` for an
        unknown disk.
        """
        disk = self._disk(disk_id)
        disk.throttle.configure(throttle.merge(disk.throttle.tune, params))

    def static_iotune(self, disk_id: str) -> dict[str, int]:
        """The static ceilings of the disk (Nova's ``quota:disk_*``)."""
        return dict(self._disk(disk_id).vm.limits)

    def step(self, dt: float) -> None:
        """Advance simulated time by ``dt`` seconds, in ticks."""
        if dt < 0 or not math.isfinite(dt):
            raise ValueError('dt must be a finite number >= 0, not %r' % dt)
        if dt == 0:
            return
        ticks = max(1, math.ceil(dt / self.scenario.tick_s - 1e-9))
        h = dt / ticks
        start = self._now
        for k in range(ticks):
            self._tick(start + k * h, h)
        self._now = start + dt

    # -- for the simulator's own measures -----------------------------

    def vm(self, disk_id: str) -> scenario_mod.Vm:
        return self._disk(disk_id).vm

    def _disk(self, disk_id: str) -> _Disk:
        try:
            return self._disks[disk_id]
        except KeyError:
            raise KeyError('unknown disk %r' % disk_id) from None

    def _tick(self, now: float, dt: float) -> None:
        self._tick_at = now
        noise = self.scenario.domain.noise
        factor = (float(np.exp(self._rng.normal(0.0, noise)
                               - noise * noise / 2.0)) if noise else 1.0)
        for disk in self._disk_list:
            for runner in disk.runners:
                runner.issue(now, dt)
            self._admit(disk, dt)
        done = self.storage.serve(dt, factor, self._refill)
        for stream, n in zip(self.storage.streams, done):
            c = self._disk_list[stream.disk].counters
            # time spent in the system this tick, from guest submission
            # (throttle wait included, as QEMU accounts it)
            c['rd_times'] += stream.read_s * NS
            c['wr_times'] += stream.write_s * NS
            if n:
                reads = stream.reads_between(stream.completed - n,
                                             stream.completed)
                c['rd_reqs'] += reads
                c['wr_reqs'] += n - reads
                c['rd_bytes'] += reads * stream.size
                c['wr_bytes'] += (n - reads) * stream.size

    def _refill(self, index: int) -> int:
        """The ``refill`` of :meth:`storage.Storage.serve` (its doc)."""
        stream = self.storage.streams[index]
        runner = self._runners[index]
        disk = self._disk_list[stream.disk]
        job = runner.job
        step = job.state_at(self._tick_at)
        if (not disk.throttle.active and stream.waiting == 0
                and not job.think_ms and step.rate_kbs is None
                and stream.issued - stream.completed
                == step.processes * job.iodepth):
            return -1
        before = stream.passed
        runner.issue(self._tick_at, 0.0)
        self._admit_stream(disk, stream)
        return stream.passed - before

    def _admit(self, disk: _Disk, dt: float) -> None:
        """Let requests through the disk's throttle into the storage."""
        disk.throttle.leak(dt)
        for s in disk.streams:
            self._admit_stream(disk, s)

    @staticmethod
    def _admit_stream(disk: _Disk, s: storage.Stream) -> None:
        th = disk.throttle
        if not th.active:
            s.passed = s.issued
            return
        while s.passed < s.issued and th.admit(s.is_read(s.passed), s.size):
            s.passed += 1
