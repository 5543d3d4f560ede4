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

"""The floor of receiving agents' batches over RabbitMQ, layer by layer.

    python -m benchmarks.broker [--messages 1000] \\
        [--disks-per-host 50] [--runs 3] [--pool-size N] [--prefetch N]

How fast one process can take ``report_samples`` casts off RabbitMQ, and
what each layer costs, so the controller's ingest rate
(:mod:`benchmarks.controller`) can be read against what the stack
allows on the same machine. ``--messages`` casts of one host's batch in
columns (``--disks-per-host`` disks, the agents' own client) are queued
on a topic queue of the bench's own exchange **before** the clock starts
(the sender's cost per cast is shown apart), then taken off by:

``kombu``
    a bare kombu consumer (py-amqp), acknowledging each message: the
    floor of the client library;
``kombu+json``
    the same, decoding each message's two JSON layers as oslo.messaging
    does;
``oslo-noop``
    oslo.messaging's RPC server (threading executor and ``[controller]
    rpc_thread_pool_size`` threads, as the controller runs it) with an
    endpoint whose ``report_samples`` does nothing;
``oslo-controller``
    the same server with the controller's own endpoint
    (:class:`~iotguard.controller.manager.ControllerManager` and a
    :class:`~iotguard.controller.samples.SampleStore`, every disk known).

Each line gives the messages per second and the wall and CPU time per
message from the first message received to the last (connecting is not
counted), the samples per second that makes, and the CPU the broker
(``beam.smp``, when found) spent meanwhile; then, for the casts that
queued them (one after the other, each waiting for the broker's
publisher confirm), the wall and CPU time per cast of the sender and the
broker's CPU meanwhile. The receiver, the sender and the broker share
the machine's cores when agents and controller run on one host. Nothing
here runs in the service; it only measures.
"""

import argparse
import json
import os
import resource
import statistics
import sys
import threading
import time
import uuid

import kombu
from oslo_config import cfg

import benchmarks as bench
from iotguard import conf as iotguard_conf
from iotguard.controller import manager as manager_mod
from iotguard.controller import samples as samples_mod
from iotguard.wire import batch as batch_mod
from iotguard.wire import rpc

INTERVAL_S = 5.0
STAGES = ('kombu', 'kombu+json', 'oslo-noop', 'oslo-controller')


def _cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _broker_pids():
    pids = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/comm' % pid) as f:
                if f.read().strip() == 'beam.smp':
                    pids.append(pid)
        except OSError:
            continue
    return pids


def _broker_cpu(pids):
    """CPU seconds of the broker's processes so far (0 when unknown)."""
    total = 0
    for pid in pids:
        try:
            with open('/proc/%s/stat' % pid) as f:
                fields = f.read().rsplit(')', 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            continue
    return total / os.sysconf('SC_CLK_TCK')


def _amqp(url):
    """kombu's form of an oslo.messaging ``rabbit://`` URL."""
    return 'amqp://' + url.split('://', 1)[1]


def _batch(host, disks, timestamp):
    """One host's batch in columns, the form and size agents send."""
    rows = []
    for i in range(disks):
        iops = 20.0 + i
        rows.append(batch_mod.Row(
            str(uuid.uuid5(uuid.NAMESPACE_URL, 'floor/%d/%d' % (host, i))),
            'vda', timestamp, INTERVAL_S, rates=dict(zip(batch_mod.RATES, (
                iops / 2, iops / 2, iops * 2048.0, iops * 2048.0, 2.0,
                2.0))), project_id='bench'))
    return batch_mod.Batch.of_rows(rows).to_wire()


class _Clock:
    """First and last arrival, and the CPU of this process meanwhile."""

    def __init__(self, expected, broker):
        self.expected = expected
        self.broker = broker
        self.count = 0
        self.first = self.last = None
        self.cpu = self.broker_cpu = None
        self.done = threading.Event()
        self._lock = threading.Lock()

    def tick(self, n=1):
        now = time.perf_counter()
        with self._lock:
            if self.first is None:
                self.first = now
                self.cpu = _cpu()
                self.broker_cpu = _broker_cpu(self.broker)
            self.count += n
            if self.count >= self.expected:
                self.last = now
                self.cpu = _cpu() - self.cpu
                self.broker_cpu = _broker_cpu(self.broker) - self.broker_cpu
                self.done.set()


class _NoOp:
    """An endpoint that takes the batches and does nothing with them."""

    target = manager_mod.ControllerManager.target

    def __init__(self, clock):
        self.clock = clock

    def report_samples(self, ctxt, host, samples):
        self.clock.tick()


class _Counted(manager_mod.ControllerManager):
    def __init__(self, conf, store, index, clock):
        super().__init__(conf, _Index(index), store)
        self.index.refresh()
        self.clock = clock

    def report_samples(self, ctxt, host, samples):
        super().report_samples(ctxt, host, samples)
        self.clock.tick()


class _Index:
    """The one database read the endpoint makes here: the disk index."""

    def __init__(self, index):
        self.index = index

    def disk_index(self):
        return dict(self.index)


def _conf(args):
    conf = cfg.ConfigOpts()
    iotguard_conf.register_opts(conf)
    conf([], project='iotguard', default_config_files=[])
    rpc.get_transport(conf, url=args.url).cleanup()   # registers the options
    conf.set_override('control_exchange',
                      'iotguard-floor-%s' % uuid.uuid4().hex[:8])
    conf.set_override('host', 'floor')
    conf.set_override('register_local_disks', False, group='controller')
    if args.pool_size:
        conf.set_override('rpc_thread_pool_size', args.pool_size,
                          group='controller')
    if args.prefetch is not None:
        conf.set_override('rabbit_qos_prefetch_count', args.prefetch,
                          group='oslo_messaging_rabbit')
    return conf


def _fill(conf, args, topic, wires):
    """Queue ``--messages`` casts on ``topic`` (declared by a server).

    Returns the topic queue's name and what the casts cost.
    """
    transport = rpc.get_transport(conf, url=args.url)
    try:
        queue = rpc.topic_of(transport, topic)   # the bench's own exchange
        server = rpc.get_server(transport, topic, 'floor', [])
        server.start()       # declares the topic queue, which outlives it
        _declared(args, queue)
        server.stop()
        server.wait()
        client = rpc.get_client(transport, topic, '1.0')
        broker = _broker_pids()
        started, cpu, broker_cpu = (time.perf_counter(), _cpu(),
                                    _broker_cpu(broker))
        for host, wire in wires:
            client.cast({}, 'report_samples', host=host, samples=wire)
        return queue, (time.perf_counter() - started, _cpu() - cpu,
                       _broker_cpu(broker) - broker_cpu)
    finally:
        transport.cleanup()


def _declared(args, topic, timeout=30):
    """Once the queue ``topic`` exists (a server declares it in a thread)."""
    deadline = time.monotonic() + timeout
    with kombu.Connection(_amqp(args.url)) as connection:
        while True:
            try:
                connection.channel().queue_declare(topic, passive=True)
                return
            except connection.channel_errors:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


def _kombu(conf, args, queue, clock, decode):
    with kombu.Connection(_amqp(args.url)) as connection:
        channel = connection.channel()
        if args.prefetch:
            channel.basic_qos(0, args.prefetch, False)
        queue = kombu.Queue(queue, channel=channel, no_declare=True)

        def received(body, message):
            if decode:
                json.loads(body['oslo.message'])
            message.ack()
            clock.tick()

        with kombu.Consumer(channel, queues=[queue], callbacks=[received],
                            accept=['json']):
            while not clock.done.is_set():
                connection.drain_events(timeout=10)


def _oslo(conf, args, topic, clock, endpoint):
    transport = rpc.get_transport(conf, url=args.url)
    server = rpc.get_server(transport, topic, 'floor', [endpoint])
    # as the controller's service starts it
    server.start(override_pool_size=conf.controller.rpc_thread_pool_size)
    clock.done.wait(120)
    server.stop()
    server.wait()
    transport.cleanup()


def _delete_queues(args, queue):
    """The queues an RPC server declared for ``queue`` (they outlive it)."""
    with kombu.Connection(_amqp(args.url)) as connection:
        channel = connection.channel()
        for name in (queue, '%s.floor' % queue):
            kombu.Queue(name, channel=channel, no_declare=True).delete()


def _stage(conf, args, stage, wires):
    topic = 'iotguard-floor-%s' % uuid.uuid4().hex[:8]
    now = time.time()      # fresh samples: the store refuses stale ones
    wires = [(host, dict(wire, timestamp=now)) for host, wire in wires]
    queue, cast = _fill(conf, args, topic, wires)
    clock = _Clock(args.messages, _broker_pids())
    if stage.startswith('kombu'):
        _kombu(conf, args, queue, clock, decode=stage == 'kombu+json')
    elif stage == 'oslo-noop':
        _oslo(conf, args, topic, clock, _NoOp(clock))
    else:
        index = {(u, d): ('floor', host) for host, wire in wires
                 for u, d in zip(wire['disks']['instance_uuid'],
                                 wire['disks']['dev'])}
        store = samples_mod.SampleStore(INTERVAL_S, max_skew_s=1e9)
        _oslo(conf, args, topic, clock, _Counted(conf, store, index, clock))
    _delete_queues(args, queue)
    if not clock.done.is_set():
        raise RuntimeError('%s: %d of %d messages' % (
            stage, clock.count, args.messages))
    wall = clock.last - clock.first
    n = max(1, args.messages - 1)
    return (n / wall, 1e6 * wall / n, 1e6 * clock.cpu / n,
            1e6 * clock.broker_cpu / n) + tuple(
                1e6 * value / args.messages for value in cast)


def run(args):
    conf = _conf(args)
    # one batch per host, as the agents send them every interval
    now = time.time()
    wires = [('host-%04d' % host, _batch(host, args.disks_per_host, now))
             for host in range(args.messages)]
    size = len(json.dumps(wires[0][1]))
    print('%d messages of %d disks (%d bytes of JSON each), pool %s, '
          'prefetch %s' % (args.messages, args.disks_per_host, size,
                           conf.controller.rpc_thread_pool_size,
                           conf.oslo_messaging_rabbit
                           .rabbit_qos_prefetch_count))
    stages = args.stage or STAGES
    results = {stage: [] for stage in stages}
    for _ in range(args.runs):
        for stage in stages:
            results[stage].append(_stage(conf, args, stage, wires))
    print('%-16s %7s %7s %6s %9s %6s | %7s %6s %6s' % (
        'stage', 'msg/s', 'wall_us', 'cpu_us', 'samples/s', 'broker',
        'cast_us', 'cpu_us', 'broker'))
    for stage in stages:
        rows = results[stage]
        rate = statistics.median(r[0] for r in rows)
        print('%-16s %7.0f %7.0f %6.0f %9.0f %6.0f | %7.0f %6.0f %6.0f' % (
            (stage, rate, statistics.median(r[1] for r in rows),
             statistics.median(r[2] for r in rows),
             rate * args.disks_per_host) + tuple(
                statistics.median(r[i] for r in rows) for i in (3, 4, 5, 6))))
    print('(median of %d runs; per message: receiving, first to last '
          'received, then casting them all before)' % args.runs)
    with kombu.Connection(_amqp(args.url)) as connection:
        kombu.Exchange(conf.control_exchange, channel=connection.channel(),
                       no_declare=True).delete()


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m benchmarks.broker',
        description='Floor of receiving report_samples over RabbitMQ.')
    parser.add_argument('--messages', type=int, default=1000)
    parser.add_argument('--disks-per-host', type=int, default=50)
    parser.add_argument('--runs', type=int, default=3)
    parser.add_argument('--stage', action='append', choices=STAGES,
                        help='only these stages (default: all)')
    parser.add_argument('--pool-size', type=int,
                        help='[controller] rpc_thread_pool_size')
    parser.add_argument('--prefetch', type=int,
                        help='[oslo_messaging_rabbit] '
                        'rabbit_qos_prefetch_count')
    bench.add_url_argument(parser)
    run(parser.parse_args(argv))
    return 0


if __name__ == '__main__':
    sys.exit(main())
