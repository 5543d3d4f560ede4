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

"""The simulator's control loop: measure -> decide -> throttle, per window.

Every control interval the loop measures what an agent would (per-disk
rates and mean latency per operation over the last interval, the cap in
force and when it was set, the tier), builds the domain's
:class:`~iotguard.policy.base.DomainSnapshot`, asks the policy, plans its
decisions as the controller does (:func:`iotguard.engine.plan.plan`) and
applies the new or changed caps to the disks' throttles as the agent
does (:func:`iotguard.caps.effective` over the scenario's static limits; a
``release`` restores them). It records the
series the measures and the plots are computed from, and the truth the
oracle needs: each disk's demand and the storage's capacity.
"""

import collections.abc
import dataclasses
import math

import numpy as np

from iotguard import caps
from iotguard.engine import plan as plan_mod
from iotguard.policy import base
from iotguard.policy import costmodel
from iotguard.policy import estimator
from iotguard.sim import learning
from iotguard.sim import scenario as scenario_mod
from iotguard.sim import storage
from iotguard.sim import workload
from iotguard.sim import world as world_mod

Progress = collections.abc.Callable[[float], None]


@dataclasses.dataclass(frozen=True)
class Action:
    """One decision as applied.

    ``changed`` when the limits moved; ``tightened`` when the cap is
    lower than the one in force before, of either kind (a throttle: a
    raise or a release is not one).
    """

    time: float
    disk: int
    action: str
    changed: bool
    reason: str
    tightened: bool = False


@dataclasses.dataclass
class Run:
    """The recorded series of one run; work in device-seconds per second.

    Arrays are ``(windows, disks)`` unless named otherwise; window ``k``
    covers ``[times[k], times[k] + window_s)``. ``demand`` and ``slots``
    (requests the disk's processes keep in flight) are the truth the
    oracle needs; ``capacity`` is what the array serves with every
    demanding request queued (the saturated capacity of that load);
    ``response_ms`` is the storage's mean response time (queue length /
    completions, Little's law).
    """

    scenario: scenario_mod.Scenario
    policy: str
    seed: int
    window_s: float
    names: list[str]
    roles: list[str]
    times: base.FloatArray
    work: base.FloatArray
    kbs: base.FloatArray
    demand: base.FloatArray
    floor: base.FloatArray
    floor_kbs: base.FloatArray
    weight: base.FloatArray
    slots: base.FloatArray
    capacity: base.FloatArray
    queue: base.FloatArray
    response_ms: base.FloatArray
    cap_kbs: base.FloatArray
    actions: list[Action]
    change_times: list[float]
    #: each disk's mean latency per operation (ms; 0 without I/O)
    latency_ms: base.FloatArray = dataclasses.field(
        default_factory=lambda: np.zeros((0, 0)))
    #: the capacity estimator's fit after each window
    #: (:mod:`iotguard.sim.learning`)
    fits: list[estimator.Fit | None] = dataclasses.field(
        default_factory=list)


def window_latency_ms(
        delta: collections.abc.Sequence[collections.abc.Mapping[str, float]]
) -> base.FloatArray:
    """Each disk's mean latency per operation (ms) from counter deltas."""
    result: base.FloatArray = np.array(
        [(d['rd_times'] + d['wr_times']) / 1e6 / ops if ops else 0.0
         for d, ops in ((d, d['rd_reqs'] + d['wr_reqs']) for d in delta)],
        dtype=float)
    return result


def profile(domain: scenario_mod.Domain) -> base.Profile:
    return base.Profile(iops_4k=domain.iops_4k, bytes_sec=domain.bytes_sec,
                        form=domain.form)


def nominal_io_size(vm: scenario_mod.Vm) -> float:
    """The I/O size a disk's floor is converted at (its jobs' mean)."""
    if not vm.jobs:
        return costmodel.DEFAULT_IO_SIZE
    slots = [max(s.processes for s in j.steps) * j.iodepth or 1
             for j in vm.jobs]
    return float(sum(j.bs * n for j, n in zip(vm.jobs, slots)) / sum(slots))


def demand(vm: scenario_mod.Vm, domain: scenario_mod.Domain,
           t: float) -> tuple[float, int]:
    """(device-seconds/s the disk asks for at ``t``, requests in flight)."""
    work, slots = 0.0, 0
    for job in vm.jobs:
        step = job.state_at(t)
        slots += step.processes * job.iodepth
        work += (workload.demand_ops(step, job, domain)
                 * storage.op_cost(job.bs, domain))
    return min(work, storage.speed(slots, domain)), slots


class _Loop:
    """One run of a policy over a scenario (state of the control side)."""

    def __init__(self, scenario: scenario_mod.Scenario, policy: base.Policy,
                 seed: int) -> None:
        self.scenario = scenario
        self.policy = policy
        self.world = world_mod.World(scenario, seed)
        self.ids = self.world.disk_ids()
        self.vms = [self.world.vm(d) for d in self.ids]
        self.tiers = [scenario.tiers[vm.tier] for vm in self.vms]
        self.profile = profile(scenario.domain)
        self.learner = learning.Learner(learning.prior(scenario.domain))
        n = len(self.ids)
        self.cap_iops = np.full(n, np.inf)
        self.cap_bytes = np.full(n, np.inf)
        self.cap_set_at = np.full(n, np.nan)
        self.in_force: list[plan_mod.InForce | None] = [None] * n
        self.static_iops = np.array(
            [caps.ceiling(vm.limits, 'iops_sec') for vm in self.vms])
        self.static_bytes_sec = np.array(
            [caps.ceiling(vm.limits, 'bytes_sec') for vm in self.vms])
        self.actions: list[Action] = []

    def snapshot(self, delta: list[dict[str, int]]) -> base.DomainSnapshot:
        """The domain's snapshot from one interval's counter deltas.

        Built by :meth:`iotguard.policy.base.DomainSnapshot.of_samples`,
        the controller's builder: rates per second over the interval,
        each direction's latency its time per operation.
        """
        dt = self.scenario.interval_s
        n = len(self.ids)

        def counter(key: str) -> base.FloatArray:
            return np.fromiter((d[key] for d in delta), np.float64, n)

        def latency_ms(reqs: base.FloatArray,
                       times_ns: base.FloatArray) -> base.FloatArray:
            with np.errstate(invalid='ignore', divide='ignore'):
                out: base.FloatArray = np.where(
                    reqs > 0, times_ns / reqs / 1e6, math.nan)
            return out

        rd_reqs, wr_reqs = counter('rd_reqs'), counter('wr_reqs')
        samples = base.SampleColumns(
            timestamp=np.zeros(n), read_iops=rd_reqs / dt,
            write_iops=wr_reqs / dt,
            read_bytes_sec=counter('rd_bytes') / dt,
            write_bytes_sec=counter('wr_bytes') / dt,
            read_latency_ms=latency_ms(rd_reqs, counter('rd_times')),
            write_latency_ms=latency_ms(wr_reqs, counter('wr_times')),
            static_iops=self.static_iops,
            static_bytes_sec=self.static_bytes_sec,
            stale=np.zeros(n, dtype=np.bool_))
        return base.DomainSnapshot.of_samples(
            self.scenario.domain.name, self.profile, dt, tuple(self.ids),
            self.tiers, samples, self.cap_iops.copy(),
            self.cap_bytes.copy(), self.cap_set_at.copy())

    def apply(self, snapshot: base.DomainSnapshot,
              decisions: list[base.Decision], now: float) -> None:
        """Carry out the decisions as the controller does.

        Through the same :func:`iotguard.engine.plan.plan`: a cap equal
        to the one in force is not applied again (its ``cap_set_at``
        stays), a release is applied only to a capped disk. The
        simulator's caps have no lease (they never lapse, ``inf``), so
        no renewal is ever due; its disks are never stale, so no cap is
        dropped.
        """
        todo = plan_mod.plan(snapshot, decisions, self.in_force, now,
                             math.inf, self.scenario.interval_s)
        for change in todo.changes:
            i, decision = change.disk, change.decision
            tightened = decision.action == base.CAP and (
                decision.iops < self.cap_iops[i]
                or decision.bytes_sec < self.cap_bytes[i])
            # What the agent would set: the one rule (caps.effective).
            target = caps.effective(change.limits or {}, self.vms[i].limits)
            if change.limits is None:
                self.cap_iops[i] = self.cap_bytes[i] = np.inf
                self.cap_set_at[i] = np.nan
                self.in_force[i] = None
            else:
                self.cap_iops[i] = decision.iops
                self.cap_bytes[i] = decision.bytes_sec
                self.cap_set_at[i] = now
                self.in_force[i] = plan_mod.InForce(change.limits, math.inf)
            before = self.world.get_iotune(decision.disk_id)
            self.world.set_iotune(decision.disk_id, target)
            self.actions.append(Action(
                time=now, disk=i, action=decision.action,
                changed=self.world.get_iotune(decision.disk_id) != before,
                reason=decision.reason, tightened=tightened))

    def run(self, progress: Progress | None = None) -> Run:
        sc = self.scenario
        dt = sc.interval_s
        windows = int(round(sc.duration_s / dt))
        n = len(self.ids)
        shape = (windows, n)
        work, kbs = np.zeros(shape), np.zeros(shape)
        dem, cap_kbs = np.zeros(shape), np.zeros(shape)
        slots_in = np.zeros(shape)
        capacity, queue = np.zeros(windows), np.zeros(windows)
        response, latency = np.zeros(windows), np.zeros(shape)
        prev = [self.world.counters(d) for d in self.ids]
        for k in range(windows):
            t = self.world.now
            for i, vm in enumerate(self.vms):
                dem[k, i], slots_in[k, i] = demand(vm, sc.domain, t)
            capacity[k] = storage.speed(
                float(slots_in[k][dem[k] > 0].sum()), sc.domain)
            cap_kbs[k] = np.where(np.isfinite(self.cap_bytes),
                                  self.cap_bytes / workload.KIB, np.nan)
            queue_before = self.world.storage.queue_seconds
            self.world.step(dt)
            queue[k] = (self.world.storage.queue_seconds - queue_before) / dt
            now = self.world.now
            cur = [self.world.counters(d) for d in self.ids]
            delta = [{key: c[key] - p[key] for key in c}
                     for c, p in zip(cur, prev)]
            prev = cur
            ops = np.array([d['rd_reqs'] + d['wr_reqs'] for d in delta],
                           dtype=float)
            size = np.array([d['rd_bytes'] + d['wr_bytes'] for d in delta],
                            dtype=float)
            work[k] = costmodel.load(ops, size, self.profile) / dt
            kbs[k] = size / dt / workload.KIB
            latency[k] = window_latency_ms(delta)
            response[k] = (queue[k] / ops.sum() * dt * 1e3 if ops.sum()
                           else 0.0)
            snapshot = self.snapshot(delta)
            self.learner.observe(snapshot)
            self.apply(snapshot, self.policy.decide(snapshot, now), now)
            if progress is not None:
                progress((k + 1) / windows)
        sizes = np.array([nominal_io_size(vm) for vm in self.vms])
        floor_iops = np.array([t.min_iops for t in self.tiers])
        floor_bytes = np.array([t.min_bytes_sec for t in self.tiers])
        floor_ops = costmodel.floor_ops(floor_iops, floor_bytes, sizes)
        return Run(
            scenario=sc, policy=getattr(self.policy, 'name', '?'),
            seed=0, window_s=dt,
            names=[vm.name for vm in self.vms],
            roles=[vm.role for vm in self.vms],
            times=np.arange(windows, dtype=np.float64) * dt, work=work,
            kbs=kbs, demand=dem,
            floor=costmodel.floor_load(floor_iops, floor_bytes, sizes,
                                       self.profile),
            floor_kbs=floor_ops * sizes / workload.KIB,
            weight=np.array([t.weight for t in self.tiers]),
            slots=slots_in, capacity=capacity, queue=queue,
            response_ms=response,
            cap_kbs=cap_kbs, actions=self.actions,
            change_times=sc.change_times(), latency_ms=latency,
            fits=self.learner.fits)


def run(scenario: scenario_mod.Scenario, policy: base.Policy, seed: int = 0,
        progress: Progress | None = None) -> Run:
    """Run ``policy`` over ``scenario`` and record every window."""
    result = _Loop(scenario, policy, seed).run(progress)
    result.seed = seed
    return result
