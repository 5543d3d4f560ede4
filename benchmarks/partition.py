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

"""N controllers sharing the domains over tooz, one of them killed.

    python -m benchmarks.partition --controllers 10 --hosts 2000 \\
        --disks-per-host 50 --domains 200 [--interval 5] [--rounds 8] \\
        [--kill-after 4] [--db postgresql|sqlite]

What it does, with the service's own classes:

1. a fresh database (a PostgreSQL database of its own, dropped at the
   end, or a SQLite file) is populated once as by
   :mod:`benchmarks.controller` (the same layout: ``--domains``
   domains spanning ``hosts x disks-per-host`` disks, a few noisy and a
   few starving disks per domain, ``guarantee`` policy);
2. ``--controllers`` processes (``spawn``: each a fresh interpreter, so
   its resident memory is its own) each run a
   :class:`~iotguard.controller.service.ControllerService`: tooz
   membership on the real Redis in a group of this run's own, its RPC
   server, and every ``--interval`` one :meth:`ControllerService.tick`
   (the partition's share, then :meth:`DomainLoop.run` over it). Their
   casts go to RabbitMQ, on an exchange of each controller's own that
   nobody consumes;
3. **no RabbitMQ ingest**: before each round a controller builds the
   samples of the disks of the domains it owns (obeying the caps it
   sent, as the controller bench's feeder does), decodes them as the
   controller decodes an agent's batch and adds them straight to its own
   sample store (``feed``). A million samples per interval cannot go
   through one broker on this machine; ingest over RabbitMQ is measured
   by the controller bench;
4. the controllers' rounds are spread over the interval (controller
   ``i`` starts ``i / N`` of an interval after the first): on separate
   machines they would not compete for the same two cores;
5. after ``--kill-after`` intervals, half an interval later, one
   controller is killed (SIGKILL). This process then measures when the
   survivors' rounds have run every domain it owned (in intervals) and
   reads the database every ``POLL_S`` to check that every cap in force
   at the kill is renewed before its lease expires;
6. per controller and round: domains owned, disks, the round's wall
   time and CPU, the feed's wall time and the resident memory (VmRSS).

Leases are three intervals (``[controller] lease_seconds``),
``[coordination] member_timeout`` is 0.8 interval (4 s of 5 s by
default), and the rates writes and full disk reads keep their cadence
in rounds, so a stretched interval keeps the service's proportions.
Nothing here runs in the service; it only measures.
"""

import argparse
import dataclasses
import logging
import multiprocessing
from multiprocessing import connection as mp_connection
import os
import signal
import statistics
import sys
import tempfile
import time
import uuid

import numpy as np
import oslo_messaging
import sqlalchemy as sa
from sqlalchemy.engine import url as sa_url

import benchmarks as bench_pkg
from benchmarks import controller as bench
from iotguard.controller import loop as loop_mod
from iotguard.controller import service as service_mod
from iotguard.db import api as db_api
from iotguard.db import migration
from iotguard.wire import batch as batch_mod
from iotguard.wire import rpc

#: How often the database is read for the leases after the kill (s).
POLL_S = 0.25
#: The round's full read of its disks, every so many seconds at 5 s
#: rounds (:data:`iotguard.controller.loop.FULL_READ_S`, read once here:
#: each controller process scales its own copy).
DEFAULT_FULL_READ_S = loop_mod.FULL_READ_S
READY_TIMEOUT_S = 120.0


@dataclasses.dataclass
class Round:
    """One round of one controller, as the controller reports it."""

    controller: int
    round: int
    started: float      # UNIX time
    ended: float
    owned: list         # domain names
    disks: int
    feed_s: float
    feed_cpu_s: float
    wall_s: float
    cpu_s: float
    rss_mib: float
    decisions: int
    applied: int
    renewed: int


@dataclasses.dataclass
class Leases:
    """The caps in force at the kill and what became of them."""

    checked: int = 0
    renewed: int = 0
    released: int = 0
    lapsed: list = dataclasses.field(default_factory=list)  # disk ids
    #: the least time any of them had left when it was renewed (s)
    min_margin_s: float = float('inf')


@dataclasses.dataclass
class Result:
    """A whole run: every round, the kill and what it did to the leases."""

    rounds: list
    victim: int
    killed_at: float
    victim_domains: list
    #: seconds from the kill to the end of the survivors' first round
    #: over the last of the victim's domains (None: not all re-owned)
    reowned_s: float | None
    leases: Leases
    populate_s: float


def _interval_conf(conf, args, index, group):
    """The service's cadences, kept in rounds when the interval stretches.

    At the default 5 s a domain writes its rates every 30 s (6 rounds)
    and the round reads its disks in full every 60 s (12 rounds); with
    ``--interval`` 15 s and the same seconds they would cost three times
    as much per round. Both are scaled with the interval, as the lease
    (3 intervals) and tooz's member timeout (0.8 interval) are.
    """
    scale = args.interval / bench.INTERVAL_S
    conf.set_override('host', 'bench-controller-%d' % index)
    conf.set_override('decision_interval', args.interval,
                      group='controller')
    conf.set_override('lease_seconds', 3 * args.interval,
                      group='controller')
    conf.set_override('rates_write_interval',
                      scale * conf.controller.rates_write_interval,
                      group='controller')
    loop_mod.FULL_READ_S = scale * DEFAULT_FULL_READ_S
    conf.set_override('backend_url', args.redis_url, group='coordination')
    conf.set_override('member_timeout', member_timeout(args.interval),
                      group='coordination')
    conf.set_override('group_name', group, group='coordination')


def member_timeout(interval):
    """tooz's member timeout (whole seconds) for ``interval``: 0.8 of it."""
    return max(1, int(round(0.8 * interval)))


def _owned_disks(args, owned):
    """The placements of the disks of the domains ``owned``, by host."""
    index = {name: d for d, name in enumerate(bench.domain_names(args))}
    total = args.hosts * args.disks_per_host
    return sorted(bench.place(args, n)
                  for d in sorted(index[name] for name in owned)
                  for n in range(d, total, args.domains))


def _child(args, index, db_url, group, pipe):
    """One controller: the service's classes, fed in-process, paced."""
    logging.getLogger('iotguard').setLevel(logging.ERROR)
    logging.getLogger('tooz').setLevel(logging.ERROR)
    conf = bench.make_conf(db_url, args.url)
    _interval_conf(conf, args, index, group)
    transport = rpc.get_transport(conf, url=args.url)
    service = service_mod.ControllerService(
        conf, transport=transport,
        notification_transport=oslo_messaging.get_notification_transport(
            conf, url=args.url),
        member_id='bench-%d-%s' % (index, group[-8:]), timer=False)
    service.start()
    agents = bench.Agents(transport)
    service.loop.effects.agent_api = agents   # its casts, for the feed
    names = [d.name for d in service.db.domain_list()]
    pipe.send(('ready', os.getpid(), bench.rss_mib()))
    start = pipe.recv() + index * args.interval / args.controllers
    fed, wires = None, []
    for k in range(args.rounds):
        time.sleep(max(0.0, start + k * args.interval - time.time()))
        started, feed_cpu0 = time.time(), bench.cpu()
        mine = service.partition.my_domains(names)
        # Built again when the share or the caps change; otherwise only
        # the time of the reading moves on (the load is steady). Encoding,
        # decoding and storing are done every round, as for an agent's
        # batch.
        key = (tuple(mine), frozenset(agents.caps.items()))
        if key != fed:
            fed, wires = key, bench.batches(_owned_disks(args, mine),
                                            started, agents.caps,
                                            args.interval)
        read_at = started - 0.5
        for _host, batch in wires:
            batch = dataclasses.replace(
                batch, timestamp=np.full(len(batch), read_at),
                read_at=read_at)
            service.store.add_batch(batch_mod.decode(batch.to_wire()),
                                    started)
        feed_s, feed_cpu = time.time() - started, bench.cpu() - feed_cpu0
        cpu0, wall0 = bench.cpu(), time.monotonic()
        service.tick()
        wall, cpu = time.monotonic() - wall0, bench.cpu() - cpu0
        results = service.last_results
        pipe.send(('round', Round(
            controller=index, round=k + 1, started=started,
            ended=time.time(), owned=sorted(service.owned),
            disks=sum(r.disks for r in results), feed_s=feed_s,
            feed_cpu_s=feed_cpu,
            wall_s=wall, cpu_s=cpu, rss_mib=bench.rss_mib(),
            decisions=sum(r.decisions for r in results),
            applied=sum(r.applied for r in results),
            renewed=sum(r.renewed for r in results))))
    # Stay in the group until every controller has run its rounds: one
    # leaving early would hand its domains to those still running.
    pipe.send(('finished',))
    pipe.recv()
    service.stop()
    transport.cleanup()
    pipe.send(('done',))


def _caps(db, names):
    """``{disk id: lease expiry (UNIX time)}`` of the caps in ``names``."""
    return {disk: cap.lease_expires_at
            for disk, cap in db.domains_caps(names).items()}


def _watch_leases(db, names, before, lease_s, pending, leases, now):
    """One look at the caps in force at the kill (``pending``).

    A cap whose lease moved on was renewed at ``new lease - lease_s`` (the
    renewal seen is the latest; polls are far more frequent than rounds,
    so it is the first one since the kill); a cap gone before its lease
    was released by a decision; any other cap whose lease passed lapsed.
    """
    current = _caps(db, names)
    for disk in list(pending):
        old = before[disk]
        new = current.get(disk)
        if new is not None and new > old:
            pending.discard(disk)
            renewed_at = new - lease_s
            if renewed_at <= old:
                leases.renewed += 1
                leases.min_margin_s = min(leases.min_margin_s,
                                          old - renewed_at)
            else:
                leases.lapsed.append(disk)
        elif new is None and now < old:
            pending.discard(disk)
            leases.released += 1
        elif now >= old:
            pending.discard(disk)
            leases.lapsed.append(disk)


def _reowned(rounds, victim, killed_at):
    """The victim's domains and when the survivors had run them all."""
    before = [r for r in rounds if r.controller == victim
              and r.ended <= killed_at]
    if not before:
        return [], None
    domains = set(before[-1].owned)
    first = {}
    for r in sorted(rounds, key=lambda r: r.ended):
        if r.controller == victim or r.started < killed_at:
            continue
        for name in domains.intersection(r.owned):
            first.setdefault(name, r.ended)
    if set(first) != domains:
        return sorted(domains), None
    return sorted(domains), max(first.values()) - killed_at


class _Database:
    """The run's database: a PostgreSQL database of its own or a file."""

    def __init__(self, args):
        self.admin, self.name = None, None
        if args.db_url:
            self.url = args.db_url
        elif args.db == 'sqlite':
            self.url = 'sqlite:///%s/bench.sqlite' % tempfile.mkdtemp(
                prefix='iotguard-partition-')
        else:
            self.name = 'iotguard_bench_%s' % uuid.uuid4().hex[:10]
            admin = sa_url.make_url(args.admin_url)
            self.admin = sa.create_engine(admin, isolation_level='AUTOCOMMIT',
                                          poolclass=sa.pool.NullPool)
            with self.admin.connect() as c:
                c.execute(sa.text('CREATE DATABASE %s' % self.name))
            self.url = admin.set(database=self.name).render_as_string(
                hide_password=False)
        engine = sa.create_engine(self.url)
        migration.upgrade(engine)
        engine.dispose()

    def drop(self):
        if self.admin is None:
            return
        with self.admin.connect() as c:
            c.execute(sa.text(
                'SELECT pg_terminate_backend(pid) FROM pg_stat_activity '
                'WHERE datname = :name AND pid <> pg_backend_pid()'),
                {'name': self.name})
            c.execute(sa.text('DROP DATABASE IF EXISTS %s' % self.name))
        self.admin.dispose()


def run(args, out=print):
    """The whole run; its :class:`Result` (also printed through ``out``)."""
    logging.getLogger('iotguard').setLevel(logging.ERROR)
    group = 'iotguard-bench-%s' % uuid.uuid4().hex[:12]
    out('load average (1 min) at the start: %.2f' % os.getloadavg()[0])
    database = _Database(args)
    processes = []
    try:
        conf = bench.make_conf(database.url, args.url)
        db = db_api.Connection(conf)
        t = time.monotonic()
        names, disks = bench.populate(db, args)
        populate_s = time.monotonic() - t
        out('populated %d domains, %d disks in %.1f s (%s); %d controllers,'
            ' interval %.1f s, leases %.1f s, member_timeout %d s, tooz '
            'group %s' % (len(names), len(disks), populate_s,
                          database.url.split(':')[0], args.controllers,
                          args.interval, 3 * args.interval,
                          member_timeout(args.interval), group))
        del disks
        result = _drive(args, db, names, database.url, group, processes,
                        out)
        result.populate_s = populate_s
        db.dispose()
        return result
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
            process.join(10)
        database.drop()


def _drive(args, db, names, db_url, group, processes, out):
    ctx = multiprocessing.get_context('spawn')
    pipes = {}
    for index in range(args.controllers):
        mine, theirs = ctx.Pipe()
        process = ctx.Process(target=_child, args=(
            args, index, db_url, group, theirs), daemon=True)
        process.start()
        theirs.close()
        processes.append(process)
        pipes[mine] = index
    deadline = time.monotonic() + READY_TIMEOUT_S
    for pipe in pipes:
        if not pipe.poll(max(0.0, deadline - time.monotonic())):
            raise RuntimeError('a controller did not start in %.0f s'
                               % READY_TIMEOUT_S)
        _ready, pid, rss = pipe.recv()
        out('controller %d (pid %d) started: RSS %.0f MiB (joined, disk '
            'index read, no round yet)' % (pipes[pipe], pid, rss))
    start = time.time() + 1.0
    for pipe in pipes:
        pipe.send(start)
    victim = args.controllers - 1 if args.victim is None else args.victim
    kill_at = start + (args.kill_after + 0.5) * args.interval
    lease_s = 3 * args.interval
    out('controller  round  domains  disks  feed_s  feed_cpu  round_s  '
        'cpu_s  decisions  applied  renewed  rss_mib')
    rounds, before, pending = [], {}, set()
    leases, killed_at = Leases(), None
    open_pipes = dict(pipes)
    finished, stopped, next_poll = set(), False, 0.0
    while open_pipes or pending:
        now = time.time()
        if killed_at is None and now >= kill_at:
            before = {d: lease for d, lease in _caps(db, names).items()
                      if lease > now}
            pending = set(before)
            leases.checked = len(before)
            os.kill(processes[victim].pid, signal.SIGKILL)
            killed_at = time.time()
            out('--- controller %d killed (SIGKILL) at +%.2f s; %d caps in '
                'force' % (victim, killed_at - start, len(before)))
        if pending and now >= next_poll:
            next_poll = now + POLL_S
            _watch_leases(db, names, before, lease_s, pending, leases, now)
        timeout = POLL_S if killed_at is not None else max(
            0.0, min(POLL_S, kill_at - now))
        for pipe in mp_connection.wait(list(open_pipes), timeout):
            try:
                message = pipe.recv()
            except (EOFError, OSError):
                del open_pipes[pipe]
                continue
            if message[0] == 'done':
                del open_pipes[pipe]
            elif message[0] == 'finished':
                finished.add(pipe)
            elif message[0] == 'round':
                r = message[1]
                rounds.append(r)
                out('%10d  %5d  %7d  %5d  %6.2f  %8.2f  %7.2f  %5.2f  '
                    '%9d  %7d  %7d  %7.0f' % (
                        r.controller, r.round, len(r.owned), r.disks,
                        r.feed_s, r.feed_cpu_s, r.wall_s, r.cpu_s,
                        r.decisions, r.applied, r.renewed, r.rss_mib))
        if not stopped and open_pipes and finished >= set(open_pipes):
            stopped = True
            for pipe in open_pipes:
                pipe.send('stop')
    for process in processes:
        process.join(30)
    victim_domains, reowned_s = _reowned(rounds, victim, killed_at or 0.0)
    result = Result(rounds=rounds, victim=victim, killed_at=killed_at or 0.0,
                    victim_domains=victim_domains, reowned_s=reowned_s,
                    leases=leases, populate_s=0.0)
    _summary(args, result, out)
    return result


def steady(result, controller, after_kill):
    """A controller's rounds 2 and later, before or after the kill."""
    return [r for r in result.rounds if r.controller == controller
            and r.round > 1 and (r.started >= result.killed_at) == after_kill]


def _summary(args, result, out):
    out('per controller, median of its rounds 2+ before the kill | after:')
    per_disk_cpu, walls = [], []
    for c in range(args.controllers):
        for after in (False, True):
            rs = steady(result, c, after)
            if not rs:
                continue
            disks = statistics.median(r.disks for r in rs)
            wall = statistics.median(r.wall_s for r in rs)
            cpu = statistics.median(r.cpu_s for r in rs)
            if not after:
                walls.append(wall)
                if disks:
                    per_disk_cpu.append(1e6 * cpu / disks)
            out('  controller %d %s: %d domains, %d disks, feed %.2f s '
                '(CPU %.2f s), round %.2f s, CPU %.2f s, RSS %.0f MiB' % (
                    c, 'after ' if after else 'before',
                    statistics.median(len(r.owned) for r in rs), disks,
                    statistics.median(r.feed_s for r in rs),
                    statistics.median(r.feed_cpu_s for r in rs), wall, cpu,
                    rs[-1].rss_mib))
    rss = [max(r.rss_mib for r in result.rounds if r.controller == c)
           for c in range(args.controllers)
           if any(r.controller == c for r in result.rounds)]
    leases = result.leases
    out('summary: %d controllers, %d disks, interval %.1f s; steady round '
        '(median per controller, before the kill) min/median/max '
        '%.2f/%.2f/%.2f s, CPU %.1f us per disk (median); RSS max per '
        'controller min/median/max %.0f/%.0f/%.0f MiB; controller %d '
        'killed: its %d domains re-owned after %s; caps in force at the '
        'kill %d: renewed in time %d (least margin %.1f s), released %d, '
        'lapsed %d' % (
            args.controllers, args.hosts * args.disks_per_host,
            args.interval, min(walls, default=0),
            statistics.median(walls) if walls else 0,
            max(walls, default=0),
            statistics.median(per_disk_cpu) if per_disk_cpu else 0,
            min(rss, default=0), statistics.median(rss) if rss else 0,
            max(rss, default=0), result.victim, len(result.victim_domains),
            'never' if result.reowned_s is None else '%.2f s (%.2f '
            'intervals)' % (result.reowned_s,
                            result.reowned_s / args.interval),
            leases.checked, leases.renewed,
            leases.min_margin_s if leases.renewed else float('nan'),
            leases.released, len(leases.lapsed)))


def parser():
    p = argparse.ArgumentParser(
        prog='python -m benchmarks.partition',
        description='N iotguard-controllers over tooz, one killed.')
    p.add_argument('--controllers', type=int, default=10)
    p.add_argument('--hosts', type=int, default=2000)
    p.add_argument('--disks-per-host', type=int, default=50)
    p.add_argument('--domains', type=int, default=200)
    p.add_argument('--interval', type=float, default=bench.INTERVAL_S,
                   help='decision interval (s); leases are three of them')
    p.add_argument('--rounds', type=int, default=8,
                   help='rounds per controller')
    p.add_argument('--kill-after', type=int, default=4,
                   help='the victim is killed half an interval after this '
                   'many intervals')
    p.add_argument('--victim', type=int,
                   help='which controller is killed (default: the last)')
    p.add_argument('--db', choices=('postgresql', 'sqlite'),
                   default='postgresql')
    p.add_argument('--db-url', help='an empty database (default: a fresh '
                   'one, see --db)')
    p.add_argument('--admin-url', default=os.environ.get(
        'IOTGUARD_TEST_POSTGRESQL_URL',
        'postgresql+psycopg2://postgres@127.0.0.1:5432/postgres'),
        help='where the PostgreSQL database of the run is created')
    p.add_argument('--redis-url', default=os.environ.get(
        'IOTGUARD_TEST_REDIS_URL', 'redis://127.0.0.1:6379'))
    bench_pkg.add_url_argument(
        p, help='oslo.messaging transport URL (casts nobody consumes)')
    return p


def main(argv=None):
    result = run(parser().parse_args(argv))
    ok = result.reowned_s is not None and not result.leases.lapsed
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
