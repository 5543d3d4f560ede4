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

"""The Prometheus source against a real Prometheus (Debian's package).

Prometheus (:mod:`iotguard.tests.fixtures.prometheus`, a scrape every
0.5 s) scrapes an exporter served here on loopback by prometheus_client as
Ceilometer's polling agent serves it (``[polling]
enable_prometheus_exporter``): gauges ``ceilometer_disk_device_*`` with
Ceilometer's labels, whose values move once per poll, every ``P`` s. One
disk reads and writes at known rates and its guest reboots (counters back
to zero) at the 4th poll; another is idle. Then the exporter stops.
"""

import math
import time
import uuid

import fixtures
import prometheus_client
from prometheus_client import core

from iotguard.controller import samples as sample_store
from iotguard.controller.sources import prometheus as source_mod
from iotguard.tests import base
from iotguard.tests.fixtures import ports
from iotguard.tests.fixtures import prometheus
from iotguard.tests.unit.controller.sources import test_ceilometer
from iotguard.tests.unit.controller.sources import test_prometheus as unit

P = 2.0              # Ceilometer's polling interval, s
REBOOT_POLL = 4      # the busy disk's guest reboots before this poll
POLLS = 7            # then the exporter stops
METERS = {**unit.RATES, **unit.LATENCY}


class Exporter:
    """A Ceilometer polling agent's exporter, polling every ``P`` s.

    Poll 0 is at ``t0``; until it is set, the counters of poll -1.
    """

    def __init__(self, disks):
        self.disks = disks      # {(uuid, dev): counter(meter, poll k)}
        self.t0 = None

    def collect(self):
        k = -1 if self.t0 is None else math.floor(
            (time.time() - self.t0) / P)
        for meter in METERS:
            names = [n for n in unit.labels(meter)
                     if n not in ('__name__', 'job', 'instance')]
            family = core.GaugeMetricFamily(
                'ceilometer_' + meter.replace('.', '_'), '', labels=names)
            for (disk_uuid, dev), counter in self.disks.items():
                labels = unit.labels(meter, disk_uuid, dev)
                family.add_metric([labels[n] for n in names],
                                  counter(meter, k))
            yield family


def busy(meter, k):
    """Counters at poll k; the guest rebooted just before REBOOT_POLL."""
    seconds = (k + 50) * P if k < REBOOT_POLL else (k - REBOOT_POLL) * P + 1
    return METERS[meter] * seconds


def idle(meter, k):
    return METERS[meter] * 100


class PrometheusSourceTest(base.TestCase):

    def setUp(self):
        super().setUp()
        why = prometheus.unavailable()
        if why:
            self.skipTest(why)
        self.useFixture(fixtures.Timeout(60, gentle=True))
        self.busy, self.idle = str(uuid.uuid4()), str(uuid.uuid4())
        registry = prometheus_client.CollectorRegistry()
        self.exporter = Exporter({(self.busy, 'vda'): busy,
                                  (self.idle, 'vdb'): idle})
        registry.register(self.exporter)
        port = ports.free_port()
        self.server, _ = prometheus_client.start_http_server(
            port, addr='127.0.0.1', registry=registry)
        self.addCleanup(self.server.server_close)
        self.prom = self.useFixture(prometheus.Prometheus(
            {'ceilometer': ['127.0.0.1:%d' % port]}))
        self.flags(group='prometheus_source', enabled=True,
                   url=self.prom.url, polling_interval=P,
                   matchers='job="ceilometer"')

    def test_rates_reset_idle_and_stale(self):
        source = source_mod.PrometheusSource(self.conf)
        store = sample_store.SampleStore(interval_s=0.5)
        got = []

        def sink(batch):
            for disk, interval in zip(test_ceilometer.disks_of(batch),
                                      batch.interval_s):
                got.append(dict(disk, interval_s=interval))
            return store.add_batch(batch)

        # Prometheus sees the exporter as Ceilometer's, labels and all
        # (its first scrape comes with its first target sync, within 5 s).
        series = base.wait_for(lambda: self.prom.query(
            'ceilometer_disk_device_read_bytes'), 20)
        self.assertEqual({self.busy + '-vda', self.idle + '-vdb'},
                         {dict(labels)['resource'] for labels in series})
        labels = dict(next(iter(series)))
        self.assertEqual(('read', 'disk.device.read.bytes', 'B', 'p1'),
                         (labels['disk'], labels['counter'],
                          labels['unit'], labels['project']))
        # poll 0 once Prometheus has seen poll -1 twice (whole)
        self.assertTrue(base.wait_for(lambda: self.prom.query(
            'count_over_time(ceilometer_disk_device_read_bytes[1m]) > 1'),
            5))
        self.exporter.t0 = t0 = time.time()

        stop_at = t0 + POLLS * P
        while time.time() < stop_at:
            source.poll(sink)
            time.sleep(0.2)
        self.server.shutdown()
        self.server.server_close()
        stopped = time.time()
        busy_rows = [s for s in got if s['instance_uuid'] == self.busy]
        idle_rows = [s for s in got if s['instance_uuid'] == self.idle]

        # The busy disk: its rates, poll after poll; the reboot a gap.
        expected = {'read_iops': 10.0, 'write_iops': 2.0,
                    'read_bytes_sec': 40960.0, 'write_bytes_sec': 131072.0,
                    'read_latency_ms': 2.0, 'write_latency_ms': 5.0}
        reboot = t0 + REBOOT_POLL * P
        gaps = [s for s in busy_rows if s['gap']]
        self.assertEqual(['reset'], [s['gap'] for s in gaps], busy_rows)
        self.assertTrue(reboot - 0.1 < gaps[0]['timestamp'] < reboot + 1.0)
        before = [s for s in busy_rows if t0 < s['timestamp'] < reboot]
        after = [s for s in busy_rows if s['timestamp'] > reboot + P / 2]
        # polls 1..3 before (0 and 1 make the first rate), 5..6 after
        self.assertEqual(REBOOT_POLL - 1, len(before), busy_rows)
        self.assertEqual(POLLS - REBOOT_POLL - 1, len(after), busy_rows)
        for row in before + after:
            self.assertIsNone(row['gap'])
            self.assertAlmostEqual(P, row['interval_s'], delta=0.1)
            for name, value in expected.items():
                # the polls show at the scrape after them: P within a
                # scrape's timing (ms)
                self.assertAlmostEqual(value, row[name], delta=value * 0.05,
                                       msg='%s of %s' % (name, row))
        stamps = [s['timestamp'] for s in busy_rows if s['timestamp'] > t0]
        self.assertEqual(sorted(set(stamps)), stamps)   # each poll once
        for a, b in zip(stamps, stamps[1:]):
            self.assertAlmostEqual(P, b - a, delta=0.1)

        # The idle disk reads zero, refreshed at every scrape.
        self.assertGreater(len(idle_rows), 5)
        for row in idle_rows:
            self.assertEqual(0.0, row['read_iops'])
            self.assertEqual(0.0, row['write_bytes_sec'])
            self.assertGreaterEqual(row['interval_s'], 1.5 * P)
        # The store took every sample: none stale, none twice.
        self.assertEqual(0, store.rejected)

        # The exporter gone: nothing more a polling interval later.
        while time.time() < stopped + P + 0.5:
            time.sleep(0.1)
        self.assertEqual([], source.latest())
