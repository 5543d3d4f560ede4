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

"""The Gnocchi source against a real Gnocchi 4.7 (PostgreSQL indexer, file
storage, basic auth), started by :mod:`iotguard.tests.fixtures.gnocchi`.

The measures are cumulative counters pushed as Ceilometer's Gnocchi
publisher would (``instance_disk`` resources named ``<uuid>-<dev>``), one
every 5 s, with 5 s buckets.
"""

import socket
import uuid

from iotguard.controller import samples as sample_store
from iotguard.controller import sources
from iotguard.controller.sources import gnocchi
from iotguard.tests import base as test_base
from iotguard.tests.fixtures import gnocchi as gnocchi_fixture
from iotguard.tests.unit.controller.sources import test_ceilometer as unit

BASE = 1795316400.0        # 2026-11-22T03:00:00Z
STEP = 5
NOW = BASE + 62

# Per second: read 20 ops of 4 KiB at 2 ms, write 5 ops of 64 KiB at 4 ms.
RATES = {'disk.device.read.requests': 20,
         'disk.device.read.bytes': 20 * 4096,
         'disk.device.read.latency': 20 * 2_000_000,
         'disk.device.write.requests': 5,
         'disk.device.write.bytes': 5 * 65536,
         'disk.device.write.latency': 5 * 4_000_000}


def counters(seconds, reset_at=None, scale=1):
    """Cumulative points every STEP s; after ``reset_at`` they restart."""
    out = {}
    for metric, rate in RATES.items():
        points = []
        for t in range(0, seconds + 1, STEP):
            since = t if reset_at is None or t < reset_at else t - reset_at
            base = 0 if reset_at is None or t < reset_at else 3
            points.append((BASE + t, base + scale * rate * since))
        out[metric] = points
    return out


class GnocchiSourceTest(test_base.TestCase):

    @classmethod
    def setUpClass(cls):
        # One Gnocchi for the class (about 4 s to start); every test has
        # its own instances in it.
        super().setUpClass()
        cls.skip_reason = gnocchi_fixture.unavailable()
        if cls.skip_reason is None:
            cls.gnocchi = gnocchi_fixture.Gnocchi(granularity=STEP)
            cls.gnocchi.setUp()

    @classmethod
    def tearDownClass(cls):
        if cls.skip_reason is None:
            cls.gnocchi.cleanUp()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        if self.skip_reason:
            self.skipTest(self.skip_reason)
        self.flags(group='gnocchi', enabled=True, auth_mode='basic',
                   endpoint=self.gnocchi.endpoint, granularity=STEP,
                   lookback_buckets=3)
        self.uuid = str(uuid.uuid4())
        self.other = str(uuid.uuid4())
        disks = {(self.uuid, 'vda'): counters(50),
                 (self.uuid, 'vdb'): counters(50, reset_at=30, scale=2),
                 (self.other, 'vda'): counters(50)}
        resources = [self.gnocchi.create_disk(u, dev, list(RATES))
                     for u, dev in disks]
        self.gnocchi.push({'%s-%s' % key: points
                           for key, points in disks.items()})
        for resource in resources:
            self.gnocchi.process(resource)

    def source(self):
        return gnocchi.GnocchiSource(self.conf, clock=lambda: NOW)

    def by_disk(self, samples):
        out = {}
        for s in samples:
            out.setdefault(s['dev'], []).append(s)
        return out

    def fetch(self, *args, **kw):
        """The source's rows, each a dict (:func:`unit.flat`)."""
        rows = self.source().fetch(*args, **kw)
        # every row passes the one check of a sample
        self.assertEqual(len(rows), len(sources.checked(rows)))
        return [unit.flat(row) for row in rows]

    def check_rates(self, sample, scale=1):
        self.assertIsNone(sample.get('gap'))
        self.assertAlmostEqual(20.0 * scale, sample['read_iops'])
        self.assertAlmostEqual(5.0 * scale, sample['write_iops'])
        self.assertAlmostEqual(20 * 4096 * scale, sample['read_bytes_sec'])
        self.assertAlmostEqual(5 * 65536 * scale, sample['write_bytes_sec'])
        self.assertAlmostEqual(2.0, sample['read_latency_ms'])
        self.assertAlmostEqual(4.0, sample['write_latency_ms'])
        self.assertEqual(float(STEP), sample['interval_s'])

    def test_history_found_by_search(self):
        samples = self.fetch([self.uuid], start=BASE)
        self.assertEqual({self.uuid}, {s['instance_uuid'] for s in samples})
        disks = self.by_disk(samples)
        # Buckets 5..50 have a rate (the first has no predecessor); each
        # sample is stamped at the end of its bucket.
        self.assertEqual([BASE + t + STEP for t in range(5, 51, STEP)],
                         [s['timestamp'] for s in disks['vda']])
        for sample in disks['vda']:
            self.check_rates(sample)
        gaps = [s['timestamp'] for s in disks['vdb'] if s['gap']]
        self.assertEqual([BASE + 30 + STEP], gaps)
        for sample in disks['vdb']:
            if not sample['gap']:
                self.check_rates(sample, scale=2)
            else:
                self.assertEqual('reset', sample['gap'])
                self.assertIsNone(sample['read_iops'])

    def test_rate_mean_divided_by_granularity(self):
        self.flags(group='gnocchi', rate_method='rate:mean')
        disks = self.by_disk(self.fetch([self.uuid], start=BASE))
        self.assertEqual(10, len(disks['vda']))
        for sample in disks['vda']:
            self.check_rates(sample)
        self.assertEqual(1, sum(1 for s in disks['vdb'] if s['gap']))

    def test_latest_into_the_real_store(self):
        store = sample_store.SampleStore(5.0, clock=lambda: NOW)
        source = self.source()
        self.assertEqual(2, source.poll(store.add_batch, [self.uuid]))
        latest = store.latest(self.uuid, 'vda')
        # The bucket 55..60 is the newest complete one at NOW.
        self.assertEqual(BASE + 55, latest['timestamp'])
        self.check_rates(latest)
        self.assertEqual(2 * 20.0, store.latest(self.uuid,
                                                'vdb')['read_iops'])
        self.assertIsNone(store.latest(self.other, 'vda'))
        # Only the instances asked for.
        self.assertEqual({self.other},
                         {s.instance_uuid
                          for s in source.latest([self.other])})

    def test_gnocchi_down_gives_nothing(self):
        with socket.socket() as s:
            s.bind(('127.0.0.1', 0))
            closed = 'http://127.0.0.1:%d' % s.getsockname()[1]
        self.flags(group='gnocchi', endpoint=closed, timeout=2.0)
        got = []
        self.assertEqual([], self.source().fetch([self.uuid]))
        self.assertEqual(0, self.source().poll(got.append))
        self.assertEqual([], got)
