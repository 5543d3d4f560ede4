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

"""The guarantee's scenarios on the shared-queue bed, to the second.

    flock /tmp/s/heavy.lock python -m benchmarks.guarantee \\
        --scenario paper --scenario on-off --runs 3

The bed of :mod:`benchmarks.bed` (own RabbitMQ node and PostgreSQL
cluster, iotguard as processes, two quiet guests on a tier whose floor
covers their demand) with iotguard deciding every second and the urgent
path on (``[agent] urgent_samples``, ``[controller] urgent_interval``;
``--no-urgent`` turns it off; ``--latency-histograms`` has the agent
measure each disk's p99 for the policy, ``[agent] latency_histograms``).
Each run of a scenario plays its steps
(aggressors booted, guests paused and resumed through libvirt) twice,
interleaved: with iotguard, then without it (the agent stopped, every
disk at its static limits), on the same bed. The guests' block
statistics are read every second; the measures are
:mod:`iotguard.sim.measures`' own, on those one-second windows (see the
contributor guide's page ``guarantee``).
"""

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import threading
import time

import numpy as np

from benchmarks import bed as bed_mod
from iotguard.agent.virt import histogram as qemu_histogram
from iotguard.sim import loop
from iotguard.sim import measures
from iotguard.tests.fixtures import deployment
from iotguard.tests.fixtures import sharedqueue
from iotguard.tests.functional import test_shared_queue as sq

#: The guests are read, and judged, every second.
WINDOW_S = 1.0
URGENT = '''
[controller]
decision_interval = 1.0
urgent_interval = 1.0
[agent]
urgent_samples = true
'''
NOT_URGENT = '''
[controller]
decision_interval = 1.0
urgent_interval = 0
[agent]
urgent_samples = false
'''
#: An aggressor: sixteen writers of sixteen 64 KiB blocks (the bed's noisy
#: guest); the IOPS-bound one writes 4 KiB blocks.
AGGRESSOR = sq.NOISY
SMALL = dict(bs='4k', count=256, par=16)
#: Seconds between two writers joining in the paper's run (1 -> 16).
RAMP_S = 2
#: Seconds between the guests' steps and the end of a run (the quiet
#: guests settle after the last run's aggressors are gone).
GAP_S = 5.0
#: The tiers of the guests a scenario boots with one (``Step.tier``),
#: created on the bed by :func:`ready`. ``burst``: a floor of 512 KiB/s or
#: 8 IOPS (0.125 of the bucket), held at it by its ceiling (the tier's
#: and the guest's static limit, as Nova sets it), bursting to twice the
#: floor for 20 s. ``gold``: a floor of 10 IOPS or 40 KiB/s (0.1) and a
#: 99th percentile objective of ``OBJECTIVE_MS``. ``bronze``: a floor of
#: 256 KiB/s or 4 IOPS (0.0625), under a quiet guest's demand; ``raised``:
#: the quiet guests' floor (800 KiB/s or 13 IOPS), which covers it.
OBJECTIVE_MS = 150.0
TIERS = {
    'bronze': dict(min_bytes_sec=256 << 10, min_iops=4),
    'raised': dict(min_bytes_sec=sq.FLOOR, min_iops=13),
    'burst': dict(min_bytes_sec=512 << 10, min_iops=8,
                  max_bytes_sec=512 << 10, burst_factor=2.0,
                  burst_seconds=20.0),
    'gold': dict(min_iops=10, min_bytes_sec=40 << 10,
                 latency_p99_ms=OBJECTIVE_MS),
}
#: The bursting guest: two writers of four 64 KiB blocks (more than its
#: burst), idle ``start`` s after its boot; a gold guest: one 4 KiB write
#: at a time, 0.1 s apart (about 8 a second, under its floor).
BURSTING = dict(bs='64k', count=4, par=2,
                static_bytes_sec=TIERS['burst']['max_bytes_sec'])
GOLD = dict(bs='4k', count=1, pause='0.1')
#: The latency judged on 10-s windows, the gold disk's write latency
#: histogram's bin boundaries (ms; QEMU's bins: under the first, between
#: two, over the last).
LATENCY_WINDOW_S = 10
BOUNDS_MS = qemu_histogram.BOUNDS_MS
#: The timed guest's disk (its alias in the domain XML).
TIMED_ALIAS = 'virtio-disk0'


@dataclasses.dataclass
class Step:
    """One step of a scenario, ``at`` s after its start.

    ``boot`` an aggressor ``who`` (``writers``), or ``pause``/``resume``
    a guest (``q1``, ``q2`` or an aggressor), or ``tier``: the tenant of
    guest ``who`` chooses ``tier``. A guest booted with a ``tier`` (of
    :data:`TIERS`) is a tenant's (``proj-a``): with iotguard, once
    registered, it chooses that tier (as an admin, who sees admission's
    numbers). ``demand``: the guest's rate alone (bytes/s; else the whole
    bucket); a guest given one is judged on its tier's floor as ``q1`` and
    ``q2`` are.
    """

    at: float
    what: str
    who: str
    writers: dict | None = None
    tier: str | None = None
    demand: float | None = None


def _paper(short):
    ramp = 1 if short else RAMP_S
    return [Step(0, 'boot', 'a1', dict(AGGRESSOR, ramp=ramp))], \
        30.0 if short else 60.0


def _two(short):
    second = 15.0 if short else 30.0
    return [Step(0, 'boot', 'a1', AGGRESSOR),
            Step(second, 'boot', 'a2', AGGRESSOR)], 3 * second


def _on_off(short):
    period = 10.0 if short else 30.0
    steps = [Step(0, 'boot', 'a1', AGGRESSOR)]
    for k in range(1, 5):
        steps.append(Step(k * period, 'pause' if k % 2 else 'resume', 'a1'))
    return steps, 5 * period


def _sleeper(short):
    awake, asleep = (10.0, 15.0) if short else (20.0, 60.0)
    return [Step(0, 'boot', 'a1', AGGRESSOR),
            Step(awake, 'pause', 'q2'),
            Step(awake + asleep, 'resume', 'q2')], 2 * awake + asleep + 10


def _iops(short):
    return [Step(0, 'boot', 'a1', SMALL)], 30.0 if short else 60.0


def _burst(short):
    idle, then = (25, 40.0) if short else (40, 55.0)
    return [Step(0, 'boot', 'b1', dict(BURSTING, start=idle), 'burst'),
            Step(then, 'boot', 'a1', AGGRESSOR)], then + 20.0


def _latency(short):
    # the aggressors after the gold choice (a few seconds after its boot)
    then, end = (15.0, 75.0) if short else (20.0, 140.0)
    return [Step(0, 'boot', 'g1', GOLD, 'gold'),
            Step(then, 'boot', 'a1', AGGRESSOR),
            Step(then, 'boot', 'a2', AGGRESSOR)], end


def _tier_raised(short):
    # r1 writes as a quiet guest does (one 64 KiB writer held by its own
    # ceiling) on bronze beside an aggressor; its tier is raised later
    raise_at, end = (20.0, 45.0) if short else (40.0, 90.0)
    return [Step(0, 'boot', 'r1', sq.QUIET, 'bronze',
                 demand=sq.QUIET['static_bytes_sec']),
            Step(5.0, 'boot', 'a1', AGGRESSOR),
            Step(raise_at, 'tier', 'r1', tier='raised')], end


#: name -> (function of ``short`` -> (steps, seconds), what it plays).
SCENARIOS = {
    'paper': (_paper, 'the paper\'s run: an aggressor whose writers join '
              'one every %d s (1 -> 16)' % RAMP_S),
    'two-aggressors': (_two, 'an aggressor, a second one joining after '
                       'a third of the run'),
    'on-off': (_on_off, 'an aggressor paused and resumed every 30 s (10 s '
               'short)'),
    'sleeper': (_sleeper, 'a floor-holder (q2) paused 60 s (15 s short) '
                'beside an aggressor, then back at its floor'),
    'iops': (_iops, 'an aggressor of 4 KiB writes (the IOPS bind)'),
    'burst': (_burst, 'a guest idle 40 s (25 s short) on a bursting tier, '
              'then asking more than its floor; an aggressor about 10 s into '
              'the burst'),
    'latency': (_latency, 'a gold guest (p99 objective) beside two '
                'aggressors'),
    'tier-raised': (_tier_raised, 'a guest writing as a quiet one on bronze '
                    'beside an aggressor, raised to the quiet guests\' '
                    'floor after 40 s (20 s short)'),
}


def cost(rates):
    """Share of the bucket per window: (bytes/s, ops/s) -> whichever binds.

    ``rates``: ``(windows, 2 * disks)``, bytes/s and ops/s of each disk.
    The measures' unit (device-seconds per second): a 4 KiB and a 64 KiB
    disk compared by what they take of the queue.
    """
    return np.maximum(rates[:, 0::2] / sq.BYTES_SEC, rates[:, 1::2] / sq.IOPS)


class Player:
    """One run of a scenario's steps on the bed, read every second.

    ``on``: iotguard runs (guests booted with a tier choose it).
    """

    def __init__(self, bed, steps, seconds, name, on=True):
        self.bed, self.steps, self.seconds, self.name, self.on = \
            bed, steps, seconds, name, on
        self.roles = ['q1', 'q2'] + [s.who for s in steps
                                     if s.what == 'boot']
        self.doms = {'q1': bed.quiet[0], 'q2': bed.quiet[1]}
        self.tiers = {s.who: s.tier for s in steps
                      if s.tier and s.what == 'boot'}
        #: the guest whose write latency histogram is read (a tier with
        #: an objective), and admission's answer to each tier choice
        self.timed = next((r for r, t in self.tiers.items()
                           if TIERS[t].get('latency_p99_ms')), None)
        self.admission = {}

    def read(self):
        limits, counters = [], []
        for role in self.roles:
            dom = self.doms.get(role)
            if dom is None:
                limits.append({})
                counters += [0, 0, 0]
                continue
            stats = dom.blockStatsFlags('vda')
            limits.append(bed_mod.limits(dom))
            counters += [stats['wr_bytes'], stats['wr_operations'],
                         stats['wr_total_times']]
        timed = self.doms.get(self.timed)
        return limits, timed and qemu_histogram.read(
            timed, ('wr',))[TIMED_ALIAS], counters

    def _choose(self, role, tier):
        """Once iotguard lists the guest, choose its tier as an admin."""
        uuid = self.doms[role].UUIDString()
        try:
            bed_mod.wait(lambda: uuid in {
                i['uuid'] for i in self.bed.api(
                    'GET', '/v1/instances?all_projects=true',
                    bed_mod.ADMIN)['instances']}, 60,
                'iotguard registered %s' % role)
            status, answer, _ = self.bed.services.call(
                'PUT', '/v1/instances/%s/tier' % uuid, bed_mod.ADMIN,
                {'tier': self.bed.tier_names[tier]}, timeout=10)
        except RuntimeError as exc:
            status, answer = None, str(exc)
        self.admission[role] = (time.time(), status, answer)

    def play(self):
        """Samples ``(time, limits, histogram, counters)``, steps' times."""
        poller = bed_mod.Poller(self.read, 3, WINDOW_S)
        done, choosing = [], []
        start = time.time()
        poller.start()
        try:
            for step in self.steps:
                time.sleep(max(0.0, start + step.at - time.time()))
                if step.what == 'boot':
                    dom = self.bed.guest(
                        '%s-%s' % (step.who, self.name),
                        'proj-a' if step.tier else 'proj-b', step.writers)
                    if step.who == self.timed:
                        qemu_histogram.set_bounds(dom, TIMED_ALIAS,
                                                  BOUNDS_MS, ('wr',))
                    self.doms[step.who] = dom
                    if step.tier and self.on:
                        choosing.append(threading.Thread(
                            target=self._choose, args=(step.who, step.tier),
                            daemon=True))
                        choosing[-1].start()
                elif step.what == 'pause':
                    self.doms[step.who].suspend()
                elif step.what == 'tier':
                    if self.on:
                        self._choose(step.who, step.tier)
                else:
                    self.doms[step.who].resume()
                done.append((time.time() - start, step))
            time.sleep(max(0.0, start + self.seconds - time.time()))
        finally:
            samples = poller.stop()
            for thread in choosing:
                thread.join()
            for role, dom in self.doms.items():
                if role.startswith('q'):
                    if dom.info()[0] == 3:   # VIR_DOMAIN_PAUSED
                        dom.resume()
                else:
                    dom.destroy()
                if role in self.tiers and self.on:
                    # its floor no longer committed for the next runs
                    self.bed.services.call(
                        'DELETE', '/v1/instances/%s/tier'
                        % dom.UUIDString(), bed_mod.ADMIN, timeout=10)
        return start, samples, done


@dataclasses.dataclass
class Series:
    """One run's one-second windows, in shares of the bucket."""

    times: np.ndarray
    x: np.ndarray
    demand: np.ndarray
    latency_ms: np.ndarray
    changes: list
    actions: list
    #: the disk's limits on libvirt above its static ceiling at the
    #: window's start or end (a burst granted), and the seconds they were
    lifted: np.ndarray
    burst_s: np.ndarray
    #: the 10-s windows' start times and the timed disk's p99 (ms) in each
    p99_times: np.ndarray
    p99_ms: np.ndarray
    #: the first aggressor's first write (inf: none)
    flood: float
    #: each window's floor of each disk (a share of the bucket; 0: none)
    floor: np.ndarray


def series(player, start, samples, done):
    """The run's windows, demand, load changes and limit changes."""
    times, rates = bed_mod.windows(samples, WINDOW_S, WINDOW_S)
    times = times - start
    disks = len(player.roles)
    by = rates.reshape(len(times), disks, 3)
    x = cost(by[:, :, :2].reshape(len(times), 2 * disks))
    latency = np.where(by[:, :, 1] > 0, by[:, :, 2] / np.maximum(
        by[:, :, 1], 1e-9) / 1e6, 0.0)
    # each disk's demand alone (quiet: measured by the bed; a guest with
    # one: its own; an aggressor: the whole bucket), times the share of
    # each window it ran
    given = {s.who: s.demand / sq.BYTES_SEC for s in player.steps
             if s.demand}
    alone = list(player.bed.demand / sq.BYTES_SEC) + [
        given.get(role, 1.0) for role in player.roles[2:]]
    running = {r: [[-np.inf, np.inf]] for r in player.roles[:2]}
    # each window's floor (a share of the bucket): the quiet guests', and
    # that of the tier a guest with a demand is of at the window's end
    floor = np.zeros((len(times), disks))
    floor[:, :2] = sq.FLOOR / sq.BYTES_SEC
    changes, flood = [], np.inf
    for at, step in done:
        i = player.roles.index(step.who)
        if step.what == 'tier':
            if step.who in given:
                floor[times + WINDOW_S > at, i] = TIERS[step.tier][
                    'min_bytes_sec'] / sq.BYTES_SEC
            changes.append(at)
            continue
        if step.what == 'boot':
            # its first write: the first window it wrote in
            wrote = np.flatnonzero(by[:, i, 0] > 0)
            onset = float(times[wrote[0]]) if len(wrote) else np.inf
            running[step.who] = [[onset, np.inf]]
            if not step.tier:
                flood = min(flood, onset)
            elif step.who in given:
                floor[times + WINDOW_S > onset, i] = TIERS[step.tier][
                    'min_bytes_sec'] / sq.BYTES_SEC
        elif step.what == 'pause':
            running[step.who][-1][1] = at
            onset = at
        else:
            running[step.who].append([at, np.inf])
            onset = at
        if np.isfinite(onset):
            changes.append(onset)
    demand = np.zeros_like(x)
    for i, role in enumerate(player.roles):
        ends = times + np.diff(np.append(times, times[-1] + WINDOW_S))
        for a, b in running.get(role, []):
            overlap = np.clip(np.minimum(ends, b) - np.maximum(times, a),
                              0, None)
            demand[:, i] += alone[i] * overlap / (ends - times)
    actions = []
    for i in range(disks):
        seen = None
        for t, lim, *_ in samples:
            if lim is None or not lim[i]:
                continue
            if seen is not None and lim[i] != seen:
                actions.append(loop.Action(t - start, i, 'cap', True, '',
                                           False))
            seen = lim[i]
    # a limit above the static ceiling the guest was booted with
    static = [(s.writers or {}).get('static_bytes_sec',
                                    sharedqueue.STATIC_BYTES_SEC)
              for s in player.steps if s.what == 'boot']
    static = [np.inf, np.inf] + static
    good = [(t, lim) for t, lim, *rest in samples if rest[-1] is not None]
    up = np.array([[max((v for k, v in lim[i].items() if 'bytes' in k),
                        default=0) > static[i] * 1.01
                    for i in range(disks)] for _, lim in good])
    lifted = up[:len(times)] | up[1:len(times) + 1]
    burst_s = (np.diff([t for t, _ in good])[:, None] * up[:-1]).sum(axis=0)
    timed = [(t, h) for t, _, h, c in samples if h is not None]
    p99_times, p99 = np.array([]), np.array([])
    if len(timed) > 1:
        t10, counts = bed_mod.windows(timed, LATENCY_WINDOW_S, WINDOW_S)
        pick, last = [], -np.inf
        for k, t in enumerate(t10):
            if t >= last + LATENCY_WINDOW_S - WINDOW_S / 2:
                pick.append(k)
                last = t
        p99_times = t10[pick] - start
        p99 = np.array([qemu_histogram.p99_ms(counts[k], BOUNDS_MS)
                        for k in pick])
    return Series(times, x, demand, latency, sorted(changes), actions,
                  lifted, burst_s, p99_times, p99, flood, floor)


def judge(s, reference):
    """The measures of one run (``reference``: the run without iotguard)."""
    disks = s.x.shape[1]
    floor = s.floor
    weight = np.ones(disks)
    target = np.minimum(floor, s.demand)
    kept, worst = measures.compliance(s.x, target)
    reclaim = measures.reclaim_times(s.x, target, floor, s.times, WINDOW_S,
                                     s.changes)
    settle = measures.settling(s.times, WINDOW_S, s.changes)
    alloc = measures.oracle(np.ones(len(s.x)), floor, s.demand, weight)
    k = min(len(s.x), len(reference.x))
    ref_alloc = measures.oracle(np.ones(len(reference.x)), reference.floor,
                                reference.demand, weight)
    counts = measures.steady_changes(s.actions, disks, s.times, WINDOW_S,
                                     np.zeros(len(s.times), dtype=bool))

    def pct(q):
        return float(np.percentile(reclaim, q)) if len(reclaim) else 0.0

    return {
        'windows': len(s.x),
        'compliance': kept, 'worst_1s': worst,
        'reclaims': len(reclaim), 'reclaim_p50_s': pct(50),
        'reclaim_p99_s': pct(99), 'reclaim_max_s': pct(100),
        'work_conservation': measures.work_conservation(s.x[:k],
                                                        reference.x[:k]),
        'min_max_ratio': measures.min_max_ratio(s.x, s.demand, floor,
                                                weight),
        'cap_changes': int(counts.max()) if disks else 0,
        'cap_changes_per_10min': measures.cap_changes_per_10min(
            s.actions, disks, s.times, WINDOW_S, settle),
        'quiet_latency_ms': measures.quiet_latency(
            s.latency_ms, s.x, s.demand, alloc, settle),
        'quiet_latency_ms_without': measures.quiet_latency(
            reference.latency_ms, reference.x, reference.demand, ref_alloc,
            measures.settling(reference.times, WINDOW_S,
                              reference.changes)),
        'compliance_without': measures.compliance(
            reference.x, np.minimum(reference.floor, reference.demand))[0],
    }


def burst_measures(player, s):
    """The bursting guest's granted and served seconds, floors meanwhile."""
    i = next(k for k, r in enumerate(player.roles)
             if player.tiers.get(r) == 'burst')
    floor = np.array([sq.FLOOR / sq.BYTES_SEC] * 2)
    target = np.minimum(floor[None, :], s.demand[:, :2])
    alone = s.lifted[:, i] & (s.times + WINDOW_S <= s.flood)
    kept, worst = measures.compliance(s.x[alone, :2], target[alone]) \
        if alone.any() else (None, None)
    ceiling = TIERS['burst']['max_bytes_sec'] / sq.BYTES_SEC
    after = np.flatnonzero((s.times >= s.flood) & ~s.lifted[:, i])
    return {'burst_granted_s': float(s.burst_s[i]),
            'burst_served_s': float(WINDOW_S * np.sum(
                s.x[:, i] > 1.05 * ceiling)),
            'compliance_bursting': kept, 'worst_bursting': worst,
            'bursting_windows': int(alone.sum()),
            'bursting_at_flood': bool(s.lifted[s.times >= s.flood, i][:1]
                                      .any()),
            'taken_back_s': float(s.times[after[0]] - s.flood)
            if len(after) and s.lifted[s.times < s.flood, i].any()
            else None}


def latency_measures(player, s, reference, start):
    """The timed disk's 10-s p99s and 1-s means, with and without iotguard.

    The windows that end after the aggressors' first write (the first
    load change), the one it falls in included.
    """
    objective = TIERS[player.tiers[player.timed]]['latency_p99_ms']
    g = player.roles.index(player.timed)
    out = {'objective_ms': objective}

    def p99(run):
        # every window that ends after the aggressors' first write: the
        # one the arrival falls in too
        judged = (run.p99_times + LATENCY_WINDOW_S
                  > run.flood + WINDOW_S / 2) & np.isfinite(run.p99_ms)
        return run.p99_ms[judged]

    for key, run in (('', s), ('_without', reference)):
        got = p99(run)
        out['p99_windows' + key] = len(got)
        out['p99_kept' + key] = float(np.mean(got <= objective)) \
            if len(got) else float('nan')
        out['p99_worst_ms' + key] = float(got.max()) if len(got) \
            else float('nan')
    means = s.latency_ms[(s.times >= s.flood) & (s.latency_ms[:, g] > 0), g]
    out.update(mean_kept=float(np.mean(means <= objective)),
               mean_worst_ms=float(means.max()),
               mean_p50_ms=float(np.median(means)))
    at, status, answer = player.admission.get(player.timed,
                                              (None, None, None))
    if status != 200:
        raise RuntimeError('the gold tier was not admitted: %s %s'
                           % (status, answer))
    verdict = answer['instance']['admission'][0]
    out.update(predicted_p99_ms=verdict.get('predicted_p99_ms'),
               committed=verdict.get('committed_after'),
               chosen_s=at - start)
    return out


def _iotguard_off(bed):
    """The agent stopped, every guest's disk at its static limits."""
    deployment.reap(bed.services.procs['agent'])
    for dom, static in zip(bed.quiet, bed.static_quiet):
        now = bed_mod.limits(dom)
        if now != static:
            dom.setBlockIoTune('vda', {k: static.get(k, 0) for k in
                                       set(now) | set(static)}, 0)


CONNECTED = 'Connected to libvirt'


def _connections(bed):
    """How many times the bed's agents logged their libvirt connection."""
    with open(os.path.join(bed.services.dir, 'agent.log'),
              errors='replace') as f:
        return sum(CONNECTED in line for line in f)


def _iotguard_on(bed):
    # the agent's service runs in a process oslo.service forks: its log
    # lines carry that one's pid, not the spawned one's
    bed.connections = _connections(bed)
    bed.services.spawn('agent')


def _agent_ready(bed, timeout=120):
    """Wait until the agent started last has connected to libvirt."""
    proc = bed.services.procs['agent']
    before = getattr(bed, 'connections', 0)
    try:
        bed_mod.wait(lambda: proc.poll() is not None
                     or _connections(bed) > before, timeout,
                     'the agent connected to libvirt')
    finally:
        if proc.poll() is not None:
            with open(os.path.join(bed.services.dir, 'agent.err'),
                      errors='replace') as f:
                raise RuntimeError('the agent exited (%s): %s' % (
                    proc.returncode, f.read()[-2000:]))


def one(bed, scenario, run, short):
    """One run of ``scenario`` with iotguard and one without; its result."""
    steps, seconds = SCENARIOS[scenario][0](short)
    played, players = {}, {}
    for on in (True, False):
        if on:
            _agent_ready(bed)
        else:
            _iotguard_off(bed)
        player = players[on] = Player(bed, steps, seconds, '%s%d%s' % (
            scenario[:2], run, 'w' if on else 'o'), on)
        try:
            start, *rest = player.play()
            played[on] = series(player, start, *rest)
            if on:
                began = start
        finally:
            if not on:
                _iotguard_on(bed)
        time.sleep(GAP_S)
    result = {'scenario': scenario, 'run': run}
    result.update(judge(played[True], played[False]))
    player = players[True]
    if 'burst' in player.tiers.values():
        result.update(burst_measures(player, played[True]))
    if player.timed:
        result.update(latency_measures(player, played[True], played[False],
                                       began))
    result['load'] = '%.1f' % os.getloadavg()[0]
    return result


def agent_config(urgent=True, histograms=False, watch_s=0.0):
    """The controller's and agent's options the runs add to the bed's.

    ``histograms``: the agent measures each disk's p99. ``watch_s``: the
    agent reads the disks that often between its samples (``[agent]
    watch_interval``); the controller still decides a domain at most
    once a second on urgent samples (``[controller] urgent_interval``).
    """
    extra = URGENT if urgent else NOT_URGENT
    if urgent and watch_s:
        extra += 'watch_interval = %g\n' % watch_s
    if histograms:
        extra += 'latency_histograms = true\n'
    return extra


def make_bed(workdir, scenarios, runs, urgent=True, histograms=False,
             watch_s=0.0):
    """The bed, with slices for every aggressor of every run.

    The options of :func:`agent_config`. With ``histograms`` the agent
    sets QEMU's histograms on every disk; the timed guest's, set again by
    :meth:`Player.play` with the same bounds, restart from 0 before the
    aggressors come.
    """
    extra = agent_config(urgent, histograms, watch_s)
    aggressors = max(sum(1 for s in SCENARIOS[n][0](True)[0]
                         if s.what == 'boot') for n in scenarios)
    bed = bed_mod.Bed(workdir, noisy=False, prefix='g',
                      slices=2 + 2 * aggressors * runs * len(scenarios),
                      extra=extra)
    return bed


def ready(bed):
    """The quiet guests' static limits (``_iotguard_off``); the tiers.

    The scenarios' tiers (:data:`TIERS`) are created on the bed.
    """
    bed.static_quiet = [bed_mod.limits(d) for d in bed.quiet]
    bed.tier_names = {}
    for key, spec in TIERS.items():
        bed.tier_names[key] = '%s-%s' % (key, bed.run_id)
        bed.api('POST', '/v1/tiers', bed_mod.ADMIN,
                dict(spec, name=bed.tier_names[key]))


COLUMNS = (('compliance', '%.4f'), ('worst_1s', '%.2f'),
           ('reclaims', '%d'), ('reclaim_p50_s', '%.1f'),
           ('reclaim_p99_s', '%.1f'), ('reclaim_max_s', '%.1f'),
           ('work_conservation', '%.3f'), ('min_max_ratio', '%.2f'),
           ('cap_changes', '%d'), ('cap_changes_per_10min', '%.0f'),
           ('quiet_latency_ms', '%.0f'), ('quiet_latency_ms_without',
                                          '%.0f'),
           ('compliance_without', '%.3f'), ('load', '%s'))


#: The burst and latency scenarios' own measures (``-`` elsewhere).
EXTRA = (('burst_granted_s', '%.0f'), ('burst_served_s', '%.0f'),
         ('compliance_bursting', '%.4f'), ('worst_bursting', '%.2f'),
         ('taken_back_s', '%.1f'),
         ('objective_ms', '%.0f'), ('predicted_p99_ms', '%.0f'),
         ('p99_windows', '%d'), ('p99_kept', '%.3f'),
         ('p99_worst_ms', '%.0f'), ('mean_kept', '%.3f'),
         ('mean_worst_ms', '%.0f'), ('p99_kept_without', '%.3f'),
         ('p99_worst_ms_without', '%.0f'))


def table(results):
    """One line per run, then min/median/max per scenario (RST)."""
    columns = COLUMNS + tuple(c for c in EXTRA
                              if any(c[0] in r for r in results))
    head = ('scenario', 'run') + tuple(c for c, _ in columns)

    def show(f, value):
        return '-' if value is None else f % value

    rows = []
    for r in results:
        rows.append((r['scenario'], str(r['run'])) + tuple(
            show(f, r.get(c)) for c, f in columns))
    for name in dict.fromkeys(r['scenario'] for r in results):
        mine = [r for r in results if r['scenario'] == name]
        if len(mine) < 2:
            continue
        for label, pick in (('min', min), ('median', statistics.median),
                            ('max', max)):
            rows.append((name, label) + tuple(
                show(f if c != 'load' else '%.1f', pick(got) if got
                     else None) for c, f in columns
                for got in [[float(r[c]) for r in mine
                             if r.get(c) is not None]]))
    widths = [max(len(row[i]) for row in rows + [head])
              for i in range(len(head))]
    rule = '  '.join('=' * w for w in widths)
    lines = [rule, '  '.join(c.ljust(w) for c, w in zip(head, widths)),
             rule]
    lines += ['  '.join(c.ljust(w) for c, w in zip(row, widths))
              for row in rows]
    return '\n'.join(lines + [rule])


def model():
    """The machine's CPU (``lscpu``'s model name)."""
    out = subprocess.run(['lscpu'], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith('Model name:'):
            return line.split(':', 1)[1].strip()
    return 'unknown'


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--scenario', action='append', choices=SCENARIOS,
                        help='repeatable; every scenario, in the issue\'s '
                        'order, unless given')
    parser.add_argument('--runs', type=int, default=3)
    parser.add_argument('--short', action='store_true',
                        help='the short version of each scenario (CI)')
    parser.add_argument('--no-urgent', action='store_true',
                        help='urgent samples off: floors wait for the '
                        'round (every second)')
    parser.add_argument('--watch-interval', type=float, default=0.0,
                        metavar='S',
                        help='[agent] watch_interval S: the agent reads '
                        'the disks every S seconds between samples and '
                        'sends one at once when a disk rose (0: off)')
    parser.add_argument('--latency-histograms', action='store_true',
                        help='[agent] latency_histograms on: the policy '
                        'judges a disk\'s latency on its p99, not its mean')
    parser.add_argument('--json', action='store_true',
                        help='one JSON line per run, no table')
    parser.add_argument('--keep', metavar='DIR',
                        help='keep the bed\'s files (logs, configs) in DIR')
    args = parser.parse_args(argv)
    names = args.scenario or list(SCENARIOS)
    import libvirt
    # the guests destroyed at a run's end are destroyed again at the bed's
    # (SharedQueue's cleanup): no message on stderr for that
    libvirt.registerErrorHandler(lambda *_: None, None)
    results = []
    started = time.monotonic()
    with bed_mod.workdir(args.keep) as workdir:
        with make_bed(workdir, names, args.runs,
                      not args.no_urgent, args.latency_histograms,
                      args.watch_interval) as bed:
            ready(bed)
            if not args.json:
                print('%s; %s' % (bed_mod.ready_line(bed, started),
                                  model()), flush=True)
            for name in names:
                for run in range(1, args.runs + 1):
                    result = one(bed, name, run, args.short)
                    results.append(result)
                    print(json.dumps(result), flush=True)
    if not args.json:
        print(table(results))
        print('load %.1f %.1f %.1f; %s; %s%s' % (
            *os.getloadavg(), model(),
            'urgent path off' if args.no_urgent else 'urgent path on' + (
                ', watch every %g s' % args.watch_interval
                if args.watch_interval else ''),
            '; agent p99 on' if args.latency_histograms else ''))


if __name__ == '__main__':
    main()
