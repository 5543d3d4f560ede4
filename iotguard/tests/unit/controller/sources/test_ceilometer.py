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

import oslo_messaging

from iotguard.controller import membership
from iotguard.controller import samples as sample_store
from iotguard.controller import sources
from iotguard.controller.sources import ceilometer
from iotguard.tests import base
from iotguard.wire import batch as batch_mod
from iotguard.wire import rpc

UUID = '8f2b9c1e-3d4a-4b5c-9e6f-7a8b9c0d1e2f'
T0 = datetime.datetime(2026, 11, 22, 3, 0, 0)
POLL_S = 300.0


def meter(name, volume, seconds, uuid=UUID, dev='vda', **extra):
    """A meter dict as Ceilometer's publisher sends it (naive UTC time)."""
    m = {'source': 'openstack', 'counter_name': name,
         'counter_type': 'cumulative',
         'counter_unit': 'ns' if name.endswith('latency') else
         ('B' if name.endswith('bytes') else 'request'),
         'counter_volume': volume, 'user_id': 'u', 'project_id': 'p1',
         'resource_id': '%s-%s' % (uuid, dev),
         'timestamp': (T0 + datetime.timedelta(seconds=seconds)).isoformat(),
         'resource_metadata': {'instance_id': uuid, 'disk_name': dev,
                               'host': 'compute-1'},
         'message_id': 'x', 'monotonic_time': None,
         'message_signature': ''}
    m.update(extra)
    return m


def flat(row):
    """A :class:`~iotguard.wire.batch.Row` as one dict, every rate."""
    out = row._asdict()
    out.update({name: (row.rates or {}).get(name)
                for name in batch_mod.RATES})
    return out


def disks_of(batch):
    """The disks of a :class:`iotguard.wire.batch.Batch`, a dict each."""
    return [dict(instance_uuid=batch.instance_uuid[i], dev=batch.dev[i],
                 gap=batch.gap[i], timestamp=batch.timestamp[i],
                 **{name: None if row[i] != row[i] else row[i]
                    for name, row in zip(batch_mod.RATES, batch.rates)})
            for i in range(len(batch))]


def poll(seconds, rd_reqs, rd_bytes, wr_reqs, wr_bytes, rd_ns=None,
         wr_ns=None, **kw):
    meters = [meter('disk.device.read.requests', rd_reqs, seconds, **kw),
              meter('disk.device.read.bytes', rd_bytes, seconds, **kw),
              meter('disk.device.write.requests', wr_reqs, seconds, **kw),
              meter('disk.device.write.bytes', wr_bytes, seconds, **kw)]
    if rd_ns is not None:
        meters += [meter('disk.device.read.latency', rd_ns, seconds, **kw),
                   meter('disk.device.write.latency', wr_ns, seconds, **kw)]
    return meters


class TestAssembler(base.TestCase):

    def setUp(self):
        super().setUp()
        self.assembler = ceilometer.Assembler(POLL_S)

    def feed(self, meters):
        out, errors = self.assembler.add(meters)
        self.assertEqual([], errors)
        # every row passes the one check of a sample
        self.assertEqual(len(out), len(sources.checked(out)))
        return [flat(row) for row in out]

    def test_two_polls_give_rates(self):
        first = self.feed(poll(0, 100, 409600, 50, 204800))
        self.assertEqual(1, len(first))
        self.assertEqual('first', first[0]['gap'])
        self.assertIsNone(first[0]['read_iops'])
        [s] = self.feed(poll(300, 100 + 3000, 409600 + 3000 * 4096,
                             50 + 600, 204800 + 600 * 65536))
        self.assertIsNone(s['gap'])
        self.assertEqual((UUID, 'vda'), (s['instance_uuid'], s['dev']))
        self.assertEqual(10.0, s['read_iops'])
        self.assertEqual(2.0, s['write_iops'])
        self.assertEqual(10 * 4096, s['read_bytes_sec'])
        self.assertEqual(2 * 65536, s['write_bytes_sec'])
        self.assertEqual(300.0, s['interval_s'])
        self.assertEqual((T0 + datetime.timedelta(seconds=300)).replace(
            tzinfo=datetime.timezone.utc).timestamp(), s['timestamp'])
        self.assertEqual('p1', s['project_id'])
        self.assertIsNone(s['read_latency_ms'])
        self.assertNotIn('flush_ops', s)

    def test_latency_ns_per_op_to_ms(self):
        self.feed(poll(0, 0, 0, 0, 0, rd_ns=0, wr_ns=0))
        [s] = self.feed(poll(300, 3000, 1, 600, 1, rd_ns=3000 * 2_000_000,
                             wr_ns=600 * 5_000_000))
        self.assertEqual(2.0, s['read_latency_ms'])
        self.assertEqual(5.0, s['write_latency_ms'])

    def test_waits_for_latency_once_seen(self):
        self.feed(poll(0, 0, 0, 0, 0, rd_ns=0, wr_ns=0))
        self.feed(poll(300, 0, 0, 0, 0, rd_ns=0, wr_ns=0))
        meters = poll(600, 30, 30, 30, 30, rd_ns=30, wr_ns=30)
        # The four counters alone do not complete a disk that has latency.
        self.assertEqual([], self.feed(meters[:4]))
        self.assertEqual([], self.feed(meters[4:5]))
        self.assertEqual(1, len(self.feed(meters[5:])))

    def test_latency_not_in_both_readings_is_unknown(self):
        self.feed(poll(0, 0, 0, 0, 0))
        [s] = self.feed(poll(300, 30, 30, 30, 30, rd_ns=10 ** 12,
                             wr_ns=10 ** 12))
        self.assertIsNone(s['read_latency_ms'])
        self.assertEqual(0.1, s['read_iops'])

    def test_meters_in_any_order_and_notifications(self):
        self.feed(poll(0, 0, 0, 0, 0))
        meters = list(reversed(poll(300, 300, 0, 0, 0)))
        out = self.feed(meters[:2]) + self.feed(meters[2:])
        self.assertEqual([1.0], [s['read_iops'] for s in out])

    def test_counter_reset_is_a_gap_then_new_series(self):
        self.feed(poll(0, 1000, 1000, 1000, 1000))
        [reset] = self.feed(poll(300, 10, 10, 10, 10))
        self.assertEqual('reset', reset['gap'])
        self.assertIsNone(reset['read_iops'])
        [s] = self.feed(poll(600, 310, 10, 10, 10))
        self.assertEqual(1.0, s['read_iops'])

    def test_long_hole_is_a_gap(self):
        self.feed(poll(0, 0, 0, 0, 0))
        [s] = self.feed(poll(4 * POLL_S, 10, 10, 10, 10))
        self.assertEqual('too_long', s['gap'])

    def test_incomplete_poll_is_dropped_not_a_reset(self):
        self.feed(poll(0, 100, 100, 100, 100))
        # Only the read requests of the second poll arrive.
        self.assertEqual([], self.feed(poll(300, 400, 400, 400, 400)[:1]))
        [s] = self.feed(poll(600, 700, 700, 700, 700))
        self.assertIsNone(s['gap'])
        self.assertEqual(1.0, s['read_iops'])
        self.assertEqual(600.0, s['interval_s'])

    def test_disks_are_separate(self):
        other = '11111111-2222-4333-8444-555555555555'
        self.feed(poll(0, 0, 0, 0, 0) + poll(0, 0, 0, 0, 0, dev='vdb') +
                  poll(0, 0, 0, 0, 0, uuid=other))
        out = self.feed(poll(300, 300, 0, 0, 0) +
                        poll(300, 600, 0, 0, 0, dev='vdb') +
                        poll(300, 900, 0, 0, 0, uuid=other))
        self.assertEqual({(UUID, 'vda'): 1.0, (UUID, 'vdb'): 2.0,
                          (other, 'vda'): 3.0},
                         {(s['instance_uuid'], s['dev']): s['read_iops']
                          for s in out})

    def test_disk_from_resource_id_without_metadata(self):
        meters = poll(0, 0, 0, 0, 0, resource_metadata={})
        [s] = self.feed(meters)
        self.assertEqual((UUID, 'vda'), (s['instance_uuid'], s['dev']))

    def test_other_meters_are_ignored(self):
        self.assertEqual([], self.feed([meter('cpu', 5, 0),
                                        meter('disk.read.bytes', 5, 0)]))

    def test_malformed_meters_raise_invalid(self):
        bad = [meter('disk.device.read.bytes', 'many', 0),
               meter('disk.device.read.bytes', -1, 0),
               meter('disk.device.read.bytes', True, 0),
               meter('disk.device.read.bytes', 1, 0, timestamp='yesterday'),
               meter('disk.device.read.bytes', 1, 0, timestamp=None),
               meter('disk.device.read.bytes', 1, 0, resource_id='vm-vda',
                     resource_metadata=None),
               'not a dict']
        samples, errors = self.assembler.add(bad)
        self.assertEqual([], samples)
        self.assertEqual(len(bad), len(errors))
        for m in bad:
            self.assertRaises(ceilometer.exception.Invalid,
                              self.assembler.parse, m)

    def test_forget_older_than(self):
        self.feed(poll(0, 0, 0, 0, 0))
        self.feed(poll(0, 0, 0, 0, 0, dev='vdb')[:1])
        t = (T0 + datetime.timedelta(seconds=1)).replace(
            tzinfo=datetime.timezone.utc).timestamp()
        self.assertEqual(2, self.assembler.forget_older_than(t))
        # Forgotten: the next poll is a first reading again.
        [s] = self.feed(poll(300, 300, 0, 0, 0))
        self.assertEqual('first', s['gap'])


class TestEndpoint(base.TestCase):

    def setUp(self):
        super().setUp()
        self.got = []
        self.endpoint = ceilometer.Endpoint(self.sink, POLL_S,
                                            clock=lambda: 0.0)

    def sink(self, batch):
        self.got.extend(disks_of(batch))
        return len(batch)

    def notify(self, payload):
        return self.endpoint.sample({}, 'telemetry.publisher.c1',
                                    'metering', payload, {})

    def test_handled_and_delivered(self):
        self.assertEqual(oslo_messaging.NotificationResult.HANDLED,
                         self.notify(poll(0, 0, 0, 0, 0)))
        self.notify(poll(300, 300, 0, 0, 0))
        self.assertEqual([None, 1.0], [s['read_iops'] for s in self.got])

    def test_malformed_are_dropped_and_handled(self):
        for payload in ({'not': 'a list'}, None, 'x',
                        [None, {'counter_name': 'disk.device.read.bytes'}]):
            self.assertEqual(oslo_messaging.NotificationResult.HANDLED,
                             self.notify(payload))
        self.assertEqual([], self.got)

    def test_good_meters_survive_bad_neighbours(self):
        meters = poll(0, 0, 0, 0, 0)
        meters.insert(2, meter('disk.device.read.bytes', 'x', 0))
        self.notify(meters)
        self.assertEqual(1, len(self.got))

    def test_failing_sink_does_not_raise(self):
        def sink(sample):
            raise RuntimeError('store down')
        endpoint = ceilometer.Endpoint(sink, POLL_S)
        self.assertEqual(
            oslo_messaging.NotificationResult.HANDLED,
            endpoint.sample({}, 'p', 'metering', poll(0, 0, 0, 0, 0), {}))

    def test_real_store_accepts_the_samples(self):
        now = (T0 + datetime.timedelta(seconds=301)).replace(
            tzinfo=datetime.timezone.utc).timestamp()
        store = sample_store.SampleStore(5.0, clock=lambda: now)
        endpoint = ceilometer.Endpoint(store.add_batch, POLL_S,
                                       clock=lambda: now)
        endpoint.sample({}, 'p', 'metering', poll(0, 0, 0, 0, 0), {})
        endpoint.sample({}, 'p', 'metering', poll(300, 300, 0, 0, 0), {})
        latest = store.latest(UUID, 'vda')
        self.assertIsNotNone(latest)
        self.assertEqual(1.0, latest['read_iops'])


class TestPool(base.TestCase):

    def test_default_pool_is_per_controller(self):
        self.flags(host='ctl-1')
        self.assertEqual('iotguard-ceilometer.ctl-1',
                         ceilometer.pool_name(self.conf))
        # Never the controller's RPC queue (topic.host), nor membership's.
        self.assertNotIn(ceilometer.pool_name(self.conf), (
            rpc.TOPIC_CONTROLLER + '.ctl-1', membership.pool_name(self.conf)))
        self.flags(group='ceilometer', pool='shared')
        self.assertEqual('shared', ceilometer.pool_name(self.conf))
