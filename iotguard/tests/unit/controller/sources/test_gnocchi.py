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

import datetime

import fixtures
from gnocchiclient import auth as gnocchi_auth

from iotguard.controller import sources
from iotguard.controller.sources import gnocchi
from iotguard.tests import base
from iotguard.tests.unit.controller.sources import test_ceilometer
from iotguard.wire import batch as batch_mod

flat = test_ceilometer.flat

UUID = '8f2b9c1e-3d4a-4b5c-9e6f-7a8b9c0d1e2f'
T0 = 1795316400.0
G = 300


def when(t):
    return datetime.datetime.fromtimestamp(T0 + t, tz=datetime.timezone.utc)


def answer(per_metric, rid='r1', name='vda', extra_refs=()):
    """What gnocchiclient's aggregates.fetch returns with details=True."""
    return {
        'measures': {rid: {metric: {'mean': [(when(t), float(G), v)
                                             for t, v in points]}
                           for metric, points in per_metric.items()}},
        'references': [{'id': rid, 'instance_id': UUID, 'name': name,
                        'project_id': 'p1', 'type': 'instance_disk'}] +
        list(extra_refs),
    }


def steady(buckets, **override):
    """Per-second rates for each bucket start in ``buckets``."""
    values = {'disk.device.read.requests': 10.0,
              'disk.device.read.bytes': 40960.0,
              'disk.device.write.requests': 2.0,
              'disk.device.write.bytes': 131072.0}
    values.update(override)
    return {m: [(t, v) for t in buckets] for m, v in values.items()}


class FakeAggregates:

    def __init__(self, result=None, error=None):
        self.result, self.error, self.calls = result, error, []

    def fetch(self, operations, **kw):
        self.calls.append(dict(kw, operations=operations))
        if self.error:
            raise self.error
        return self.result


class FakeClient:

    def __init__(self, **kw):
        self.aggregates = FakeAggregates(**kw)


class TestGnocchiSource(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(group='gnocchi', granularity=G)
        self.now = T0 + 3 * G + 10

    def source(self, result=None, error=None):
        self.client = FakeClient(result=result, error=error)
        return gnocchi.GnocchiSource(self.conf, client=self.client,
                                     clock=lambda: self.now)

    def test_samples_from_complete_buckets(self):
        # Buckets 0, 300, 600 are complete at now; 900 is still filling.
        rows = self.source(answer(steady([0, G, 2 * G, 3 * G]))).fetch(
            [UUID])
        self.assertEqual([T0 + G, T0 + 2 * G, T0 + 3 * G],
                         [s.timestamp for s in rows])
        self.assertEqual(len(rows), len(sources.checked(rows)))
        samples = [flat(row) for row in rows]
        s = samples[0]
        self.assertEqual((UUID, 'vda', 'p1'),
                         (s['instance_uuid'], s['dev'], s['project_id']))
        self.assertEqual((10.0, 2.0, 40960.0, 131072.0),
                         (s['read_iops'], s['write_iops'],
                          s['read_bytes_sec'], s['write_bytes_sec']))
        self.assertIsNone(s['read_latency_ms'])
        self.assertEqual(float(G), s['interval_s'])

    def test_search_by_instance_not_by_id(self):
        self.source(answer({})).fetch([UUID, UUID], start=T0)
        [call] = self.client.aggregates.calls
        self.assertEqual({'in': {'instance_id': [UUID]}}, call['search'])
        self.assertEqual('instance_disk', call['resource_type'])
        self.assertEqual(G, call['granularity'])
        self.assertTrue(call['details'])
        self.assertEqual('2026-11-22T03:00:00+00:00', call['start'])
        self.assertIn('rateofchangesec', call['operations'])
        self.assertIn('(disk.device.write.latency mean)',
                      call['operations'])

    def test_batches_of_instances(self):
        uuids = ['%08d-0000-4000-8000-000000000000' % i for i in range(250)]
        self.source(answer({})).fetch(uuids)
        self.assertEqual([100, 100, 50],
                         [len(c['search']['in']['instance_id'])
                          for c in self.client.aggregates.calls])

    def test_rate_mean_is_divided_by_granularity(self):
        self.flags(group='gnocchi', rate_method='rate:mean')
        per_bucket = {m: [(0, v * G)] for m, v in (
            ('disk.device.read.requests', 10.0),
            ('disk.device.read.bytes', 40960.0),
            ('disk.device.write.requests', 2.0),
            ('disk.device.write.bytes', 131072.0))}
        source = self.source(answer(per_bucket))
        [s] = map(flat, source.fetch())
        self.assertEqual(10.0, s['read_iops'])
        self.assertEqual(131072.0, s['write_bytes_sec'])
        call = self.client.aggregates.calls[0]
        self.assertIn('(disk.device.read.bytes rate:mean)',
                      call['operations'])
        self.assertEqual({}, call['search'])

    def test_latency_per_op(self):
        data = steady([0])
        data['disk.device.read.latency'] = [(0, 10.0 * 3_000_000)]
        data['disk.device.write.latency'] = [(0, 0.0)]
        [s] = map(flat, self.source(answer(data)).fetch())
        self.assertEqual(3.0, s['read_latency_ms'])
        self.assertEqual(0.0, s['write_latency_ms'])

    def test_negative_change_is_a_reset_gap(self):
        data = steady([0, G])
        data['disk.device.read.bytes'][1] = (G, -5.0)
        samples = [flat(r) for r in self.source(answer(data)).fetch()]
        self.assertEqual([None, 'reset'], [s['gap'] for s in samples])
        self.assertIsNone(samples[1]['read_iops'])

    def test_bucket_missing_a_metric_is_skipped(self):
        data = steady([0, G])
        data['disk.device.write.bytes'] = data['disk.device.write.bytes'][1:]
        samples = self.source(answer(data)).fetch()
        self.assertEqual([T0 + 2 * G], [s.timestamp for s in samples])

    def test_latest_is_newest_per_disk(self):
        source = self.source(answer(steady([0, G, 2 * G])))
        [s] = source.latest()
        self.assertEqual(T0 + 3 * G, s.timestamp)
        start = self.client.aggregates.calls[0]['start']
        lookback = self.conf.gnocchi.lookback_buckets
        self.assertEqual(gnocchi._iso(self.now - (lookback + 1) * G), start)

    def test_gnocchi_error_gives_nothing(self):
        got = []
        source = self.source(error=ConnectionError('refused'))
        self.assertEqual([], source.fetch([UUID]))
        self.assertEqual(0, source.poll(got.append))
        self.assertEqual([], got)

    def test_unknown_resource_and_nonsense_are_survived(self):
        self.assertEqual([], self.source({'measures': {'x': {}}}).fetch())
        self.assertEqual([], self.source({'nonsense': 1}).fetch())

    def test_poll_counts_accepted(self):
        source = self.source(answer(steady([0, G, 2 * G])))
        got = []

        def sink(batch):
            got.append(batch)
            return len(batch)
        self.assertEqual(1, source.poll(sink))
        [batch] = got
        self.assertEqual([(UUID, 'vda')], batch.keys())
        self.assertEqual(0, source.poll(lambda batch: 0))

    def test_a_malformed_sample_is_dropped_alone(self):
        rows = [batch_mod.Row(UUID, 'vda', T0, 300.0,
                              rates={'read_iops': 1.0}),
                batch_mod.Row(UUID, '0bad', T0, 300.0,
                              rates={'read_iops': 1.0}),
                batch_mod.Row(UUID, 'vdb', T0, 300.0,
                              rates={'read_iops': float('inf')})]
        got = []

        def sink(batch):
            got.append(batch)
            return len(batch)
        log = self.useFixture(fixtures.FakeLogger())
        self.assertEqual(1, sources.deliver(sink, rows))
        self.assertEqual([(UUID, 'vda')], got[0].keys())
        self.assertIn('Dropped a sample of', log.output)
        self.assertEqual(0, sources.deliver(sink, []))
        self.assertEqual(1, len(got))


class TestClient(base.TestCase):

    def test_basic(self):
        self.flags(group='gnocchi', auth_mode='basic',
                   endpoint='http://gnocchi:8041', user='admin')
        client = gnocchi.get_client(self.conf)
        auth = client.api.session.auth
        self.assertIsInstance(auth, gnocchi_auth.GnocchiBasicPlugin)
        self.assertEqual('http://gnocchi:8041',
                         auth.get_endpoint(client.api.session))

    def test_noauth(self):
        self.flags(group='gnocchi', auth_mode='noauth',
                   endpoint='http://gnocchi:8041')
        client = gnocchi.get_client(self.conf)
        self.assertIsInstance(client.api.session.auth,
                              gnocchi_auth.GnocchiNoAuthPlugin)

    def test_endpoint_required_without_keystone(self):
        self.flags(group='gnocchi', auth_mode='basic')
        self.assertRaises(ValueError, gnocchi.get_client, self.conf)

    def test_keystone_uses_service_credentials(self):
        self.flags(group='gnocchi', auth_mode='keystone',
                   endpoint='http://gnocchi:8041')
        self.flags(group='service_credentials', interface='admin')
        client = gnocchi.get_client(self.conf)
        self.assertEqual('admin', client.api.interface)
        self.assertEqual('http://gnocchi:8041', client.api.endpoint_override)
