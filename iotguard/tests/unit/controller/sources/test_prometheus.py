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

"""The Prometheus source on faked answers of Prometheus' query API.

The answers are what Prometheus returns for ``<metric>[<window>]`` when it
scrapes Ceilometer's exporter every ``S`` s and Ceilometer polls every
``P`` s: each scrape sees the counters of Ceilometer's latest poll.
"""

import json
from unittest import mock
import urllib.parse

import fixtures
import requests

from iotguard.controller import service
from iotguard.controller.sources import prometheus
from iotguard.tests import base
from iotguard.tests.unit.controller import fakes
from iotguard.tests.unit.controller.sources import test_ceilometer

flat = test_ceilometer.flat

UUID = '8f2b9c1e-3d4a-4b5c-9e6f-7a8b9c0d1e2f'
UUID2 = '1c0ffee0-3d4a-4b5c-9e6f-7a8b9c0d1e2f'
T0 = 1795316400.0
P = 300.0      # Ceilometer's polling interval
S = 30.0       # Prometheus' scrape interval
PHASE = 10.0   # a poll at T0 + k P is first scraped at T0 + k P + PHASE
NOW = T0 + 10 * P + 50   # the poll at 10 P was scraped twice

#: Per second: 10 reads of 4 KiB, 2 writes of 64 KiB.
RATES = {'disk.device.read.requests': 10,
         'disk.device.read.bytes': 10 * 4096,
         'disk.device.write.requests': 2,
         'disk.device.write.bytes': 2 * 65536}
#: ns per second: reads of 2 ms, writes of 5 ms.
LATENCY = {'disk.device.read.latency': 10 * 2_000_000,
           'disk.device.write.latency': 2 * 5_000_000}
UNITS = {'requests': 'request', 'bytes': 'B', 'latency': 'ns'}


def steady(meter, polled_at):
    """Counters since boot at T0 - 1000 s, at each meter's own rate."""
    return int({**RATES, **LATENCY}[meter] * (polled_at - T0 + 1000))


def labels(meter, uuid=UUID, dev='vda', instance='cn1:9101'):
    """The labels of a disk series of Ceilometer's exporter, scraped."""
    _, _, kind, what = meter.split('.')
    return {'__name__': 'ceilometer_' + meter.replace('.', '_'),
            'disk': kind, 'publisher': 'ceilometer', 'type': 'device',
            'counter': meter, 'project': 'p1', 'user': 'u1',
            'unit': UNITS[what], 'resource': '%s-%s' % (uuid, dev),
            'vm_instance': '5f6b8c1d0e7a2b3c4d5e6f7a8b9c0d1e2f3a4b5c',
            'resource_name': 'web-1:instance-00000001',
            'server_group': 'none', 'flavor_id': '1',
            'flavor_name': 'm1.tiny', 'job': 'ceilometer',
            'instance': instance}


class Disk:
    """One disk as Prometheus scraped it from one Ceilometer agent.

    ``counter(meter, polled_at)``: what Ceilometer read at a poll;
    ``scraped``: (first, last) scrape times; ``late``: {scrape time:
    meters that still show the poll before} (a poll half exported);
    ``missing``: {scrape time: meters absent} (purged, not set again).
    """

    def __init__(self, uuid=UUID, dev='vda', counter=steady,
                 meters=tuple(RATES), instance='cn1:9101',
                 scraped=(T0, NOW), late=None, missing=None):
        self.uuid, self.dev, self.counter = uuid, dev, counter
        self.meters, self.instance, self.scraped = meters, instance, scraped
        self.late, self.missing = late or {}, missing or {}

    def series(self, meter, start, end):
        if meter not in self.meters:
            return None
        values = []
        at = T0 + PHASE
        while at <= min(end, self.scraped[1]):
            if start < at and at >= self.scraped[0] and meter not in \
                    self.missing.get(at, ()):
                poll = (at - PHASE) // P * P
                if meter in self.late.get(at, ()):
                    poll -= P
                values.append([at, str(self.counter(meter, poll))])
            at += S
        return {'metric': labels(meter, self.uuid, self.dev, self.instance),
                'values': values}


class FakeResponse:

    def __init__(self, body, status=200):
        self.status_code = status
        self.text = body if isinstance(body, str) else json.dumps(body)

    def json(self):
        return json.loads(self.text)


def matrix(result):
    return {'status': 'success',
            'data': {'resultType': 'matrix', 'result': result}}


class FakePrometheus:
    """A requests Session whose ``get`` answers like Prometheus."""

    def __init__(self, disks=(), answer=None, error=None):
        self.disks, self.answer, self.error = list(disks), answer, error
        self.calls = []

    def get(self, url, timeout=None, params=None):
        self.calls.append((url, timeout, params))
        if self.error is not None:
            raise self.error
        if self.answer is not None:
            return self.answer
        # '<metric>{<matchers>}[<n>s]' at time
        metric = params['query'].split('{')[0]
        window = float(params['query'].rsplit('[', 1)[1].rstrip('s]'))
        at = float(params['time'])
        meter = metric[len('ceilometer_'):].replace('_', '.')
        result = [s for d in self.disks
                  if (s := d.series(meter, at - window, at)) is not None]
        return FakeResponse(matrix(result))


class TestPrometheusSource(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(group='prometheus_source', url='http://prom:9090/',
                   polling_interval=P, matchers='job="ceilometer"')
        self.now = NOW
        self.log = self.useFixture(fixtures.FakeLogger())

    def source(self, *disks, **kw):
        self.prom = FakePrometheus(disks, **kw)
        return prometheus.PrometheusSource(self.conf, session=self.prom,
                                           clock=lambda: self.now)

    def latest(self, *disks, **kw):
        return {(r.instance_uuid, r.dev): flat(r)
                for r in self.source(*disks, **kw).latest()}

    def test_rates_between_the_two_newest_polls(self):
        s = self.latest(Disk())[(UUID, 'vda')]
        self.assertEqual(T0 + 10 * P + PHASE, s['timestamp'])
        self.assertEqual(P, s['interval_s'])
        self.assertIsNone(s['gap'])
        self.assertEqual('p1', s['project_id'])
        self.assertEqual((10.0, 2.0, 40960.0, 131072.0),
                         (s['read_iops'], s['write_iops'],
                          s['read_bytes_sec'], s['write_bytes_sec']))
        self.assertIsNone(s['read_latency_ms'])   # not exported

    def test_latency_per_op_when_exported(self):
        disk = Disk(meters=tuple(RATES) + tuple(LATENCY))
        s = self.latest(disk)[(UUID, 'vda')]
        self.assertAlmostEqual(2.0, s['read_latency_ms'])
        self.assertAlmostEqual(5.0, s['write_latency_ms'])

    def test_one_query_per_metric_for_all_disks(self):
        got = self.latest(Disk(), Disk(uuid=UUID2, dev='vdb'))
        self.assertEqual({(UUID, 'vda'), (UUID2, 'vdb')}, set(got))
        self.assertEqual(len(prometheus.METRICS), len(self.prom.calls))
        url, timeout, params = self.prom.calls[0]
        self.assertEqual('http://prom:9090/api/v1/query', url)
        self.assertEqual(10.0, timeout)
        self.assertEqual('%.3f' % NOW, params['time'])
        queries = sorted(p['query'] for _, _, p in self.prom.calls)
        self.assertIn('ceilometer_disk_device_read_bytes{job="ceilometer"}'
                      '[900s]', queries)
        self.assertIn('ceilometer_disk_device_write_latency{job='
                      '"ceilometer"}[900s]', queries)

    def test_the_newest_poll_must_be_scraped_twice(self):
        # The poll at 10 P is seen by one scrape (it may be half
        # exported): the rates stay those of the poll at 9 P.
        self.now = T0 + 10 * P + PHASE
        s = self.latest(Disk())[(UUID, 'vda')]
        self.assertEqual(T0 + 9 * P + PHASE, s['timestamp'])
        self.assertEqual(10.0, s['read_iops'])

    def test_a_half_exported_poll_is_not_read_as_a_burst(self):
        # The scrape right after the poll at 10 P saw the new read
        # counters but the old write ones; the next saw them all.
        first = T0 + 10 * P + PHASE
        disk = Disk(late={first: ('disk.device.write.requests',
                                  'disk.device.write.bytes')},
                    scraped=(T0, NOW + S))
        self.now = first + S    # not settled yet
        self.assertEqual(T0 + 9 * P + PHASE,
                         self.latest(disk)[(UUID, 'vda')]['timestamp'])
        self.now = NOW + S
        s = self.latest(disk)[(UUID, 'vda')]
        self.assertEqual(first, s['timestamp'])
        self.assertEqual(P, s['interval_s'])
        self.assertEqual((10.0, 2.0, 40960.0, 131072.0),
                         (s['read_iops'], s['write_iops'],
                          s['read_bytes_sec'], s['write_bytes_sec']))

    def test_a_scrape_missing_a_meter_is_skipped(self):
        # Ceilometer unregisters a meter before setting it again: the
        # poll's first scrape lacks it. The poll shows from the next one,
        # a scrape interval late.
        first = T0 + 10 * P + PHASE
        disk = Disk(missing={first: ('disk.device.read.bytes',)},
                    scraped=(T0, NOW + S))
        self.now = NOW + S
        s = self.latest(disk)[(UUID, 'vda')]
        self.assertEqual(first + S, s['timestamp'])
        self.assertEqual(P + S, s['interval_s'])
        self.assertEqual(40960.0 * P / (P + S), s['read_bytes_sec'])

    def test_a_counter_that_went_back_is_a_reset_gap(self):
        # The guest rebooted between the polls at 9 P and 10 P.
        def rebooted(meter, polled_at):
            if polled_at < T0 + 10 * P:
                return steady(meter, polled_at)
            return int(RATES[meter] * (polled_at - T0 - 10 * P + 60))
        s = self.latest(Disk(counter=rebooted))[(UUID, 'vda')]
        self.assertEqual('reset', s['gap'])
        self.assertIsNone(s['rates'])
        self.assertEqual(T0 + 10 * P + PHASE, s['timestamp'])
        # a poll later the rates are back, from the restarted counters
        self.now = NOW + P
        s = self.latest(Disk(counter=rebooted, scraped=(T0, self.now)))[
            (UUID, 'vda')]
        self.assertIsNone(s['gap'])
        self.assertEqual(10.0, s['read_iops'])

    def test_idle_disk_reads_zero(self):
        def idle(meter, polled_at):
            return steady(meter, min(polled_at, T0 + 5 * P))
        s = self.latest(Disk(counter=idle))[(UUID, 'vda')]
        self.assertEqual(T0 + 10 * P + PHASE + S, s['timestamp'])   # newest
        self.assertEqual(0.0, s['read_iops'])
        self.assertEqual(0.0, s['write_bytes_sec'])
        self.assertGreaterEqual(s['interval_s'], 1.5 * P)
        self.assertLess(s['interval_s'], 1.5 * P + S)

    def test_a_disk_busy_again_after_idling(self):
        def woke(meter, polled_at, since=8):
            return steady(meter, polled_at if polled_at >= T0 + 10 * P
                          else min(polled_at, T0 + since * P))
        # The poll before the first busy one is unknown: a gap when the
        # idle spell began in the window, nothing when before.
        s = self.latest(Disk(counter=woke))[(UUID, 'vda')]
        self.assertEqual('too_long', s['gap'])
        self.assertIsNone(s['rates'])
        self.assertEqual({}, self.latest(Disk(
            counter=lambda m, t: woke(m, t, since=5))))
        # the next is a rate again
        self.now = NOW + P
        s = self.latest(Disk(counter=woke, scraped=(T0, self.now)))[
            (UUID, 'vda')]
        self.assertEqual(10.0, s['read_iops'])

    def test_stale_disk_gives_nothing(self):
        # The agent stopped being scraped more than a polling interval ago.
        disk = Disk(scraped=(T0, NOW - P - 1))
        self.assertEqual({}, self.latest(disk))
        self.assertEqual(1, len(self.latest(Disk(scraped=(T0, NOW - P + S)))))

    def test_not_enough_scrapes_gives_nothing(self):
        # Two polls seen, the older from the first scrape: its start is
        # not a change Prometheus saw.
        self.assertEqual({}, self.latest(Disk(scraped=(T0 + 9 * P, NOW))))
        self.assertEqual({}, self.latest(Disk(scraped=(NOW - 5, NOW))))

    def test_a_migrated_disk_is_read_from_its_new_host(self):
        old = Disk(scraped=(T0, T0 + 8 * P))
        new = Disk(instance='cn2:9101', scraped=(T0 + 8 * P + 1, NOW))
        s = self.latest(old, new)[(UUID, 'vda')]
        self.assertEqual(10.0, s['read_iops'])
        self.assertEqual(T0 + 10 * P + PHASE, s['timestamp'])

    def test_series_without_a_disk_or_counters_are_left_out(self):
        good = Disk().series('disk.device.read.bytes', NOW - 3 * P, NOW)
        no_resource = dict(good, metric={k: v for k, v in
                                         good['metric'].items()
                                         if k != 'resource'})
        not_a_disk = dict(good, metric=dict(good['metric'],
                                            resource='a-volume-id'))
        nan = dict(good, values=[[NOW, 'NaN']])
        negative = dict(good, values=[[NOW, '-1']])
        weird = dict(good, values=[[NOW]])
        answer = FakeResponse(matrix([no_resource, not_a_disk, nan,
                                      negative, weird, 'nonsense']))
        self.assertEqual({}, self.latest(answer=answer))
        self.assertIn('6 series of ceilometer_disk_device_read_requests',
                      self.log.output)

    def test_prometheus_down_or_nonsense_gives_nothing(self):
        for kw in (
                {'error': requests.ConnectionError('refused')},
                {'error': requests.Timeout('slow')},
                {'answer': FakeResponse('<html>bad gateway</html>', 502)},
                {'answer': FakeResponse({'status': 'error',
                                         'errorType': 'bad_data',
                                         'error': 'parse error'}, 400)},
                {'answer': FakeResponse({'status': 'success', 'data': {
                    'resultType': 'vector', 'result': []}})},
                {'answer': FakeResponse({'status': 'success'})},
                {'answer': FakeResponse([1, 2])},
                {'answer': FakeResponse(matrix([{'metric': None}]))}):
            source = self.source(**kw)
            self.assertEqual([], source.latest())
            self.assertEqual(0, source.poll(self.fail))
        self.assertIn('Prometheus unavailable', self.log.output)
        self.assertIn('parse error', self.log.output)
        self.assertIn('bad gateway', self.log.output)

    def test_a_sample_is_delivered_once(self):
        got = []

        def sink(batch):
            got.append(batch)
            return len(batch)
        source = self.source(Disk())
        self.assertEqual(1, source.poll(sink))
        self.assertEqual([(UUID, 'vda')], got[0].keys())
        self.now += 5     # same newest poll: nothing new
        self.assertEqual(0, source.poll(sink))
        self.assertEqual(1, len(got))
        source._session.error = requests.ConnectionError('refused')
        self.assertEqual(0, source.poll(sink))    # a failed round ...
        source._session.error = None
        self.assertEqual(0, source.poll(sink))    # ... forgets nothing
        self.assertEqual(1, len(got))
        self.now = NOW + P    # the next poll
        source._session.disks = [Disk(scraped=(T0, self.now))]
        self.assertEqual(1, source.poll(sink))
        self.assertEqual(T0 + 11 * P + PHASE, got[-1].timestamp[0])
        self.assertEqual([(UUID, 'vda')], list(source._delivered))
        self.now += 4 * P     # gone for longer than the window: forgotten
        source._session.disks = []
        source.poll(sink)
        self.assertEqual({}, source._delivered)

    def test_url_required(self):
        self.flags(group='prometheus_source', url=None)
        self.assertRaises(ValueError, prometheus.PrometheusSource, self.conf)

    def test_session_from_options(self):
        self.flags(group='prometheus_source', username='iotguard',
                   password='secret', cafile='/etc/ssl/prom-ca.pem')
        session = prometheus.PrometheusSource(self.conf)._session
        self.assertEqual(('iotguard', 'secret'), session.auth)
        self.assertEqual('/etc/ssl/prom-ca.pem', session.verify)
        self.flags(group='prometheus_source', insecure=True, username=None)
        session = prometheus.PrometheusSource(self.conf)._session
        self.assertIs(False, session.verify)
        self.assertIsNone(session.auth)

    def test_selector(self):
        self.assertEqual('m{}[901s]', prometheus.selector('m', '', 900.5))
        self.assertEqual(
            'ceilometer_disk_device_read_bytes{a="b"}[900s]',
            urllib.parse.unquote(prometheus.selector(
                'ceilometer_disk_device_read_bytes', 'a="b"', 900)))


class ServiceWiringTest(base.TestCase):
    """The controller reads Prometheus every query_interval when enabled."""

    def setUp(self):
        super().setUp()
        self.svc = service.ControllerService(self.conf,
                                             db=fakes.real_db(self))

    def test_off_by_default(self):
        self.svc._start_sources()
        self.assertIsNone(self.svc.prometheus)
        self.svc._poll_prometheus(T0)   # no-op

    def test_polled_every_query_interval_failures_survived(self):
        self.flags(group='prometheus_source', enabled=True,
                   url='http://prom:9090', query_interval=30)
        self.svc._start_sources()
        self.assertIsInstance(self.svc.prometheus,
                              prometheus.PrometheusSource)
        self.svc.manager = mock.Mock()
        self.svc.prometheus = mock.Mock()
        poll = self.svc.prometheus.poll
        self.svc._poll_prometheus(T0)
        self.svc._poll_prometheus(T0 + 29)
        poll.side_effect = RuntimeError('prometheus down')
        self.svc._poll_prometheus(T0 + 30)
        poll.side_effect = None
        self.svc._poll_prometheus(T0 + 45)
        self.svc._poll_prometheus(T0 + 60)
        self.assertEqual([mock.call(self.svc.manager.add_batch)] * 3,
                         poll.call_args_list)
