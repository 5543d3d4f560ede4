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

"""The Ceilometer source over real RabbitMQ.

Samples are published exactly as Ceilometer's ``notifier://`` publisher
does: an oslo.messaging ``Notifier`` with the ``messagingv2`` driver,
publisher id ``telemetry.publisher.<host>``, priority ``sample``, the
topic as event type, a list of meter dicts as payload. Each test uses its
own exchange, topic and pool, auto-deleted. The broker URL defaults to
the RabbitMQ that tools/test-setup.sh starts; ``IOTGUARD_TEST_RABBIT_URL``
overrides it.
"""

import datetime
import threading
import time

from oslo_config import cfg
import oslo_messaging

from iotguard.controller import samples as sample_store
from iotguard.controller.sources import ceilometer
from iotguard.tests import base as test_base
from iotguard.tests.fixtures import rabbit
from iotguard.tests.unit.controller.sources import test_ceilometer as unit


class Collector:
    """A sink that records samples (a dict per disk) and lets a test wait."""

    def __init__(self, inner=None):
        self.samples = []
        self.inner = inner
        self.arrived = threading.Condition()

    def __call__(self, batch):
        stored = self.inner(batch) if self.inner else len(batch)
        with self.arrived:
            self.samples.extend(unit.disks_of(batch))
            self.arrived.notify_all()
        return stored

    def wait_for(self, count, timeout=15.0):
        deadline = time.monotonic() + timeout
        with self.arrived:
            while len(self.samples) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.arrived.wait(left)
            return list(self.samples)


class RabbitTestCase(test_base.TestCase):
    """A notification transport on the real broker, auto-deleted queues."""

    def setUp(self):
        super().setUp()
        self.run_id = rabbit.run_id(self)
        # Its own exchange, and queues and exchange that go away with it.
        # The exchange is read when the transport is made, and the option
        # registered by the first one made.
        oslo_messaging.get_notification_transport(
            self.conf, url=rabbit.URL).cleanup()
        self.conf.set_override('control_exchange', 'iotguard-ft-' +
                               self.run_id)
        self.conf.set_override('amqp_auto_delete', True,
                               group='oslo_messaging_rabbit')
        self.transport = oslo_messaging.get_notification_transport(
            self.conf, url=rabbit.URL)
        self.addCleanup(self.transport.cleanup)

    def start(self, listener):
        listener.start()
        self.addCleanup(listener.wait)
        self.addCleanup(listener.stop)

    def notifier(self, service, publisher_id, topics):
        """A Notifier as another service sends: on its own exchange.

        Each OpenStack service publishes on its ``control_exchange``
        (``nova``, ``cinder``, ``ceilometer``); here ``<service>-ft-<run>``.
        """
        conf = cfg.ConfigOpts()
        conf([])
        oslo_messaging.get_notification_transport(
            conf, url=rabbit.URL).cleanup()
        conf.set_override('control_exchange',
                          '%s-ft-%s' % (service, self.run_id))
        conf.set_override('amqp_auto_delete', True,
                          group='oslo_messaging_rabbit')
        transport = oslo_messaging.get_notification_transport(
            conf, url=rabbit.URL)
        self.addCleanup(transport.cleanup)
        return oslo_messaging.Notifier(transport, publisher_id=publisher_id,
                                       driver='messagingv2', topics=topics)


class CeilometerOverRabbitTest(RabbitTestCase):

    def setUp(self):
        super().setUp()
        self.topic = 'metering-ft-' + self.run_id
        self.flags(group='ceilometer', enabled=True, topic=self.topic,
                   polling_interval=unit.POLL_S)
        self.flags(host='ctl-' + self.run_id)
        self.flags(group='ceilometer', exchange='ceilometer-ft-' + self.run_id)
        self.ceilometer = self.notifier(
            'ceilometer', 'telemetry.publisher.compute-1', [self.topic])

    def publish(self, meters):
        # What ceilometer.publisher.messaging.NotifierPublisher._send does.
        self.ceilometer.sample({}, event_type=self.topic, payload=meters)

    def test_meters_become_rates(self):
        got = Collector()
        self.start(ceilometer.get_listener(self.conf, self.transport, got))
        self.publish(unit.poll(0, 100, 4096, 10, 8192, rd_ns=0, wr_ns=0))
        # A poll may come in several notifications, a malformed one among
        # them; the listener must survive it and go on.
        second = unit.poll(300, 100 + 6000, 4096 + 6000 * 4096,
                           10 + 1500, 8192 + 1500 * 65536,
                           rd_ns=6000 * 1_500_000, wr_ns=1500 * 4_000_000)
        self.publish(second[:3])
        self.publish({'garbage': True})
        self.publish([{'counter_name': 'disk.device.read.bytes',
                       'counter_volume': 'NaN-ish'}])
        self.publish(second[3:])
        samples = got.wait_for(2)
        self.assertEqual(2, len(samples), samples)
        first, rates = samples
        self.assertEqual('first', first['gap'])
        self.assertIsNone(rates['gap'])
        self.assertEqual((unit.UUID, 'vda'),
                         (rates['instance_uuid'], rates['dev']))
        self.assertEqual(20.0, rates['read_iops'])
        self.assertEqual(5.0, rates['write_iops'])
        self.assertEqual(20 * 4096, rates['read_bytes_sec'])
        self.assertEqual(5 * 65536, rates['write_bytes_sec'])
        self.assertEqual(1.5, rates['read_latency_ms'])
        self.assertEqual(4.0, rates['write_latency_ms'])

    def test_into_the_real_sample_store(self):
        now = (unit.T0 + datetime.timedelta(seconds=302)).replace(
            tzinfo=datetime.timezone.utc).timestamp()
        store = sample_store.SampleStore(5.0, clock=lambda: now)
        got = Collector(store.add_batch)
        self.start(ceilometer.get_listener(self.conf, self.transport, got))
        self.publish(unit.poll(0, 0, 0, 0, 0))
        self.publish(unit.poll(300, 600, 0, 0, 0))
        self.assertEqual(2, len(got.wait_for(2)))
        self.assertEqual(2.0, store.latest(unit.UUID, 'vda')['read_iops'])

    def test_every_pool_gets_every_sample(self):
        # Two controllers (default pools, one per host) both see a disk.
        a, b = Collector(), Collector()
        self.start(ceilometer.get_listener(self.conf, self.transport, a))
        self.flags(host='other-' + self.run_id)
        self.start(ceilometer.get_listener(self.conf, self.transport, b))
        self.publish(unit.poll(0, 0, 0, 0, 0))
        self.publish(unit.poll(300, 300, 0, 0, 0))
        for got in (a, b):
            self.assertEqual([None, 1.0],
                             [s['read_iops'] for s in got.wait_for(2)])
