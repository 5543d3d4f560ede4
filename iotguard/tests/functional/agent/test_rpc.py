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

"""The whole agent over real RabbitMQ, on libvirt's ``test:///default``.

A test controller endpoint (topic ``iotguard-controller``) receives the
agent's ``report_samples`` cast and ``agent_heartbeat`` fanout cast, and the
controller's client (:class:`iotguard.wire.rpcapi.AgentAPI`) casts
``apply_caps``/``release_caps`` and calls ``get_state``. Each test uses its
own exchange (``control_exchange``) and host name, so concurrent runs do not
see each other. The broker URL defaults to the RabbitMQ that
tools/test-setup.sh starts; ``IOTGUARD_TEST_RABBIT_URL`` overrides it.
"""

import math
import threading
import time
import uuid

import oslo_messaging
import testtools

from iotguard.agent import service as agent_service
from iotguard.agent.virt import libvirt as lv
from iotguard.tests import base as test_base
from iotguard.tests.fixtures import rabbit
from iotguard.tests.functional.agent import test_libvirt_driver as tld
from iotguard.wire import batch as batch_mod
from iotguard.wire import rpc
from iotguard.wire import rpcapi

try:
    import libvirt
except ImportError:
    libvirt = None


def disks_of(batch):
    """The disks of a decoded batch, a dict each (rates: None for none)."""
    return [dict(instance_uuid=batch.instance_uuid[i], dev=batch.dev[i],
                 gap=batch.gap[i], static_iops=batch.static[0, i],
                 static_bytes_sec=batch.static[1, i],
                 **{name: None if math.isnan(row[i]) else row[i]
                    for name, row in zip(batch_mod.RATES, batch.rates)})
            for i in range(len(batch))]


class ControllerEndpoint:
    """What iotguard-controller serves, recording what it gets.

    Each batch is checked as the controller checks it
    (:func:`iotguard.wire.batch.decode`) and kept as a dict per disk.
    """

    target = oslo_messaging.Target(version=rpcapi.CONTROLLER_RPC_API_VERSION)

    def __init__(self):
        self.batches = []
        self.heartbeats = []
        self.arrived = threading.Condition()

    def report_samples(self, ctxt, host, samples):
        disks = disks_of(batch_mod.decode(samples))
        with self.arrived:
            self.batches.append((host, {'disks': disks}))
            self.arrived.notify_all()

    def agent_heartbeat(self, ctxt, host, info):
        with self.arrived:
            self.heartbeats.append((host, info))
            self.arrived.notify_all()

    def wait_for(self, predicate, timeout=15.0):
        deadline = time.monotonic() + timeout
        with self.arrived:
            while True:
                found = predicate()
                if found:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.arrived.wait(left)


@testtools.skipIf(libvirt is None, 'libvirt-python is not installed')
class AgentOverRabbitTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        run = rabbit.run_id(self)
        self.host = 'compute-' + run
        self.flags(host=self.host)
        self.flags(sample_interval=0.5, libvirt_uri=tld.URI, state_file='',
                   group='agent')
        self.transport = rpc.get_transport(self.conf, url=rabbit.URL)
        self.conf.set_override('control_exchange', 'iotguard-ft-' + run)
        self.addCleanup(self.transport.cleanup)

        self.keeper = libvirt.open(tld.URI)
        self.addCleanup(self.keeper.close)
        self.uuid = str(uuid.uuid4())
        self.dom = self.keeper.defineXML(tld.DOMAIN_XML % {
            'name': 'rpc-' + run, 'uuid': self.uuid})
        self.dom.create()
        self.addCleanup(self.dom.undefine)
        self.addCleanup(self.dom.destroy)

        self.controller = ControllerEndpoint()
        server = rpc.get_server(self.transport, rpc.TOPIC_CONTROLLER,
                                'controller-' + run, [self.controller])
        server.start()
        self.addCleanup(server.wait)
        self.addCleanup(server.stop)

        self.agent = agent_service.AgentService(
            self.conf, driver=lv.LibvirtDriver(self.conf),
            transport=self.transport)
        self.agent.start()
        self.addCleanup(self.agent.stop)
        self.api = rpcapi.AgentAPI(self.transport, timeout=15)

    def my_disk(self, dev='vda'):
        def find():
            for host, batch in reversed(self.controller.batches):
                for disk in batch['disks']:
                    if (host == self.host and
                            disk['instance_uuid'] == self.uuid and
                            disk['dev'] == dev):
                        return disk
        return find

    def test_samples_and_heartbeat_arrive(self):
        def with_rates():
            disk = self.my_disk()()
            return disk if disk and disk['gap'] is None else None
        disk = self.controller.wait_for(with_rates)
        self.assertIsNotNone(disk, 'no report_samples with rates arrived')
        self.assertGreater(disk['read_iops'], 0)
        # the static ceilings: total IOPS and bytes/s of the domain's iotune
        self.assertEqual((1000, 10485760),
                         (disk['static_iops'], disk['static_bytes_sec']))
        beat = self.controller.wait_for(
            lambda: [i for h, i in self.controller.heartbeats
                     if h == self.host])
        self.assertEqual('LibvirtDriver', beat[-1]['driver'])

    def test_apply_caps_cast_shows_in_libvirt_and_state(self):
        lease = time.time() + 60
        bad = {'instance_uuid': self.uuid, 'dev': 'vda',
               'limits': {'total_iops_sec': -5},
               'lease_expires_at': lease, 'decision_id': 'bad'}
        good = {'instance_uuid': self.uuid, 'dev': 'vda',
                'limits': {'total_iops_sec': 250},
                'lease_expires_at': lease, 'decision_id': 'dec-1'}
        self.api.apply_caps({}, self.host, [bad, good])

        def vda_state():
            state = self.api.get_state({}, self.host)
            return [d for d in state['disks']
                    if d['instance_uuid'] == self.uuid
                    and d['dev'] == 'vda'][0]
        # get_state is a call: it is served after the apply cast
        vda = vda_state()
        self.assertEqual({'total_iops_sec': 250}, vda['cap'])
        self.assertEqual('dec-1', vda['decision_id'])
        tune = self.dom.blockIoTune('vda', libvirt.VIR_DOMAIN_AFFECT_LIVE)
        self.assertEqual(250, tune['total_iops_sec'])
        # the samples go on with the disk's own static ceiling
        disk = self.controller.wait_for(self.my_disk())
        self.assertEqual(1000, disk['static_iops'])

        self.api.release_caps({}, self.host, [{'instance_uuid': self.uuid,
                                               'dev': 'vda'}])
        # get_state is a call: it is served after the release cast.
        self.assertIsNone(vda_state()['cap'])
        tune = self.dom.blockIoTune('vda', libvirt.VIR_DOMAIN_AFFECT_LIVE)
        self.assertEqual(1000, tune['total_iops_sec'])

    def test_a_lifted_cap_replaces_the_static_limit_until_its_lease(self):
        # a burst: 3000 IOPS above the domain's static 1000, for 8 s (a
        # loaded machine serves the casts within it)
        lifted = {'instance_uuid': self.uuid, 'dev': 'vda',
                  'limits': {'total_iops_sec': 3000},
                  'lease_expires_at': time.time() + 8, 'decision_id': 'b-1',
                  'lift': True}
        self.api.apply_caps({}, self.host, [lifted])
        self.api.get_state({}, self.host)   # served after the cast

        def iops():
            return self.dom.blockIoTune(
                'vda', libvirt.VIR_DOMAIN_AFFECT_LIVE)['total_iops_sec']
        self.assertEqual(3000, iops())
        # the same cap without lift stays under the static limit
        self.api.apply_caps({}, self.host, [dict(
            lifted, lift=False, lease_expires_at=time.time() + 60)])
        self.api.get_state({}, self.host)
        self.assertEqual(1000, iops())
        self.api.apply_caps({}, self.host, [dict(
            lifted, lease_expires_at=time.time() + 8)])
        self.api.get_state({}, self.host)
        self.assertEqual(3000, iops())
        # lapsed: the static limit is back (fail safe)
        self.assertEqual(1000, self.controller.wait_for(
            lambda: iops() == 1000 and 1000, timeout=40))
