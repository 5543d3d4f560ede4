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

"""Scale benchmark of one iotguard-controller over RabbitMQ on loopback.

    python -m benchmarks.controller --hosts 1000 --disks-per-host 50 \\
        --domains 100 [--db-url URL] [--rounds 3] [--feeder process] \\
        [--feeder-threads N] [--pre-encode] [--urgent]

What it does, with the controller's own code and a real broker:

1. a fresh database (SQLite file by default, or ``--db-url`` pointing at
   an empty database) gets the schema, one tier, ``--domains`` domains and
   ``hosts x disks-per-host`` disks spread over them (each domain spans
   many hosts, like a Ceph or Cinder pool);
2. ``--rounds`` times: the hosts' ``report_samples`` batches
   (:class:`iotguard.wire.batch.Batch`) are cast with the real
   :class:`ControllerAPI` (RabbitMQ at ``--url``, to the one controller) and
   received by the controller's RPC server and :class:`ControllerManager`
   into the sample store (ingest time and rate; the feeder runs in this
   process too, or with ``--feeder process`` in a child process as agents
   on other hosts would; its batches are built before the clock starts,
   encoded when they are cast, and ``cast_s`` is the time it took to
   cast them all: ingest cannot be shorter; with ``--pre-encode`` the
   feeder also encodes the casts' AMQP messages, as oslo.messaging
   would, before the clock starts and only publishes them, each
   confirmed, during the ingest: agents on other hosts encode on their
   own CPUs),
   then one decision round
   over every domain as the service runs it (:meth:`DomainLoop.run`):
   wall time, CPU of the process during the round, decisions, RPC casts
   (``apply_caps`` / ``release_caps`` per host, to queues nobody consumes
   here) and renewals. In every domain a few disks are noisy and a few
   starve, so the ``guarantee`` policy caps in round 1; later rounds
   renew (and write a share of the domains' rates for the API);
3. the controller's resident memory (VmRSS) before the first ingest, after
   the first round and at the end;
4. one ``steady`` line: the median over rounds 2 and later of the round's
   wall time, the ingest rate and the round's CPU, the RSS at the end, and
   the wall time the controller's ``report_samples`` takes per sample
   (``store_us``: checking, routing and storing, without the broker and
   oslo.messaging's decoding), the figures of the table in the
   controller's admin guide; and the samples stored per CPU-second of
   the controller's process during the ingest (its capacity when the
   broker and the feeder leave it a core).

With ``--urgent`` (the fast path, ``[agent] urgent_samples``), after each
round from round 2 on, one gold disk of every domain starves again and its
host's batch marks it urgent: the batches go through the controller's
``report_samples`` (in this process, without the broker), and each
domain is then decided at once as the service's urgent thread does
(:meth:`DomainLoop.urgent`, all of them in one call): the wall time and
CPU of all of them, and per domain (``urgent`` line; the ``steady`` line
gets their medians). Every domain urgent within one second is the fast
path's worst case: at most one urgent decision per domain per
``[controller] urgent_interval``.

Nothing here runs in the service; it only measures.
"""

import argparse
import dataclasses
import itertools
import logging
import multiprocessing
import resource
import statistics
import sys
import tempfile
import threading
import time
import uuid

import kombu
from kombu.utils import json as kombu_json
import numpy as np
from oslo_config import cfg
import oslo_messaging
from oslo_messaging._drivers import impl_rabbit
import sqlalchemy as sa

import benchmarks as bench
from iotguard import conf as iotguard_conf
from iotguard.controller import loop as loop_mod
from iotguard.controller import manager as manager_mod
from iotguard.controller import notifications
from iotguard.controller import samples as samples_mod
from iotguard.db import api as db_api
from iotguard.db import migration
from iotguard.wire import batch as batch_mod
from iotguard.wire import rpc
from iotguard.wire import rpcapi

INTERVAL_S = 5.0
TIER = 'bench'
GOLD_TIER = 'bench-gold'
#: per domain: the first NOISY disks are noisy, the next GOLD disks have a
#: 2000 IOPS floor and starve at 500 IOPS
NOISY = 3
GOLD = 4


def rss_mib():
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.0
    return float('nan')


def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


_UUIDS = {}


def _disk_uuid(host, index):
    key = (host, index)
    found = _UUIDS.get(key)
    if found is None:
        found = _UUIDS[key] = str(uuid.uuid5(
            uuid.NAMESPACE_URL, 'iotguard-bench:%d/%d' % key))
    return found


class Agents(rpcapi.AgentAPI):
    """The real client (casts go to RabbitMQ), remembering the caps sent.

    The fed samples obey them, as a throttled disk would (shared with the
    partition bench).
    """

    def __init__(self, transport):
        super().__init__(transport)
        self.caps = {}

    def apply_caps(self, ctxt, host, caps):
        for cap in caps:
            self.caps[cap['instance_uuid']] = cap['limits'].get(
                'total_iops_sec')
        super().apply_caps(ctxt, host, caps)

    def release_caps(self, ctxt, host, disks):
        for disk in disks:
            self.caps.pop(disk['instance_uuid'], None)
        super().release_caps(ctxt, host, disks)


class _TimedManager(manager_mod.ControllerManager):
    """The controller's endpoint, timing what it does with the batches."""

    busy_s = 0.0

    def report_samples(self, ctxt, host, samples):
        started = time.perf_counter()
        super().report_samples(ctxt, host, samples)
        self.busy_s += time.perf_counter() - started


def urgent_batches(disks, timestamp, caps):
    """Every domain's first gold disk starving again, marked urgent.

    The wire form of the batches of their hosts (only those disks).
    """
    first = {}
    for host, index, domain, slot in disks:
        if NOISY <= slot < NOISY + GOLD:
            first.setdefault(domain, (host, index, domain, slot))
    out = []
    for host, b in batches(sorted(first.values()), timestamp, {}):
        b = dataclasses.replace(b, urgent=np.ones(len(b), dtype=bool))
        out.append((host, b.to_wire()))
    return out


def _urgent(loop, manager, domains, disks, caps):
    """Every domain's urgent decision; (wall s, CPU s, decided)."""
    waiting = {}

    def heard(found):
        for name, keys in found.items():
            waiting.setdefault(name, []).extend(keys)

    manager.on_urgent = heard
    for host, wire in urgent_batches(disks, time.time() - 0.2, caps):
        manager.report_samples({}, host, wire)
    cpu0, wall0 = cpu(), time.monotonic()
    decided = len(loop.urgent({name: (domains[name], keys)
                               for name, keys in waiting.items()},
                              time.time()))
    return time.monotonic() - wall0, cpu() - cpu0, decided


def _load(host, index, domain_slot, caps=None, relieved=False):
    """A disk's IOPS and latency: slots 0-2 of a domain are noisy, 3-6 starve.

    A capped noisy disk runs at its cap; once its domain's noisy disks are
    capped (``relieved``) the starving ones get their floor back.
    """
    if domain_slot < NOISY:
        iops, latency = 15000.0, 40.0
        cap = (caps or {}).get(_disk_uuid(host, index))
        if cap:
            iops = min(iops, float(cap))
    elif domain_slot < NOISY + GOLD:
        iops, latency = (2200.0, 3.0) if relieved else (500.0, 80.0)
    else:
        iops, latency = 20.0, 2.0
    return iops, latency


def make_conf(db_url, url):
    """A bench controller's configuration (``url``: the broker)."""
    conf = cfg.ConfigOpts()
    iotguard_conf.register_opts(conf)
    conf([], project='iotguard', default_config_files=[])
    # An exchange of its own: rpc.get_transport makes ``iotguard`` the
    # default, shared with every iotguard service and test on the broker
    # (their fanout casts would reach this controller, its theirs).
    rpc.get_transport(conf, url=url).cleanup()   # registers the option
    conf.set_override('control_exchange',
                      'iotguard-bench-%s' % uuid.uuid4().hex[:8])
    conf.set_override('host', 'bench-controller')
    conf.set_override('connection', db_url, group='database')
    conf.set_override('default_tier', TIER, group='tiers')
    conf.set_override('decision_interval', INTERVAL_S, group='controller')
    conf.set_override('register_local_disks', False, group='controller')
    return conf


def place(args, n):
    """Disk ``n``'s ``(host, index, domain, slot)`` in the bench's layout.

    Arithmetic, so that a controller of the partition bench finds the
    disks of the domains it owns without holding the whole layout.
    Consecutive disks go to different domains (each domain spans many
    hosts); ``slot`` spreads the noisy and gold disks over the hosts.
    """
    per_domain = max(1, args.hosts * args.disks_per_host // args.domains)
    host, index = divmod(n, args.disks_per_host)
    return (host, index, n % args.domains,
            (n // args.domains * 7919) % per_domain)


def domain_names(args):
    return ['bench-%03d' % d for d in range(args.domains)]


def populate(db, args):
    """Tiers, domains and disks; the domain names and every placement."""
    db.tier_create({'name': TIER, 'description': '', 'min_iops': 50.0,
                    'min_bytes_sec': 0.0, 'max_iops': 0.0,
                    'max_bytes_sec': 0.0, 'weight': 1.0, 'is_public': True})
    db.tier_create({'name': GOLD_TIER, 'description': '',
                    'min_iops': 2000.0, 'min_bytes_sec': 0.0,
                    'max_iops': 0.0, 'max_bytes_sec': 0.0, 'weight': 1.0,
                    'is_public': True})
    names = domain_names(args)
    for name in names:
        db.domain_create(name, 'ceph', iops_4k=50000.0, bytes_sec=2e9,
                         policy='guarantee')
    disks = [place(args, n)
             for n in range(args.hosts * args.disks_per_host)]
    rows = []
    for host, index, domain, _slot in disks:
        rows.append({'instance_uuid': _disk_uuid(host, index),
                     'dev': 'vda', 'host': 'host-%04d' % host,
                     'domain': names[domain], 'project_id': 'bench'})
        if len(rows) >= 5000:
            db.disk_bulk_insert(rows)
            rows = []
    db.disk_bulk_insert(rows)
    for host, index, _domain, slot in disks:
        if NOISY <= slot < NOISY + GOLD:
            db.disk_tier_set(_disk_uuid(host, index), 'vda', GOLD_TIER,
                             'flavor', 'bench')
    return names, disks


def batches(disks, timestamp, caps, interval_s=INTERVAL_S):
    """The ``report_samples`` batches (columns) of ``disks``, per host.

    ``disks``: placements (:func:`place`) grouped by host; ``caps``: the
    caps sent (instance uuid -> IOPS), which the samples obey.
    """
    relieved = {domain for host, index, domain, slot in disks
                if slot < NOISY and caps.get(_disk_uuid(host, index))}
    out = []
    for host, group in itertools.groupby(disks, key=lambda d: d[0]):
        rows = []
        for _host, i, domain, slot in group:
            iops, latency = _load(host, i, slot, caps, domain in relieved)
            rows.append(batch_mod.Row(
                _disk_uuid(host, i), 'vda', timestamp, interval_s,
                rates=dict(zip(batch_mod.RATES, (
                    iops / 2, iops / 2, iops * 2048.0, iops * 2048.0,
                    latency, latency))),
                project_id='bench'))
        out.append(('host-%04d' % host, batch_mod.Batch.of_rows(rows)))
    return out


class _InProcess:
    """The agents' casts from this process (as the bench always did)."""

    def __init__(self, conf, args, disks):
        self.args, self.disks = args, disks
        self.api = None
        self.batches = []
        self.cast_s = float('nan')
        self.threads = max(1, args.feeder_threads)
        self.encoded = []
        self.connections = []

    def start(self, transport):
        self.api = rpcapi.ControllerAPI(transport)
        if self.args.pre_encode:
            # one connection per thread, confirming each publish as
            # oslo.messaging's rabbit driver does
            self.connections = [kombu.Connection(
                'amqp://' + self.args.url.split('://', 1)[1],
                transport_options={'confirm_publish': True})
                for _ in range(self.threads)]

    def prepare(self, timestamp, caps):
        self.batches = batches(self.disks, timestamp, caps)
        if self.args.pre_encode:
            self.encoded = self._encode()

    def _encode(self):
        """The casts' AMQP messages, encoded as oslo.messaging sends them.

        The real client casts each batch (to the controllers' topic with
        to one controller) with the rabbit driver's ``_publish``
        replaced by a recorder: the exchange, the routing key and the
        envelope it would publish (context, ``_unique_id``, the batch as
        JSON), serialised as kombu would, so :meth:`send` only publishes
        bytes (to exchanges the controller's RPC server declared).
        """
        recorded = []
        real = impl_rabbit.Connection._publish

        def record(connection, exchange, msg, routing_key=None, timeout=None,
                   transport_options=None):
            recorded.append((exchange, routing_key or '',
                             kombu_json.dumps(msg)))

        impl_rabbit.Connection._publish = record
        try:
            self._cast(self.batches)
        finally:
            impl_rabbit.Connection._publish = real
        return recorded

    def _publish(self, connection, messages):
        producer = connection.Producer()
        for exchange, routing_key, body in messages:
            producer.publish(body, exchange=exchange.name,
                             routing_key=routing_key,
                             content_type='application/json',
                             content_encoding='utf-8')

    def _cast(self, batches):
        for host, batch in batches:
            self.api.report_samples({}, host, batch)

    def send(self):
        """Cast the batches; the seconds it took (the agents' side).

        Each cast waits for the broker's publisher confirm (one round
        trip): one thread casting 1,000 batches in a row is bound by that
        latency, where agents on 1,000 hosts cast side by side; with
        ``--feeder-threads`` the casts overlap.
        """
        started = time.perf_counter()
        if self.args.pre_encode:
            threads = [threading.Thread(target=self._publish, args=(
                self.connections[i], self.encoded[i::self.threads]))
                for i in range(self.threads)]
        else:
            threads = [threading.Thread(target=self._cast,
                                        args=(self.batches[i::self.threads],))
                       for i in range(self.threads)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.cast_s = time.perf_counter() - started
        return self.cast_s

    def sent(self):
        """How long the last :meth:`send` took to cast everything."""
        return self.cast_s

    def stop(self):
        for connection in self.connections:
            connection.release()


def _feeder_main(pipe, conf, url, args, disks):
    feeder = _InProcess(conf, args, disks)
    transport = rpc.get_transport(conf, url=url)
    feeder.start(transport)
    for command in iter(pipe.recv, None):
        if command[0] == 'prepare':
            feeder.prepare(*command[1:])
            pipe.send('done')
        else:
            pipe.send(feeder.send())
    feeder.stop()
    transport.cleanup()


class _OtherProcess(_InProcess):
    """The agents' casts from a child process, as agents on other hosts.

    Forked before this process connects to the broker or starts threads.
    """

    def __init__(self, conf, args, disks):
        ctx = multiprocessing.get_context('fork')
        self.pipe, child = ctx.Pipe()
        self.process = ctx.Process(target=_feeder_main, args=(
            child, conf, args.url, args, disks), daemon=True)
        self.process.start()

    def start(self, transport):
        pass

    def _call(self, *command):
        self.pipe.send(command)
        return self.pipe.recv()

    def prepare(self, timestamp, caps):
        self._call('prepare', timestamp, dict(caps))

    def send(self):
        self.pipe.send(('send',))

    def sent(self):
        return self.pipe.recv() if self.pipe.poll(60) else float('nan')

    def stop(self):
        self.pipe.send(None)
        self.process.join(30)


def _ingest(feeder, args, manager, timestamp, caps):
    """One interval's samples cast and stored.

    (seconds, samples stored, seconds the feeder took to cast them, CPU
    seconds of this process meanwhile); the batches are built before the
    clock starts.
    """
    expected = args.hosts * args.disks_per_host
    feeder.prepare(timestamp, caps)
    before = manager.stats['stored']
    cpu0 = cpu()
    started = time.monotonic()
    feeder.send()
    deadline = time.monotonic() + 600
    while (manager.stats['stored'] - before < expected
           and time.monotonic() < deadline):
        time.sleep(0.01)
    took, used = time.monotonic() - started, cpu() - cpu0
    return took, manager.stats['stored'] - before, feeder.sent(), used


def run(args):
    # Hundreds of starving disks: keep their warnings out of the figures.
    logging.getLogger('iotguard').setLevel(logging.ERROR)
    workdir = tempfile.mkdtemp(prefix='iotguard-bench-')
    db_url = args.db_url or 'sqlite:///%s/bench.sqlite' % workdir
    conf = make_conf(db_url, args.url)
    engine = sa.create_engine(db_url)
    migration.upgrade(engine)
    engine.dispose()
    db = db_api.Connection(conf)
    t = time.monotonic()
    names, disks = populate(db, args)
    print('populated %d domains, %d disks in %.1f s (%s)' % (
        len(names), len(disks), time.monotonic() - t,
        db_url.split(':')[0]))

    feeder = (_OtherProcess if args.feeder == 'process' else _InProcess)(
        conf, args, disks)
    transport = rpc.get_transport(conf, url=args.url)
    feeder.start(transport)
    store = samples_mod.SampleStore(INTERVAL_S)
    manager = _TimedManager(conf, db, store)
    manager.index.refresh()
    server = rpc.get_server(transport, rpc.TOPIC_CONTROLLER,
                            'bench-controller', [manager])
    # as the service starts it
    server.start(override_pool_size=conf.controller.rpc_thread_pool_size)
    time.sleep(1.0)   # the fanout queue is bound before the first cast
    rss0 = rss_mib()
    notifier = notifications.Notifier(
        conf, oslo_messaging.get_notification_transport(conf, url=args.url))
    agents = Agents(transport)
    loop = loop_mod.DomainLoop(conf, db, store, agents,
                               notifier)
    domains = db.domain_list()
    print('round  ingest_s  cast_s  samples/s  store_us  total_s  cpu_s  '
          'decisions  applied  renewed  casts')
    start = time.monotonic()
    steady, urgent = [], []
    by_name = {d.name: d for d in domains}
    for k in range(args.rounds):
        # paced like the service: one interval per round (unless late)
        time.sleep(max(0.0, start + k * INTERVAL_S - time.monotonic()))
        # what the agents send every interval, then one round on it
        busy0 = manager.busy_s
        took, stored, cast_s, ingest_cpu = _ingest(
            feeder, args, manager, time.time() - 0.5, agents.caps)
        store_us = 1e6 * (manager.busy_s - busy0) / max(1, stored)
        at = time.time()
        cpu0, wall0 = cpu(), time.monotonic()
        results = loop.run(domains, at)
        wall, cpu_s = time.monotonic() - wall0, cpu() - cpu0
        print('%5d  %8.2f  %6.2f  %9.0f  %8.1f  %7.2f  %5.2f  %9d  %7d  '
              '%7d  %5d'
              % (k + 1, took, cast_s, stored / took, store_us, wall, cpu_s,
                 sum(r.decisions for r in results),
                 sum(r.applied for r in results),
                 sum(r.renewed for r in results),
                 sum(r.casts for r in results)))
        if k == 0:
            print('       (RSS %.0f MiB before the first ingest, %.0f MiB '
                  'after the first round)' % (rss0, rss_mib()))
        else:
            steady.append((wall, stored / took, cpu_s, store_us, cast_s,
                           stored / max(ingest_cpu, 1e-9)))
            if args.urgent:
                u_wall, u_cpu, decided = _urgent(
                    loop, manager, by_name, disks, agents.caps)
                urgent.append((u_wall, u_cpu, decided))
                print('       urgent: %d of %d domains decided at once in '
                      '%.2f s (CPU %.2f s), %.1f ms each' % (
                          decided, len(domains), u_wall, u_cpu,
                          1e3 * u_wall / max(1, decided)))
    if steady:
        print('steady (median of rounds 2-%d): round %.2f s, ingest %.0f '
              'samples/s, round CPU %.2f s, RSS %.0f MiB, %d disks, %.1f us '
              'per sample in report_samples, %.2f s to cast' % (
                  args.rounds, statistics.median(r[0] for r in steady),
                  statistics.median(r[1] for r in steady),
                  statistics.median(r[2] for r in steady), rss_mib(),
                  len(disks), statistics.median(r[3] for r in steady),
                  statistics.median(r[4] for r in steady)))
        print('steady ingest: %.0f samples per CPU-second of this process '
              '(with --feeder thread, the feeder\'s CPU is counted too)'
              % statistics.median(r[5] for r in steady))
    if urgent:
        print('steady urgent (median of rounds 2-%d): %d domains decided at '
              'once in %.2f s, CPU %.2f s, %.1f ms a domain' % (
                  args.rounds, statistics.median(u[2] for u in urgent),
                  statistics.median(u[0] for u in urgent),
                  statistics.median(u[1] for u in urgent),
                  statistics.median(1e3 * u[0] / max(1, u[2])
                                    for u in urgent)))
    print('controller RSS at the end: %.0f MiB (max %.0f MiB)' % (
        rss_mib(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        / 1024.0))
    feeder.stop()
    server.stop()
    server.wait()
    transport.cleanup()
    db.dispose()


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m benchmarks.controller',
        description='Scale benchmark of iotguard-controller over RabbitMQ.')
    parser.add_argument('--hosts', type=int, default=1000)
    parser.add_argument('--disks-per-host', type=int, default=50)
    parser.add_argument('--domains', type=int, default=100)
    parser.add_argument('--rounds', type=int, default=6)
    parser.add_argument('--feeder', choices=('thread', 'process'),
                        default='thread', help='where the agents\' casts '
                        'come from: this process (default, the figures '
                        'before 2026-11) or a child process, like agents on '
                        'other hosts')
    parser.add_argument('--feeder-threads', type=int, default=1,
                        help='threads casting the batches side by side, '
                        'as agents on many hosts do (default 1: one after '
                        'the other, each waiting for its publisher '
                        'confirm)')
    parser.add_argument('--pre-encode', action='store_true',
                        help='the feeder encodes its casts before the '
                        'clock starts (oslo.messaging\'s envelope, as the '
                        'agents\' client makes it) and only publishes the '
                        'bytes during the ingest, each publish confirmed by '
                        'the broker (agents on 1,000 hosts encode on their '
                        'own CPUs, not on the controller\'s)')
    parser.add_argument('--db-url', help='an empty database (default: a '
                        'fresh SQLite file)')
    parser.add_argument('--urgent', action='store_true',
                        help='after each round from round 2 on, every '
                        'domain decided at once for an urgent starving '
                        'disk (the fast path\'s worst case)')
    bench.add_url_argument(parser)
    run(parser.parse_args(argv))
    return 0


if __name__ == '__main__':
    sys.exit(main())
