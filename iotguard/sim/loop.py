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

Every control interval the loop measures what an agent would, builds the
domain's :class:`~iotguard.policy.base.DomainSnapshot`, asks the policy,
plans its decisions as the controller does and applies the caps to the
disks' throttles as the agent does (over the scenario's static limits; a
``release`` restores them). With a :class:`FastPath` the agent samples
more often than the controller decides (a window is one sample), and a
domain is decided at once on a sample where a disk whose demand rose
(:func:`iotguard.wire.rates.rising`) is short of its floor
(:func:`iotguard.policy.base.short`), as
:meth:`iotguard.controller.loop.DomainLoop.urgent` does; with its
``watch_s`` also on an early sample between two, as the agent's
``[agent] watch_interval`` takes one. It records the
series the measures and the plots are computed from, and the truth the
oracle needs: each disk's demand and the storage's capacity.
"""

import collections.abc
import dataclasses
import math

import numpy as np

from iotguard.engine import plan as plan_mod
from iotguard.policy import base
from iotguard.policy import costmodel
from iotguard.policy import estimator
from iotguard.sim import learning
from iotguard.sim import scenario as scenario_mod
from iotguard.sim import storage
from iotguard.sim import workload
from iotguard.sim import world as world_mod
from iotguard.wire import caps
from iotguard.wire import rates

Progress = collections.abc.Callable[[float], None]


@dataclasses.dataclass(frozen=True)
class FastPath:
    """Sampling between the rounds, and decisions on urgent samples.

    ``sample_s`` (``[agent] sample_interval``) must divide the scenario's
    ``interval_s`` (the rounds, ``[controller] decision_interval``);
    ``urgent_s`` (``[controller] urgent_interval``): at most one urgent
    decision per that many seconds, 0: none. A decision, round or urgent,
    acts at the end of the sample it read (the real controller's comes
    some milliseconds later).

    ``watch_s`` (``[agent] watch_interval``; 0: off) must divide
    ``sample_s``: the world is stepped that often inside each sample, and
    a disk whose rates over the last step rose against those of the
    last sample has an early sample taken then (the rates since the
    sample began), judged as any urgent one. The windows stay one sample
    long: unlike the agent, whose next sample is then due a whole
    ``sample_s`` later, the simulator keeps its samples' times. Only
    with urgent decisions (``urgent_s`` > 0), as the agent watches only
    with ``urgent_samples``.
    """

    sample_s: float = 1.0
    urgent_s: float = 1.0
    watch_s: float = 0.0

    def __post_init__(self) -> None:
        self.watch_steps()

    def watch_steps(self) -> int:
        """Steps per sample (1: no watch); ValueError when not dividing."""
        if not self.watch_s:
            return 1
        n = self.sample_s / self.watch_s if self.watch_s > 0 else 0.0
        if n < 1 or abs(n - round(n)) > 1e-6:
            raise ValueError('the watch interval (%g s) must divide the '
                             'sample interval (%g s)'
                             % (self.watch_s, self.sample_s))
        return int(round(n))

    def rounds_every(self, interval_s: float) -> int:
        """Samples per round; ValueError when they do not divide."""
        n = interval_s / self.sample_s if self.sample_s > 0 else 0.0
        if n < 1 or abs(n - round(n)) > 1e-6:
            raise ValueError('the sample interval (%g s) must divide the '
                             'decision interval (%g s)'
                             % (self.sample_s, interval_s))
        return int(round(n))


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
    tightened: bool


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
    latency_ms: base.FloatArray
    #: the capacity estimator's fit after each window
    #: (:mod:`iotguard.sim.learning`)
    fits: list[estimator.Fit | None]


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


class Recorder:
    """The series of a :class:`Run`, window by window, from a world.

    The one recorder of the simulator's loop and of the all-in-one:
    :meth:`begin` before the world steps window ``k`` (``[k, k + 1)``
    intervals on the run's clock), :meth:`end` after it. Rates are read
    through the agent's rate code, as a snapshot holds them. The cap
    recorded is what the disk's throttle holds beyond its static limits
    (its ``total_bytes_sec``).
    """

    def __init__(self, scenario: scenario_mod.Scenario,
                 world: world_mod.World) -> None:
        self.scenario, self.world = scenario, world
        self.ids = world.disk_ids()
        self.vms = [world.vm(d) for d in self.ids]
        self.tiers = self._tiers(0.0)
        self._tier_changes = any(vm.tier_changes for vm in self.vms)
        self.profile = scenario.domain.profile
        statics = [world.static_iotune(d) for d in self.ids]
        self.static_iops = np.array(
            [caps.ceiling(s, 'iops_sec') for s in statics])
        self.static_bytes_sec = np.array(
            [caps.ceiling(s, 'bytes_sec') for s in statics])
        windows = int(round(scenario.duration_s / scenario.interval_s))
        shape = (windows, len(self.ids))
        self.work, self.kbs = np.zeros(shape), np.zeros(shape)
        self.demand, self.slots = np.zeros(shape), np.zeros(shape)
        self.cap_kbs = np.full(shape, np.nan)
        self.capacity = np.zeros(windows)
        self.queue = np.zeros(windows)
        self.response_ms = np.zeros(windows)
        self.latency_ms = np.zeros(shape)
        #: each window's floors and weights (the disks' tiers then)
        self.floor_iops, self.floor_bytes = np.zeros(shape), np.zeros(shape)
        self.weight = np.zeros(shape)
        self.actions: list[Action] = []
        self._rates = rates.Table()
        self._queue_before = 0.0

    def _tiers(self, t: float) -> list[base.Tier]:
        return [self.scenario.tiers[vm.tier_at(t)].at(vm.size_gib)
                for vm in self.vms]

    def reading(self) -> rates.Readings:
        """The disks' counters now, as the agent's bulk read."""
        return rates.Readings(self.ids, self.world.counter_array(self.ids))

    def _read(self, at: float) -> rates.Columns:
        return self._rates.update(at, self.reading())

    def begin(self, k: int) -> None:
        """Before window ``k``: demand, requests in flight, caps in force."""
        sc, world = self.scenario, self.world
        t = world.now
        if not len(self._rates):
            self._read(k * sc.interval_s)
        if self._tier_changes:
            # the tiers at the window's end: a change inside the window is
            # judged from it on, and seen by the decision that ends it
            self.tiers = self._tiers(t + sc.interval_s - 1e-6)
        for i, tier in enumerate(self.tiers):
            self.floor_iops[k, i] = tier.min_iops
            self.floor_bytes[k, i] = tier.min_bytes_sec
            self.weight[k, i] = tier.weight
        for i, vm in enumerate(self.vms):
            self.demand[k, i], self.slots[k, i] = demand(vm, sc.domain, t)
            tune = world.get_iotune(self.ids[i])
            if (tune != world.static_iotune(self.ids[i])
                    and tune['total_bytes_sec']):
                self.cap_kbs[k, i] = tune['total_bytes_sec'] / workload.KIB
        active = self.demand[k] > 0
        self.capacity[k] = storage.speed(float(self.slots[k][active].sum()),
                                         sc.domain)
        self._queue_before = world.storage.queue_seconds

    def end(self, k: int) -> base.SampleColumns:
        """After window ``k``: what each disk was served, as samples."""
        dt = self.scenario.interval_s
        self.queue[k] = (self.world.storage.queue_seconds
                         - self._queue_before) / dt
        at = (k + 1) * dt
        samples = self.samples(at, self._read(at))
        iops, bytes_sec, self.latency_ms[k] = samples.totals()
        self.work[k] = costmodel.load(iops, bytes_sec, self.profile)
        self.kbs[k] = bytes_sec / workload.KIB
        ops = float(iops.sum())
        self.response_ms[k] = self.queue[k] / ops * 1e3 if ops else 0.0
        return samples

    def samples(self, at: float, columns: rates.Columns
                ) -> base.SampleColumns:
        """The disks' samples of ``columns`` (rates read at ``at``)."""
        r = columns.rates
        return base.SampleColumns(
            timestamp=np.full(len(self.ids), at), read_iops=r[0],
            write_iops=r[1], read_bytes_sec=r[2], write_bytes_sec=r[3],
            read_latency_ms=r[4], write_latency_ms=r[5],
            static_iops=self.static_iops,
            static_bytes_sec=self.static_bytes_sec,
            stale=columns.gap != 0)

    def run(self, windows: int,
            fits: list[estimator.Fit | None] | None = None) -> Run:
        """The recorded run (the first ``windows`` windows)."""
        sc = dataclasses.replace(
            self.scenario, duration_s=windows * self.scenario.interval_s)
        sizes = np.array([nominal_io_size(vm) for vm in self.vms])
        floor_iops = self.floor_iops[:windows]
        floor_bytes = self.floor_bytes[:windows]
        floor_ops = costmodel.floor_ops(floor_iops, floor_bytes, sizes)
        return Run(
            scenario=sc, window_s=sc.interval_s,
            names=[vm.name for vm in self.vms],
            roles=[vm.role for vm in self.vms],
            times=np.arange(windows, dtype=np.float64) * sc.interval_s,
            work=self.work[:windows], kbs=self.kbs[:windows],
            demand=self.demand[:windows],
            floor=costmodel.floor_load(floor_iops, floor_bytes, sizes,
                                       self.profile),
            floor_kbs=floor_ops * sizes / workload.KIB,
            weight=self.weight[:windows],
            slots=self.slots[:windows], capacity=self.capacity[:windows],
            queue=self.queue[:windows],
            response_ms=self.response_ms[:windows],
            cap_kbs=self.cap_kbs[:windows],
            actions=[a for a in self.actions
                     if a.time < windows * sc.interval_s + 1e-9],
            change_times=sc.change_times(),
            latency_ms=self.latency_ms[:windows],
            fits=list(fits or []))


class _Loop:
    """One run of a policy over a scenario (state of the control side)."""

    def __init__(self, scenario: scenario_mod.Scenario, policy: base.Policy,
                 seed: int, fast: FastPath | None = None) -> None:
        self.decision_s = scenario.interval_s
        self.fast = fast
        self.every = fast.rounds_every(scenario.interval_s) if fast else 1
        # steps per window: the watch's, with urgent decisions only
        self.steps = (fast.watch_steps() if fast and fast.urgent_s > 0
                      else 1)
        if fast is not None:
            # a window is one sample
            scenario = dataclasses.replace(scenario, interval_s=fast.sample_s,
                                           tick_s=min(scenario.tick_s,
                                                      fast.sample_s))
        self.scenario = scenario
        self.policy = policy
        self.state: object = None      # the policy's, between decisions
        self.world = world_mod.World(scenario, seed)
        self.recorder = Recorder(scenario, self.world)
        self.learner = learning.Learner(learning.prior(scenario.domain))
        n = len(self.recorder.ids)
        self.cap_iops = np.full(n, np.inf)
        self.cap_bytes = np.full(n, np.inf)
        self.cap_set_at = np.full(n, np.nan)
        self.in_force: list[plan_mod.InForce | None] = [None] * n
        # the last sample's rates, for rates.rising (none: as the agent's
        # first pass, a gap)
        self.before = np.full((len(rates.RATE_FIELDS), n), math.nan)
        self.urgent_at = -math.inf  # the last urgent decision
        # the urgent disks the controller holds, and how many more
        # decisions they may bring (base.URGENT_FOLLOW_UPS)
        self.held = np.zeros(n, dtype=bool)
        self.more = 0
        # the watch's reads: each step's rates since the last one
        self.watch = rates.Table()

    def apply(self, snapshot: base.DomainSnapshot,
              decisions: list[base.Decision], now: float) -> None:
        """Carry out the decisions as the controller does.

        Through the same :func:`iotguard.engine.plan.plan`. The
        simulator's caps have no lease (``inf``), so no renewal is ever
        due; its disks are never stale, so no cap is dropped.
        """
        todo = plan_mod.plan(snapshot, decisions, self.in_force, now,
                             math.inf, self.decision_s)
        for change in todo.changes:
            i, decision = change.disk, change.decision
            # The cap in force is what was sent (whole numbers), as the
            # controller reads it back (iotguard.controller.loop), not
            # the policy's unrounded figures.
            iops = caps.limit(change.limits, 'total_iops_sec')
            bytes_sec = caps.limit(change.limits, 'total_bytes_sec')
            tightened = decision.action == base.CAP and (
                iops < self.cap_iops[i] or bytes_sec < self.cap_bytes[i])
            # What the agent would set: the one rule (caps.effective).
            target = caps.effective(change.limits or {},
                                    self.recorder.vms[i].limits,
                                    decision.lift)
            self.cap_iops[i], self.cap_bytes[i] = iops, bytes_sec
            if change.limits is None:
                self.cap_set_at[i] = np.nan
                self.in_force[i] = None
            else:
                self.cap_set_at[i] = now
                self.in_force[i] = plan_mod.InForce(change.limits, math.inf)
            before = self.world.get_iotune(decision.disk_id)
            self.world.set_iotune(decision.disk_id, target)
            self.recorder.actions.append(Action(
                time=now, disk=i, action=decision.action,
                changed=self.world.get_iotune(decision.disk_id) != before,
                reason=decision.reason, tightened=tightened))

    def snapshot(self, samples: base.SampleColumns) -> base.DomainSnapshot:
        """The domain's snapshot of ``samples``, with the caps in force."""
        return base.DomainSnapshot.of_samples(
            self.scenario.domain.name, self.recorder.profile,
            self.decision_s, tuple(self.recorder.ids), self.recorder.tiers,
            samples, self.cap_iops.copy(), self.cap_bytes.copy(),
            self.cap_set_at.copy())

    def urgent(self, snapshot: base.DomainSnapshot,
               marked: base.BoolArray, now: float, due: bool) -> bool:
        """Whether a sample is decided: a round (``due``), or urgent.

        As :meth:`iotguard.controller.loop.DomainLoop.urgent`: the
        ``marked`` disks (their demand rose) are held with
        :data:`~iotguard.policy.base.URGENT_FOLLOW_UPS` more decisions;
        between the rounds one is due, at most once per ``urgent_s``,
        while a held disk is short of its floor
        (:func:`~iotguard.policy.base.short`).
        """
        assert self.fast is not None
        if marked.any():
            self.held = self.held | marked
            self.more = base.URGENT_FOLLOW_UPS + 1
        if (due or self.more <= 0
                or now - self.urgent_at < self.fast.urgent_s - 1e-9):
            return due
        if (self.held & base.short(snapshot)).any():
            self.urgent_at, self.more = now, self.more - 1
            return True
        self.held[:], self.more = False, 0
        return False

    def sample(self, samples: base.SampleColumns, now: float, due: bool,
               rose: base.BoolArray | None = None, learn: bool = False
               ) -> None:
        """One sample as the controller takes it; decided when due.

        ``due``: a round; else an urgent decision may be (:meth:`urgent`),
        the disks that rose since the last sample marked, and those of
        ``rose`` (the watch's) too. ``learn``: the estimator observes it
        (the windows' samples).
        """
        snapshot = self.snapshot(samples)
        if learn:
            self.learner.observe(snapshot)
        measured = np.vstack([getattr(samples, name)
                              for name in rates.RATE_FIELDS])
        if self.fast is not None and self.fast.urgent_s > 0:
            marked = rates.rising(self.before, measured)
            if rose is not None:
                marked |= rose
            due = self.urgent(snapshot, marked, now, due)
        self.before = measured
        if due:
            decisions, self.state = self.policy.decide(snapshot, self.state,
                                                       now)
            self.apply(snapshot, decisions, now)

    def step(self, k: int) -> None:
        """Window ``k`` of the world, and the early samples in it.

        With the watch (:attr:`FastPath.watch_s`) in steps: a disk whose
        rates over a step rose against the last sample's has the sample
        taken at once, from the rates since the window began. As the
        agent's, the watch's first read (the run's first step) has no
        rates, and the last sample before the run's first is a gap.
        """
        dt = self.scenario.interval_s
        if self.steps == 1:
            self.world.step(dt)
            return
        h = dt / self.steps
        t0 = self.world.now
        start = self.recorder.reading()
        if k:
            self.watch.update(t0, start)
        for _ in range(self.steps - 1):
            self.world.step(h)
            now, cur = self.world.now, self.recorder.reading()
            rose = rates.rising(self.before, self.watch.update(now, cur).rates)
            if rose.any():
                self.sample(self.recorder.samples(
                    now, _rates(t0, start, now, cur)), now, False, rose)
        self.world.step(h)

    def run(self, progress: Progress | None = None) -> Run:
        windows = len(self.recorder.queue)
        for k in range(windows):
            self.recorder.begin(k)
            self.step(k)
            self.sample(self.recorder.end(k), self.world.now,
                        (k + 1) % self.every == 0, learn=True)
            if progress is not None:
                progress((k + 1) / windows)
        return self.recorder.run(windows, self.learner.fits)


def _rates(t0: float, r0: rates.Readings, t1: float, r1: rates.Readings
           ) -> rates.Columns:
    """The rates between two readings, as the recorder's."""
    table = rates.Table()
    table.update(t0, r0)
    return table.update(t1, r1)


def run(scenario: scenario_mod.Scenario, policy: base.Policy, seed: int = 0,
        progress: Progress | None = None, fast: FastPath | None = None
        ) -> Run:
    """Run ``policy`` over ``scenario`` and record every window.

    ``fast``: sample (and record) every ``fast.sample_s``, decide on
    urgent samples between the rounds (:class:`FastPath`).
    """
    return _Loop(scenario, policy, seed, fast).run(progress)
