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

"""CPU cost of one agent sampling pass over N simulated disks on one host.

    python -m benchmarks.agent --disks 200 --disks 2000

One pass is what the agent does every ``[agent] sample_interval``: list the
disks, ``manager.periodic`` (leases, re-applies; a tenth of the disks hold a
cap), one bulk statistics read, the rates of every disk, and the
``report_samples`` batch (in columns) serialised as oslo.messaging does
(JSON) plus the heartbeat. The simulated world is advanced between
passes, outside the measurement. CPU is ``time.process_time()`` of this
process.

``--driver libvirt-replay`` charges the libvirt driver's own work: its
listing and its parsing of one ``getAllDomainStats`` result per pass,
through its real code, from records of the shape libvirt returns (a
domain per disk, the world's counters). libvirt's ``test:///default``
cannot hold thousands of disks with statistics, so the records are made
from the world between passes and handed out as fresh dicts at each call
(libvirt-python builds a dict per domain too); setting caps goes to the
world, as with the simulated driver.

``--watch-interval S`` (with ``--urgent-samples``) also measures one
watch read, what the agent does every ``[agent] watch_interval`` between
its passes (``Sampler.watch``: one bulk read, the rates since the last
watch read, ``rates.rising`` against the last pass's): the world is
advanced by S before each read, outside the measurement, and each
interval holds one pass and ``interval / S - 1`` watch reads, as in the
agent. The cost per second is then the pass's over the interval plus
those reads' (the early passes a rising disk brings are not counted:
the steady world here rarely has one, and the output says how many
reads found one).
"""

import argparse
import statistics
import sys
import time

from oslo_config import cfg
from oslo_serialization import jsonutils

from iotguard.agent import manager as manager_mod
from iotguard.agent import sampler as sampler_mod
from iotguard.agent.virt import libvirt as libvirt_driver
from iotguard.agent.virt import simulated
from iotguard import conf as iotguard_conf

HOST = 'bench-host'
INTERVAL_S = 5.0


class _SerialisingAPI:
    """Stands for ControllerAPI: pays the JSON cost, sends nothing."""

    def __init__(self):
        self.last_bytes = 0

    def report_samples(self, ctxt, host, samples):
        samples = samples.to_wire()
        self.last_bytes = len(jsonutils.dumps(
            {'method': 'report_samples',
             'args': {'host': host, 'samples': samples}}))

    def agent_heartbeat(self, ctxt, host, info):
        jsonutils.dumps({'method': 'agent_heartbeat',
                         'args': {'host': host, 'info': info}})


class _NoStore:
    def save(self, held):
        pass

    def load(self):
        return {}


_DOMAIN_XML = """<domain type='kvm'><uuid>%(uuid)s</uuid><metadata>
<nova:instance xmlns:nova="http://openstack.org/xmlns/libvirt/nova/1.1">
<nova:owner><nova:project uuid="%(project)s">p</nova:project></nova:owner>
</nova:instance></metadata><devices>
<disk type='network' device='disk'><driver name='qemu' type='raw'/>
<target dev='%(dev)s' bus='virtio'/><serial>%(volume)s</serial>
<iotune>%(iotune)s</iotune></disk></devices></domain>"""


class _ReplayDomain:
    """A running domain as libvirt-python shows it, from the world."""

    def __init__(self, dom_id, disk):
        self._id = dom_id
        self._uuid = disk.instance_uuid
        self.dev = disk.dev
        self._xml = _DOMAIN_XML % {
            'uuid': disk.instance_uuid, 'project': disk.project_id,
            'dev': disk.dev, 'volume': disk.volume_id or '',
            'iotune': ''.join('<%s>%d</%s>' % (k, v, k)
                              for k, v in disk.static.items() if v)}

    def UUIDString(self):
        return self._uuid

    def ID(self):
        return self._id

    def isPersistent(self):
        return True

    def XMLDesc(self, flags=0):
        return self._xml


class _ReplayConnection:
    """Hands out recorded ``getAllDomainStats`` results (see the doc)."""

    def __init__(self, simulated_driver):
        self._sim = simulated_driver
        self._domains = [_ReplayDomain(i + 1, disk) for i, disk in
                         enumerate(simulated_driver.list_disks().values())]
        self._records = []

    def record(self):
        """Record every domain's bulk statistics now (one disk each).

        As libvirt gives them for ``VIR_DOMAIN_STATS_BLOCK``.
        """
        counters = self._sim.get_block_stats().as_dict()
        self._records = []
        for dom in self._domains:
            dev = dom.dev
            stats = {'block.count': 1, 'block.0.name': dev,
                     'block.0.path': '/dev/rbd/volumes/%s' % dom.UUIDString()}
            for name, value in counters[(dom.UUIDString(), dev)].items():
                stats['block.0.' + name.replace('_', '.')] = value
            stats.update({'block.0.fl.times': 1000 * stats['block.0.fl.reqs'],
                          'block.0.allocation': 1 << 30,
                          'block.0.capacity': 10 << 30,
                          'block.0.physical': 10 << 30})
            self._records.append((dom, stats))

    def listAllDomains(self, flags=0):
        return list(self._domains)

    def getAllDomainStats(self, stats=0, flags=0):
        return [(dom, dict(record)) for dom, record in self._records]

    def close(self):
        pass


class _ReplayLibvirtDriver(libvirt_driver.LibvirtDriver):
    """The libvirt driver on a replay connection; iotune on the world."""

    def __init__(self, conf, simulated_driver):
        super().__init__(conf, uri='replay:///bench')
        self._sim = simulated_driver
        self._conn = _ReplayConnection(simulated_driver)

    def record(self):
        self._conn.record()

    def get_iotune(self, instance_uuid, dev):
        return self._sim.get_iotune(instance_uuid, dev)

    def set_iotune(self, instance_uuid, dev, limits, static=None):
        self._sim.set_iotune(instance_uuid, dev, limits, static)


DRIVERS = ('simulated', 'libvirt-replay')


def _scenario(disks):
    from iotguard.sim import scenario
    return scenario.parse({
        'name': 'agent-bench',
        'duration_s': 3600,
        'interval_s': INTERVAL_S,
        'tick_s': 1.0,
        'domain': {'name': 'local:' + HOST, 'iops_4k': 50.0 * disks,
                   'bytes_sec': 2.0e6 * disks},
        'tiers': [{'name': 'std', 'min_iops': 10}],
        'vms': [{'name': 'vm', 'count': disks, 'tier': 'std',
                 'host': HOST,
                 'limits': {'total_iops_sec': 5000},
                 'jobs': [{'rw': 'randrw', 'bs': 4096, 'iodepth': 2}]}],
    }, '<agent-bench>')


def _steps(interval_s, watch_s, urgent):
    """The reads per interval: the pass, then the watch reads."""
    if watch_s is None:
        return 1
    steps = round(interval_s / watch_s) if watch_s > 0 else 0
    if not (urgent and steps > 1 and
            abs(steps * watch_s - interval_s) < 1e-9):
        raise ValueError('the watch needs urgent samples and an interval '
                         'that is a multiple of it, longer')
    return steps


def measure(disks, passes=5, driver_name='simulated', urgent=False,
            interval_s=None, watch_s=None):
    """The figures of ``passes`` intervals (two more warm the series up).

    ``pass_cpu_s``: CPU seconds of each pass; ``batch_bytes``: the last
    batch serialised. With ``watch_s``: ``watch_cpu_s``, of each watch
    read; ``watch_reads``, how many; ``watch_rose``, how many found a
    disk rising; ``cpu_s_per_s``: the medians' CPU per second.
    """
    from iotguard.sim import world as world_mod

    interval_s = interval_s or INTERVAL_S
    steps = _steps(interval_s, watch_s, urgent)
    conf = cfg.ConfigOpts()
    iotguard_conf.register_opts(conf)
    conf([], project='iotguard', default_config_files=[])
    conf.set_override('host', HOST)
    conf.set_override('sample_interval', interval_s, group='agent')
    conf.set_override('urgent_samples', urgent, group='agent')

    world = world_mod.World(_scenario(disks), seed=0)
    driver = simulated.SimulatedDriver(conf, world=world)
    driver.start()
    record = None
    if driver_name == 'libvirt-replay':
        driver = _ReplayLibvirtDriver(conf, driver)
        record = driver.record
    sim_clock = [time.time()]
    manager = manager_mod.AgentManager(conf, driver,
                                       clock=lambda: sim_clock[0],
                                       store=_NoStore())
    api = _SerialisingAPI()
    sampler = sampler_mod.Sampler(conf, driver, manager, api,
                                  clock=lambda: world.now,
                                  wall_clock=lambda: sim_clock[0])
    listing = driver.list_disks()
    manager.periodic(listing)
    manager.apply_caps({}, [
        {'instance_uuid': key[0], 'dev': key[1],
         'limits': {'total_iops_sec': 100}, 'decision_id': 'bench',
         'lease_expires_at': sim_clock[0] + 3600}
        for key in sorted(listing)[::10]])

    def timed(work):
        """The world a step on (not measured), then ``work``'s CPU."""
        world.step(interval_s / steps)
        sim_clock[0] += interval_s / steps
        if record is not None:
            record()
        start = time.process_time()
        out = work()
        return time.process_time() - start, out

    def one_pass():
        listing = driver.list_disks()
        manager.periodic(listing)
        return sampler.run_once(listing)

    cpu, watch_cpu, rose = [], [], []
    for _ in range(passes + 2):
        spent, batch = timed(one_pass)
        cpu.append(spent)
        for _ in range(steps - 1):
            spent, found = timed(sampler.watch)
            watch_cpu.append(spent)
            rose.append(bool(found))
    assert len(batch) == disks, 'the pass missed disks'
    assert batch.gap == [None] * disks, 'gaps in steady'
    figures = {'pass_cpu_s': cpu[2:], 'batch_bytes': api.last_bytes}
    if steps > 1:
        watch_cpu = watch_cpu[2 * (steps - 1):]
        figures.update(
            watch_cpu_s=watch_cpu, watch_reads=len(watch_cpu),
            watch_rose=sum(rose[2 * (steps - 1):]), cpu_s_per_s=(
                statistics.median(cpu[2:]) +
                (steps - 1) * statistics.median(watch_cpu)) / interval_s)
    return figures


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m benchmarks.agent', description=__doc__.split(
            '\n\n')[0])
    parser.add_argument('--disks', type=int, action='append',
                        help='disks on the host (repeatable; default 200 '
                             'and 2000)')
    parser.add_argument('--passes', type=int, default=5,
                        help='measured passes per size (default 5)')
    parser.add_argument('--urgent-samples', action='store_true',
                        help='mark the disks whose demand rose ([agent] '
                             'urgent_samples)')
    parser.add_argument('--interval', type=float, default=INTERVAL_S,
                        help='the sample interval (default %(default)s s)')
    parser.add_argument('--driver', choices=DRIVERS, default='simulated',
                        help='the agent\'s driver (default simulated; '
                             'libvirt-replay: the libvirt driver\'s code '
                             'on recorded bulk statistics)')
    parser.add_argument('--watch-interval', type=float, metavar='S',
                        help='also measure a watch read every S seconds '
                             'between the passes ([agent] watch_interval; '
                             'needs --urgent-samples and an interval that '
                             'is a multiple of S)')
    args = parser.parse_args(argv)
    watch = args.watch_interval
    try:
        _steps(args.interval, watch, args.urgent_samples)
    except ValueError as e:
        parser.error('--watch-interval: %s' % e)
    print('disks  cpu_ms_median  cpu_ms_max  core_pct_at_%gs  batch_kib'
          % args.interval + ('  watch_ms_median  watch_ms_max  rose  '
                             'core_pct_with_watch_%gs' % watch
                             if watch else ''))
    for n in args.disks or [200, 2000]:
        figures = measure(n, args.passes, args.driver, args.urgent_samples,
                          args.interval, watch)
        cpu = figures['pass_cpu_s']
        med = statistics.median(cpu)
        line = '%5d  %13.1f  %10.1f  %14.3f  %9.0f' % (
            n, med * 1e3, max(cpu) * 1e3, 100 * med / args.interval,
            figures['batch_bytes'] / 1024.0)
        if watch:
            wcpu = figures['watch_cpu_s']
            line += '  %15.2f  %12.2f  %4s  %22.3f' % (
                statistics.median(wcpu) * 1e3, max(wcpu) * 1e3,
                '%d/%d' % (figures['watch_rose'], figures['watch_reads']),
                100 * figures['cpu_s_per_s'])
        print(line)
    return 0


if __name__ == '__main__':
    sys.exit(main())
