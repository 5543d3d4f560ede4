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

"""What N controllers spend receiving the agents' samples, routed.

``python -m benchmarks.routing --controllers 4 --hosts 400``

N ``ControllerService`` processes share the domains through tooz on Redis
(their disk index read from one SQLite file); no decision round runs
(``timer=False``): only the ingest is measured. Each round, this process
casts every host's batch (the controller bench's layout and batches:
``--domains`` domains spanning the hosts) with the real
:class:`iotguard.wire.rpcapi.ControllerAPI` over RabbitMQ: each batch goes
to one controller, which routes the other owners' disks to them. The
round ends when the controllers
have stored every disk's sample once. It prints, per round, the wall time
from the first cast to the last sample stored and each controller's CPU
time over the round (its process, all threads: receiving, checking,
routing, storing), then the medians of rounds 2 and later.
"""

import argparse
import itertools
import logging
import multiprocessing
import os
import statistics
import tempfile
import time
import uuid

import sqlalchemy as sa

import benchmarks as bench_pkg
from benchmarks import controller as bench
from iotguard.controller import service as service_mod
from iotguard.db import api as db_api
from iotguard.db import migration
from iotguard.wire import rpc
from iotguard.wire import rpcapi

READY_TIMEOUT_S = 120.0
ROUND_TIMEOUT_S = 120.0
#: How often a round asks the controllers how far they are (s), and how
#: long they are watched doing nothing first.
POLL_S = 0.02
IDLE_S = 3.0


def _conf(args, db_url, exchange, group):
    conf = bench.make_conf(db_url, args.url)
    conf.set_override('control_exchange', exchange)
    conf.set_override('backend_url', args.redis_url, group='coordination')
    conf.set_override('group_name', group, group='coordination')
    # a member busy starting its peers must not be taken for dead: the
    # ingest is measured here, not the take-over
    conf.set_override('member_timeout', 30, group='coordination')
    return conf


def _child(args, index, db_url, exchange, group, pipe):
    """One controller, answering the parent's questions until 'stop'."""
    logging.getLogger('iotguard').setLevel(logging.ERROR)
    logging.getLogger('tooz').setLevel(logging.ERROR)
    conf = _conf(args, db_url, exchange, group)
    conf.set_override('host', 'bench-controller-%d' % index)
    transport = rpc.get_transport(conf, url=args.url)
    service = service_mod.ControllerService(
        conf, transport=transport, member_id='bench-%d-%s' % (index, group),
        timer=False)
    service.start()
    names = [d.name for d in service.db.domain_list()]
    pipe.send(('ready', os.getpid(), bench.rss_mib()))
    while True:
        ask = pipe.recv()
        if ask == 'stop':
            break
        if ask == 'owned':
            pipe.send(sorted(service.partition.my_domains(names)))
        elif ask == 'views':
            me = service.partition.member_id.decode()
            pipe.send({name: me if service.partition.owns(name)
                       else service.partition.owner_of(name)
                       for name in names})
        else:
            pipe.send((bench.cpu(), service.manager.stats['stored'],
                       service.manager.stats['forwarded'],
                       dict(service.manager.stats)))
    service.stop()
    transport.cleanup()


def _ask(pipes, question):
    for pipe in pipes:
        pipe.send(question)
    return [pipe.recv() for pipe in pipes]


def _round(args, api, pipes, disks, total):
    """Cast one round; (wall s, CPU s per controller, forwarded)."""
    before = _ask(pipes, 'stats')
    batches = bench.batches(disks, time.time() - 0.5, {})
    started = time.monotonic()
    for host, batch in batches:
        api.report_samples({}, host, batch)
    deadline = started + ROUND_TIMEOUT_S
    while True:
        now = _ask(pipes, 'stats')
        stored = sum(n[1] - b[1] for n, b in zip(now, before))
        if stored >= total or time.monotonic() > deadline:
            break
        time.sleep(POLL_S)
    wall = time.monotonic() - started
    if stored < total:
        raise RuntimeError('only %d of %d samples stored in %.0f s (per '
                           'controller: %s; stats %s)' % (
                               stored, total, wall,
                               [n[1] - b[1] for n, b in zip(now, before)],
                               [n[3] for n in now]))
    return (wall, [n[0] - b[0] for n, b in zip(now, before)],
            sum(n[2] - b[2] for n, b in zip(now, before)))


def run(args, out=print):
    logging.getLogger('iotguard').setLevel(logging.ERROR)
    run_id = uuid.uuid4().hex[:8]
    exchange, group = 'iotguard-bench-' + run_id, 'route-' + run_id
    db_url = 'sqlite:///%s/bench.sqlite' % tempfile.mkdtemp(
        prefix='iotguard-routing-')
    engine = sa.create_engine(db_url)
    migration.upgrade(engine)
    engine.dispose()
    conf = _conf(args, db_url, exchange, group)
    db = db_api.Connection(conf)
    names, disks = bench.populate(db, args)
    db.dispose()
    disks.sort()
    total = len(disks)
    out('load average (1 min) at the start: %.2f; %d controllers, %d '
        'hosts, %d disks, %d domains' % (
            os.getloadavg()[0], args.controllers, args.hosts, total,
            len(names)))
    ctx = multiprocessing.get_context('spawn')
    processes, pipes = [], []
    try:
        for index in range(args.controllers):
            mine, theirs = ctx.Pipe()
            process = ctx.Process(target=_child, args=(
                args, index, db_url, exchange, group, theirs), daemon=True)
            process.start()
            processes.append(process)
            pipes.append(mine)
        for pipe in pipes:
            if not pipe.poll(READY_TIMEOUT_S):
                raise RuntimeError('a controller did not start')
            pipe.recv()
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:   # every domain owned once
            owned = _ask(pipes, 'owned')
            every = list(itertools.chain(*owned))
            if sorted(every) == sorted(names):
                break
            if time.monotonic() > deadline:
                raise RuntimeError('the controllers never split the domains'
                                   ': they own %s of %d' % (
                                       [len(o) for o in owned], len(names)))
            time.sleep(0.2)
        out('domains per controller: %s' % [len(o) for o in owned])
        before = _ask(pipes, 'stats')
        time.sleep(IDLE_S)
        idle = [(n[0] - b[0]) / IDLE_S
                for n, b in zip(_ask(pipes, 'stats'), before)]
        out('idle CPU per controller (s per s, nothing cast; this '
            'process asking every %.2f s): %s' % (
                POLL_S, ' '.join('%.3f' % c for c in idle)))
        transport = rpc.get_transport(conf, url=args.url)
        api = rpcapi.ControllerAPI(transport)
        out('round  wall_s  samples/s  forwarded  controllers\' CPU s')
        results = []
        for k in range(args.rounds):
            wall, cpus, forwarded = _round(args, api, pipes, disks, total)
            results.append((wall, cpus))
            out('%5d  %6.2f  %9.0f  %9d  %s' % (
                k + 1, wall, total / wall, forwarded,
                ' '.join('%.3f' % c for c in cpus)))
        steady = results[1:] or results
        walls = [w for w, _c in steady]
        per = [c for _w, cpus in steady for c in cpus]
        out('summary (rounds 2+, medians): wall %.2f s (%.0f samples/s); '
            'CPU per controller per round min/median/max %.2f/%.2f/%.2f s; '
            'all controllers %.2f s, %.1f us per sample' % (
                statistics.median(walls), total / statistics.median(walls),
                min(per), statistics.median(per), max(per),
                statistics.median(sum(c) for _w, c in steady),
                1e6 * statistics.median(sum(c) for _w, c in steady) / total))
        transport.cleanup()
    finally:
        for pipe in pipes:
            try:
                pipe.send('stop')
            except OSError:
                pass
        for process in processes:
            process.join(30)
            if process.is_alive():
                process.kill()


def main(argv=None):
    p = argparse.ArgumentParser(
        prog='python -m benchmarks.routing',
        description='N controllers receiving samples, routed.')
    p.add_argument('--controllers', type=int, default=4)
    p.add_argument('--hosts', type=int, default=400)
    p.add_argument('--disks-per-host', type=int, default=50)
    p.add_argument('--domains', type=int, default=40)
    p.add_argument('--rounds', type=int, default=4)
    p.add_argument('--redis-url', default=os.environ.get(
        'IOTGUARD_TEST_REDIS_URL', 'redis://127.0.0.1:6379'))
    bench_pkg.add_url_argument(p)
    run(p.parse_args(argv))


if __name__ == '__main__':
    main()
