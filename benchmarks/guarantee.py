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
``--no-urgent`` turns it off). Each run of a scenario plays its steps
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
import time

import numpy as np

from benchmarks import bed as bed_mod
from iotguard.sim import loop
from iotguard.sim import measures
from iotguard.tests.fixtures import deployment
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


@dataclasses.dataclass
class Step:
    """One step of a scenario, ``at`` s after its start.

    ``boot`` an aggressor ``who`` (``writers``), or ``pause``/``resume``
    a guest (``q1``, ``q2`` or an aggressor).
    """

    at: float
    what: str
    who: str
    writers: dict | None = None


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
}


def cost(rates):
    """Share of the bucket per window: (bytes/s, ops/s) -> whichever binds.

    ``rates``: ``(windows, 2 * disks)``, bytes/s and ops/s of each disk.
    The measures' unit (device-seconds per second): a 4 KiB and a 64 KiB
    disk compared by what they take of the queue.
    """
    return np.maximum(rates[:, 0::2] / sq.BYTES_SEC, rates[:, 1::2] / sq.IOPS)


class Player:
    """One run of a scenario's steps on the bed, read every second."""

    def __init__(self, bed, steps, seconds, name):
        self.bed, self.steps, self.seconds, self.name = \
            bed, steps, seconds, name
        self.roles = ['q1', 'q2'] + [s.who for s in steps
                                     if s.what == 'boot']
        self.doms = {'q1': bed.quiet[0], 'q2': bed.quiet[1]}

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
        return limits, counters

    def play(self):
        """Samples ``(time, limits, counters)`` and the steps' times."""
        poller = bed_mod.Poller(self.read, 2, WINDOW_S)
        done = []
        start = time.time()
        poller.start()
        try:
            for step in self.steps:
                time.sleep(max(0.0, start + step.at - time.time()))
                if step.what == 'boot':
                    self.doms[step.who] = self.bed.guest(
                        '%s-%s' % (step.who, self.name), 'proj-b',
                        step.writers)
                elif step.what == 'pause':
                    self.doms[step.who].suspend()
                else:
                    self.doms[step.who].resume()
                done.append((time.time() - start, step))
            time.sleep(max(0.0, start + self.seconds - time.time()))
        finally:
            samples = poller.stop()
            for role, dom in self.doms.items():
                if role.startswith('q'):
                    if dom.info()[0] == 3:   # VIR_DOMAIN_PAUSED
                        dom.resume()
                else:
                    dom.destroy()
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


def series(player, start, samples, done):
    """The run's windows, demand, load changes and limit changes."""
    times, rates = bed_mod.windows(samples, WINDOW_S, WINDOW_S)
    times = times - start
    disks = len(player.roles)
    by = rates.reshape(len(times), disks, 3)
    x = cost(by[:, :, :2].reshape(len(times), 2 * disks))
    latency = np.where(by[:, :, 1] > 0, by[:, :, 2] / np.maximum(
        by[:, :, 1], 1e-9) / 1e6, 0.0)
    # each disk's demand alone (quiet: measured by the bed; an aggressor:
    # the whole bucket), times the share of each window it ran
    alone = list(player.bed.demand / sq.BYTES_SEC) + [1.0] * (disks - 2)
    running = {r: [[-np.inf, np.inf]] for r in player.roles[:2]}
    changes = []
    for at, step in done:
        i = player.roles.index(step.who)
        if step.what == 'boot':
            # its first write: the first window it wrote in
            wrote = np.flatnonzero(by[:, i, 0] > 0)
            onset = float(times[wrote[0]]) if len(wrote) else np.inf
            running[step.who] = [[onset, np.inf]]
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
        for t, lim, _ in samples:
            if lim is None or not lim[i]:
                continue
            if seen is not None and lim[i] != seen:
                actions.append(loop.Action(t - start, i, 'cap', True, '',
                                           False))
            seen = lim[i]
    return Series(times, x, demand, latency, sorted(changes), actions)


def judge(s, reference):
    """The measures of one run (``reference``: the run without iotguard)."""
    disks = s.x.shape[1]
    floor = np.array([sq.FLOOR / sq.BYTES_SEC] * 2 + [0.0] * (disks - 2))
    weight = np.ones(disks)
    target = np.minimum(floor[None, :], s.demand)
    kept, worst = measures.compliance(s.x, target)
    reclaim = measures.reclaim_times(s.x, target, floor, s.times, WINDOW_S,
                                     s.changes)
    settle = measures.settling(s.times, WINDOW_S, s.changes)
    alloc = measures.oracle(np.ones(len(s.x)), floor, s.demand, weight)
    k = min(len(s.x), len(reference.x))
    ref_alloc = measures.oracle(np.ones(len(reference.x)), floor,
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
            reference.x, np.minimum(floor[None, :], reference.demand))[0],
    }


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
    played = {}
    for on in (True, False):
        if on:
            _agent_ready(bed)
        else:
            _iotguard_off(bed)
        player = Player(bed, steps, seconds, '%s%d%s' % (
            scenario[:2], run, 'w' if on else 'o'))
        try:
            played[on] = series(player, *player.play())
        finally:
            if not on:
                _iotguard_on(bed)
        time.sleep(GAP_S)
    result = {'scenario': scenario, 'run': run}
    result.update(judge(played[True], played[False]))
    result['load'] = '%.1f' % os.getloadavg()[0]
    return result


def make_bed(workdir, scenarios, runs, urgent=True):
    """The bed, with slices for every aggressor of every run."""
    aggressors = max(sum(1 for s in SCENARIOS[n][0](True)[0]
                         if s.what == 'boot') for n in scenarios)
    bed = bed_mod.Bed(workdir, noisy=False, prefix='g',
                      slices=2 + 2 * aggressors * runs * len(scenarios),
                      extra=URGENT if urgent else NOT_URGENT)
    return bed


def ready(bed):
    """Remember the quiet guests' static limits (``_iotguard_off``)."""
    bed.static_quiet = [bed_mod.limits(d) for d in bed.quiet]


COLUMNS = (('compliance', '%.4f'), ('worst_1s', '%.2f'),
           ('reclaims', '%d'), ('reclaim_p50_s', '%.1f'),
           ('reclaim_p99_s', '%.1f'), ('reclaim_max_s', '%.1f'),
           ('work_conservation', '%.3f'), ('min_max_ratio', '%.2f'),
           ('cap_changes', '%d'), ('cap_changes_per_10min', '%.0f'),
           ('quiet_latency_ms', '%.0f'), ('quiet_latency_ms_without',
                                          '%.0f'),
           ('compliance_without', '%.3f'), ('load', '%s'))


def table(results):
    """One line per run, then min/median/max per scenario (RST)."""
    head = ('scenario', 'run') + tuple(c for c, _ in COLUMNS)
    rows = []
    for r in results:
        rows.append((r['scenario'], str(r['run'])) + tuple(
            f % r[c] for c, f in COLUMNS))
    for name in dict.fromkeys(r['scenario'] for r in results):
        mine = [r for r in results if r['scenario'] == name]
        if len(mine) < 2:
            continue
        for label, pick in (('min', min), ('median', statistics.median),
                            ('max', max)):
            rows.append((name, label) + tuple(
                f % pick(float(r[c]) for r in mine) if c != 'load'
                else '%.1f' % pick(float(r[c]) for r in mine)
                for c, f in COLUMNS))
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
                      not args.no_urgent) as bed:
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
        print('load %.1f %.1f %.1f; %s; %s' % (
            *os.getloadavg(), model(),
            'urgent path off' if args.no_urgent else 'urgent path on'))


if __name__ == '__main__':
    main()
