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

"""Faults injected into iotguard on the shared-queue bed, measured.

    flock /tmp/bed.lock python -m benchmarks.faults \\
        --fault controller-kill --fault agent-kill --runs 3

The bed (:mod:`iotguard.tests.fixtures.sharedqueue`) with its own
RabbitMQ node and PostgreSQL cluster (never the machine's shared ones):
two quiet guests on a tier, a noisy guest capped by iotguard (api,
controller and agent as processes). Then, for each run of each fault, one
episode: ``--at`` seconds of the steady state, the fault for its
``--duration``, healed, ``--after`` seconds more. What the agent applied
is read from libvirt (the noisy guest's ``<iotune>``) and its state file
(the cap's lease) every ``POLL_S``; the guests' writes from libvirt's
block statistics, as the bed's tests read them. Per episode
(:class:`Result`): the longest time a cap stayed in force past its lease,
the time from the heal to the quiet guests' demand kept again, their
worst 1 s and 5 s windows during the fault and after the heal, the
decisions written (those the agent applied read back through the API:
none lost, none listed twice), the error lines of each service's log,
and the services that were not running at the end (a restart by hand
needed). The episodes run one after the other on one bed.
"""

import argparse
import dataclasses
import json
import os
import signal
import statistics
import subprocess
import threading
import time

import numpy as np

from benchmarks import bed as bed_mod
from iotguard.sim import measures
from iotguard.tests.fixtures import deployment
from iotguard.tests.functional import test_shared_queue as sq

#: How often what the agent applied and the guests wrote are read.
POLL_S = 0.5
#: iotguard's decision interval and lease on the bed (sharedqueue.CONFIG).
INTERVAL_S = 2.0
LEASE_S = 10.0
ADMIN = bed_mod.ADMIN


@dataclasses.dataclass
class Fault:
    """How to break one part of the bed and heal it.

    ``observe``: what else to report of the bed after the episode;
    ``lease``: where the runner reads the agent's lease (``bed.lease``:
    its state file; ``bed.agent_lease``: its memory, over RPC, where the
    fault keeps the file from being written).
    """
    inject: object
    heal: object
    duration: float
    doc: str
    observe: object = None
    lease: str = 'lease'


def _signal(kind, signum):
    def send(bed):
        os.killpg(bed.services.procs[kind].pid, signum)
    return send


def _kill(kind):
    def kill(bed):
        deployment.reap(bed.services.procs[kind])
    return kill


def _respawn(kind, env=None):
    def respawn(bed):
        bed.services.spawn(kind, env)
    return respawn


#: Loaded by a skewed agent's interpreter (``PYTHONPATH``): its wall clock
#: (``time.time``, what leases and samples are read against) moved by
#: ``IOTGUARD_SKEW_S`` seconds, its monotonic clock true. libfaketime does
#: not serve: with the monotonic clock true Python's ``time.sleep`` fails
#: with EINVAL (0.9.10), with it faked ``threading.Event.wait`` never
#: returns, and the agent died at start in either case.
SKEW = """import os, time
_true = time.time
_skew = float(os.environ['IOTGUARD_SKEW_S'])
time.time = lambda: _true() + _skew
time.time_ns = lambda: int((_true() + _skew) * 1e9)
"""


def _skewed(offset):
    """Restart the agent with its wall clock ``offset`` seconds off."""
    def skew(bed):
        path = os.path.join(bed.dir, 'skew')
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, 'sitecustomize.py'), 'w') as f:
            f.write(SKEW)
        deployment.reap(bed.services.procs['agent'])
        _respawn('agent', {'PYTHONPATH': path,
                           'IOTGUARD_SKEW_S': str(offset)})(bed)
    return skew


def _unskew(bed):
    deployment.reap(bed.services.procs['agent'])
    bed.services.spawn('agent')


FILLER = 'filler'


def _fill(bed):
    """Fill the agent's state directory (a small tmpfs) to the last byte."""
    # unbuffered: nothing left to flush (and fail) at close
    with open(os.path.join(bed.state_dir, FILLER), 'wb', buffering=0) as f:
        try:
            while True:
                f.write(b'\0' * 4096)
        except OSError:
            pass


def _unfill(bed):
    os.unlink(os.path.join(bed.state_dir, FILLER))


#: Where ``libvirtd -d`` (tools/test-setup.sh: no systemd) writes its pid.
LIBVIRTD_PID = '/run/libvirtd.pid'


def _qemu_pids(bed):
    """{guest name: its QEMU's pid} of the bed's guests."""
    out = {}
    for dom in bed.quiet + [bed.noisy]:
        name = dom.name()
        with open('/run/libvirt/qemu/%s.pid' % name) as f:
            out[name] = int(f.read())
    return out


def _libvirtd_stop(bed):
    """libvirtd stopped (SIGTERM), its guests' QEMU processes noted."""
    bed.qemu_before = _qemu_pids(bed)
    with open(LIBVIRTD_PID) as f:
        pid = int(f.read())
    os.kill(pid, signal.SIGTERM)
    _wait(lambda: not os.path.exists('/proc/%d' % pid), 30,
          'libvirtd to exit')


def _libvirtd_start(bed):
    """libvirtd started as tools/test-setup.sh starts it, answering."""
    subprocess.run(['timeout', '20', 'libvirtd', '-d'], check=True)
    _wait(lambda: subprocess.run(
        ['timeout', '5', 'virsh', '-c', 'qemu:///system', 'version'],
        capture_output=True).returncode == 0, 30, 'libvirtd to answer')
    bed.reconnect()


def _qemu_survived(bed):
    """Whether every guest's QEMU is the process it was before."""
    return {'qemu_survived': _qemu_pids(bed) == bed.qemu_before}


def _state_files(bed):
    return {'state_dir': sorted(os.listdir(bed.state_dir))}


FAULTS = {
    'controller-kill': Fault(
        _kill('controller'), _respawn('controller'), 15.0,
        'the controller SIGKILLed, started again after the duration'),
    'controller-hang': Fault(
        _signal('controller', signal.SIGSTOP),
        _signal('controller', signal.SIGCONT), 15.0,
        'the controller stopped (SIGSTOP) for longer than a lease, then '
        'continued (SIGCONT)'),
    'agent-kill': Fault(
        _kill('agent'), _respawn('agent'), 5.0,
        'the agent SIGKILLed, started again after the duration (as a '
        'supervisor would)'),
    'rabbit-stop': Fault(
        lambda bed: bed.rabbit.stop(), lambda bed: bed.rabbit.start(),
        60.0, 'the RabbitMQ node stopped, started again'),
    'db-stop': Fault(
        lambda bed: bed.pg.stop(), lambda bed: bed.pg.start(), 60.0,
        'the PostgreSQL cluster (the controller\'s and the API\'s '
        'database) stopped, started again; a tenant chooses tiers '
        'throughout'),
    'clock-ahead': Fault(
        _skewed(30.0), _unskew, 30.0,
        'the agent restarted with its wall clock 30 s ahead, '
        'restarted with the true clock after the duration'),
    'clock-behind': Fault(
        _skewed(-30.0), _unskew, 30.0,
        'the agent restarted with its wall clock 30 s behind, restarted '
        'with the true clock after the duration'),
    'agent-cut': Fault(
        lambda bed: bed.cut(), lambda bed: bed.uncut(), 30.0,
        'the agent cut off from RabbitMQ (its packets to the broker '
        'dropped: iptables on the port only it uses; on the cloud, in its '
        'host\'s network namespace), its guests running; the rule removed '
        'after the duration'),
    'libvirtd-restart': Fault(
        _libvirtd_stop, _libvirtd_start, 5.0,
        'libvirtd stopped (SIGTERM), started again (``libvirtd -d``) after '
        'the duration; the guests run on (their QEMU processes are '
        'checked to be the same)', observe=_qemu_survived),
    'state-full': Fault(
        _fill, _unfill, 30.0,
        'the agent\'s state directory (a tmpfs of bed.STATE_FS_SIZE) filled '
        'up, then the filler removed', observe=_state_files,
        lease='agent_lease'),
}


#: The faults the two-host cloud (``--cloud``) plays: its broker and
#: libvirtds are not the runner's to stop, its agents' clocks and state
#: directories not yet its own.
CLOUD_FAULTS = ('controller-kill', 'controller-hang', 'agent-kill',
                'agent-cut')


@dataclasses.dataclass
class Result:
    fault: str
    run: int
    #: the longest time a cap stayed in force past its lease (s)
    past_lease: float
    #: from the heal (the broker or the database listening again, the
    #: process started) to the start of the first 5 s window (ending after
    #: the heal) with every quiet guest at 0.95 of its demand (s; None:
    #: not within the episode; 0: kept through the heal)
    restore: float | None
    #: from the heal to the noisy guest's cap in force again (s; None: not
    #: within the episode; 0: in force at the heal)
    recapped: float | None
    #: the quiet guests' worst window, in share of their demand
    worst_1s_during: float
    worst_5s_during: float
    worst_1s_after: float
    worst_5s_after: float
    #: decisions on the noisy guest written in the episode; decisions the
    #: agent applied that the API does not list; listed twice
    decisions: int
    lost: int
    duplicated: int
    #: error lines per service log in the episode
    errors: dict
    #: services not running at the end (would need a restart by hand)
    dead: list
    #: the tenant's tier choices: status codes seen (db-stop only), and
    #: whether the last accepted choice is the one in force
    choices: dict
    #: decisions written in the first decision interval after the heal
    #: (a woken controller acting on what it saw before)
    after_heal: list
    #: every decision on the noisy guest written in the episode
    written: list
    #: what the fault's own observation found
    notes: dict
    load: str


class Bed(bed_mod.Bed):
    """The bed of :mod:`benchmarks.bed`, a noisy guest capped.

    The agent's link to RabbitMQ is restored (``agent-cut``) at the end.
    """

    def _setUp(self):
        super()._setUp()
        self.addCleanup(self.uncut)

    def _cut_rule(self):
        # the agent's packets to the broker's second port dropped, as a
        # link taken down: its connections hang (no reset), the guests run
        return ['INPUT', '-i', 'lo', '-p', 'tcp', '--dport',
                str(self.rabbit.port2), '-j', 'DROP']

    def cut(self):
        subprocess.run(['iptables', '-I'] + self._cut_rule(), check=True)

    def uncut(self):
        subprocess.run(['iptables', '-D'] + self._cut_rule(), check=False,
                       capture_output=True)


def Poller(bed, lease='lease'):
    """Reads the bed every POLL_S: (time, noisy limits, lease, writes).

    ``lease``: the bed's method that reads the lease (:class:`Fault`).
    """
    read_lease = getattr(bed, lease)
    return bed_mod.Poller(lambda: (
        bed_mod.limits(bed.noisy), read_lease(),
        [bed_mod.written(d) for d in bed.quiet]), 3, POLL_S)


def _windows(samples, span_s):
    return bed_mod.windows(samples, span_s, POLL_S)


def _worst(times, rates, demand, start, end, span_s):
    return bed_mod.worst(times, rates, demand, start, end, span_s, POLL_S)


_wait = bed_mod.wait


def past_lease(samples, static):
    """The longest a cap stayed in force (libvirt) past its known lease.

    The lease is the latest the agent's state file showed up to the next
    reading: the agent writes it just after applying the cap.
    """
    worst, leases = 0.0, []
    for _, _, held, _ in samples:
        leases.append(held[0] if held is not None else
                      (leases[-1] if leases else None))
    for i, (t, limits, _, _) in enumerate(samples):
        lease = leases[min(i + 1, len(leases) - 1)]
        if limits is not None and limits != static and lease is not None:
            worst = max(worst, t - lease)
    return worst


def _log_offsets(services):
    out = {}
    for kind in services.procs:
        try:
            out[kind] = os.path.getsize(os.path.join(services.dir,
                                                     kind + '.log'))
        except OSError:
            out[kind] = 0
    return out


def _errors(services, offsets):
    """{kind: [error lines since offsets]} of each service's log."""
    out = {}
    for kind, offset in offsets.items():
        path = os.path.join(services.dir, kind + '.log')
        try:
            with open(path, errors='replace') as f:
                f.seek(offset)
                out[kind] = [line.rstrip() for line in f
                             if ' ERROR ' in line or ' CRITICAL ' in line]
        except OSError:
            out[kind] = []
    return out


class Chooser(threading.Thread):
    """A tenant choosing the quiet guests' tier, alternately, every 2 s."""

    def __init__(self, bed):
        super().__init__(daemon=True)
        self.bed, self.seen, self.last_ok = bed, [], None
        self.stopping = threading.Event()

    def run(self):
        i = 0
        while not self.stopping.wait(2.0):
            i += 1
            tier = self.bed.tiers[i % 2]
            try:
                status, _, headers = self.bed.choose(self.bed.quiet[0], tier)
            except OSError as exc:
                self.seen.append('timeout' if 'timed out' in str(exc)
                                 else 'refused')
                continue
            retry = headers.get('Retry-After')
            self.seen.append('%d%s' % (status, '+Retry-After' if retry
                                       else ''))
            if status == 200:
                self.last_ok = tier


def episode(bed, name, run, at, duration, after):
    """One fault, injected ``at`` s in for ``duration`` s; its Result."""
    fault = FAULTS[name]
    offsets = _log_offsets(bed.services)
    poller = Poller(bed, fault.lease)
    chooser = Chooser(bed) if name == 'db-stop' else None
    poller.start()
    start = time.time()
    if chooser:
        chooser.start()
    time.sleep(at)
    injected = time.time()
    fault.inject(bed)
    time.sleep(max(0.0, duration - (time.time() - injected)))
    fault.heal(bed)
    # healed: the broker or database listening again, a process started
    healed = time.time()
    time.sleep(after)
    if chooser:
        chooser.stopping.set()
        chooser.join()
    samples = poller.stop()
    end = time.time()

    t1, x1 = _windows(samples, 1.0)
    t5, x5 = _windows(samples, sq.WINDOW_S)
    kept = (np.all(x5 >= measures.KEPT * bed.demand, axis=1)
            & (t5 + sq.WINDOW_S > healed))
    restore = max(0.0, float(t5[kept][0] - healed)) if kept.any() else None
    recapped = next((max(0.0, t - healed) for t, limits, _, _ in samples
                     if t >= healed - POLL_S and limits is not None
                     and limits != bed.static), None)

    decisions = bed.api('GET', '/v1/decisions?instance=%s&limit=200'
                        % bed.noisy.UUIDString(), ADMIN)['decisions']
    ids = [str(d['id']) for d in decisions]   # the caps carry them so
    keys = [(d['created_at'], d['action'], json.dumps(d['new_limits'],
                                                      sort_keys=True))
            for d in decisions]
    applied = {held[1] for _, _, held, _ in samples
               if held is not None and held[1] is not None}
    written = [d for d in decisions
               if start <= _epoch(d['created_at']) <= end]
    choices = {}
    if chooser:
        status, view, _ = bed.services.call(
            'GET', '/v1/instances/%s' % bed.quiet[0].UUIDString(), ADMIN)
        again = bed.choose(bed.quiet[0], chooser.last_ok or bed.tiers[0])
        choices = {'seen': _runs(chooser.seen),
                   'last_accepted_in_force': None if chooser.last_ok is None
                   else status == 200 and any(
                       d.get('tier') == chooser.last_ok
                       for d in view['instance']['disks']),
                   'choice_after': again[0]}
    return Result(
        fault=name, run=run,
        past_lease=round(past_lease(samples, bed.static), 1),
        restore=None if restore is None else round(restore, 1),
        recapped=None if recapped is None else round(recapped, 1),
        worst_1s_during=_worst(t1, x1, bed.demand, injected, healed, 1.0),
        worst_5s_during=_worst(t5, x5, bed.demand, injected, healed,
                               sq.WINDOW_S),
        worst_1s_after=_worst(t1, x1, bed.demand, healed, end, 1.0),
        worst_5s_after=_worst(t5, x5, bed.demand, healed, end,
                              sq.WINDOW_S),
        decisions=len(written), lost=len(applied - set(ids)),
        duplicated=(len(ids) - len(set(ids))) + (len(keys) - len(set(keys))),
        errors=_errors(bed.services, offsets),
        dead=[k for k, p in bed.services.procs.items()
              if p.poll() is not None],
        choices=choices,
        notes=fault.observe(bed) if fault.observe else {},
        after_heal=['%s %s %s' % (d['created_at'], d['action'],
                                  d.get('reason'))
                    for d in written
                    if healed <= _epoch(d['created_at'])
                    <= healed + INTERVAL_S],
        written=['%s %s %s %s' % (d['created_at'], d['action'], d.get(
            'new_limits'), d.get('reason')) for d in written],
        load='%.1f' % os.getloadavg()[0])


def _epoch(stamp):
    import datetime
    moment = datetime.datetime.fromisoformat(stamp.replace('Z', '+00:00'))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.timestamp()


def _runs(seen):
    """'200 x3, 503+Retry-After x5, 200 x2': consecutive answers."""
    out = []
    for answer in seen:
        if out and out[-1][0] == answer:
            out[-1][1] += 1
        else:
            out.append([answer, 1])
    return ', '.join('%s x%d' % (a, n) for a, n in out)


def own(lines):
    """The error lines of iotguard's own loggers (not its libraries')."""
    return [line for line in lines if ' ERROR iotguard.' in line
            or ' CRITICAL iotguard.' in line]


def table(results):
    """The results as an RST table (one line per fault and run).

    Error lines per service: iotguard's own / all (oslo.messaging logs an
    ERROR at each reconnection attempt).
    """
    head = ('fault', 'run', 'past lease s', 'restore s', 'recapped s',
            'quiet worst '
            'during 1s/5s', 'after 1s/5s', 'decisions lost/dup',
            'error lines', 'dead')
    rows = [head]
    for r in results:
        rows.append((
            r.fault, str(r.run), '%.1f' % r.past_lease,
            '-' if r.restore is None else '%.1f' % r.restore,
            '-' if r.recapped is None else '%.1f' % r.recapped,
            '%.2f / %.2f' % (r.worst_1s_during, r.worst_5s_during),
            '%.2f / %.2f' % (r.worst_1s_after, r.worst_5s_after),
            '%d %d/%d' % (r.decisions, r.lost, r.duplicated),
            ' '.join('%s:%d/%d' % (k, len(own(v)), len(v)) for k, v in
                     sorted(r.errors.items()) if v) or '0',
            ','.join(r.dead) or '-'))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    rule = '  '.join('=' * w for w in widths)
    lines = [rule, '  '.join(c.ljust(w) for c, w in zip(head, widths)),
             rule]
    lines += ['  '.join(c.ljust(w) for c, w in zip(row, widths))
              for row in rows[1:]]
    return '\n'.join(lines + [rule])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--fault', action='append', choices=sorted(FAULTS),
                        help='repeatable; every fault unless given')
    parser.add_argument('--runs', type=int, default=3)
    parser.add_argument('--at', type=float, default=10.0,
                        help='seconds of steady state before the fault')
    parser.add_argument('--duration', type=float,
                        help='seconds the fault lasts (default: the '
                        'fault\'s own)')
    parser.add_argument('--after', type=float, default=30.0,
                        help='seconds watched after the heal')
    parser.add_argument('--json', help='append each result to this file')
    parser.add_argument('--keep', metavar='DIR',
                        help='keep the bed\'s files (logs, configs) in DIR')
    parser.add_argument('--cloud', action='store_true',
                        help='on the two-host Ceph cloud (benchmarks.'
                        'cloudbed) instead of the shared-queue bed: the '
                        'faults %s' % ', '.join(CLOUD_FAULTS))
    args = parser.parse_args(argv)
    faults = args.fault or sorted(CLOUD_FAULTS if args.cloud else FAULTS)
    if args.cloud and set(faults) - set(CLOUD_FAULTS):
        parser.error('not on the cloud: %s' % ', '.join(
            sorted(set(faults) - set(CLOUD_FAULTS))))
    results = []
    started = time.monotonic()
    with bed_mod.workdir(args.keep) as workdir:
        if args.cloud:
            from benchmarks import cloudbed
            the_bed = cloudbed.CloudBed(workdir)
        else:
            the_bed = Bed(workdir, state_fs='state-full' in faults)
        with the_bed as bed:
            print(bed_mod.ready_line(bed, started), flush=True)
            for name in faults:
                for run in range(1, args.runs + 1):
                    bed.ready()
                    result = episode(
                        bed, name, run, args.at,
                        args.duration or FAULTS[name].duration, args.after)
                    results.append(result)
                    print(json.dumps(dataclasses.asdict(result)),
                          flush=True)
                    if args.json:
                        with open(args.json, 'a') as f:
                            f.write(json.dumps(dataclasses.asdict(result))
                                    + '\n')
    print(table(results))
    print('median past lease %.1f s, restore %s s' % (
        statistics.median(r.past_lease for r in results),
        statistics.median(r.restore if r.restore is not None else
                          float('inf') for r in results)))


if __name__ == '__main__':
    main()
