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

import math

import fixtures
import numpy as np
import testtools

from iotguard.agent.virt import histogram
from iotguard.agent.virt import libvirt as lv
from iotguard.tests import base as test_base
from iotguard.wire import caps

UUID = '6f1e2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b'

NOVA_XML = """<domain type='kvm'>
  <name>instance-00000001</name>
  <uuid>%s</uuid>
  <metadata>
    <nova:instance xmlns:nova="http://openstack.org/xmlns/libvirt/nova/1.1">
      <nova:owner>
        <nova:user uuid="u-1">alice</nova:user>
        <nova:project uuid="8a8b8c8d8e8f40418283848586878889">d</nova:project>
      </nova:owner>
    </nova:instance>
  </metadata>
  <devices>
    <disk type='file' device='disk'>
      <source file='/var/lib/nova/instances/x/disk'/>
      <target dev='vda' bus='virtio'/>
      <iotune>
        <total_bytes_sec>10485760</total_bytes_sec>
        <total_iops_sec>500</total_iops_sec>
        <total_iops_sec_max>800</total_iops_sec_max>
        <size_iops_sec>4096</size_iops_sec>
      </iotune>
    </disk>
    <disk type='network' device='disk'>
      <source protocol='rbd' name='volumes/volume-1'/>
      <target dev='vdb' bus='virtio'/>
      <serial>3c2b1a00-1111-4222-8333-444455556666</serial>
    </disk>
    <disk type='file' device='cdrom'>
      <target dev='hda' bus='ide'/>
    </disk>
  </devices>
</domain>""" % UUID


class ParseDomainXmlTest(testtools.TestCase):

    def test_nova_domain(self):
        disks = lv.parse_domain_xml(UUID, NOVA_XML)
        self.assertEqual({'vda', 'vdb'}, set(disks))
        vda, vdb = disks['vda'], disks['vdb']
        self.assertEqual((UUID, 'vda'), vda.key)
        self.assertEqual('8a8b8c8d8e8f40418283848586878889', vda.project_id)
        self.assertIsNone(vda.volume_id)
        self.assertEqual(caps.full({'total_bytes_sec': 10485760,
                                    'total_iops_sec': 500,
                                    'total_iops_sec_max': 800}),
                         vda.static)
        self.assertEqual('3c2b1a00-1111-4222-8333-444455556666',
                         vdb.volume_id)
        self.assertEqual(caps.full({}), vdb.static)

    def test_no_metadata(self):
        xml = ("<domain><devices><disk device='disk'><target dev='sda'/>"
               "</disk></devices></domain>")
        sda = lv.parse_domain_xml(UUID, xml)['sda']
        self.assertIsNone(sda.project_id)


class ParseBulkStatsTest(testtools.TestCase):

    def test_block_records(self):
        stats = {'block.count': 2,
                 'block.0.name': 'vda', 'block.0.rd.reqs': 1,
                 'block.0.rd.bytes': 2, 'block.0.rd.times': 3,
                 'block.0.wr.reqs': 4, 'block.0.wr.bytes': 5,
                 'block.0.wr.times': 6, 'block.0.fl.reqs': 7,
                 'block.0.fl.times': 8, 'block.0.capacity': 9,
                 'block.1.name': 'vdb', 'block.1.wr.reqs': 11}
        out = lv.parse_bulk_block_stats(stats)
        # in the order of rates.COUNTER_KEYS; missing counters are 0
        self.assertEqual((1, 2, 3, 4, 5, 6, 7), out['vda'])
        self.assertEqual((0, 0, 0, 11, 0, 0, 0), out['vdb'])

    def test_empty_record(self):
        # What the test:///default driver returns.
        self.assertEqual({}, lv.parse_bulk_block_stats({}))


LIVE_XML = """<domain type='kvm'>
  <uuid>%s</uuid>
  <devices>
    <disk type='file' device='disk'>
      <target dev='vda' bus='virtio'/>
      <alias name='virtio-disk0'/>
    </disk>
    <disk type='file' device='disk'>
      <target dev='sda' bus='scsi'/>
      <alias name='scsi0-0-0-0'/>
    </disk>
    <disk type='file' device='disk'>
      <target dev='vdb' bus='virtio'/>
      <alias name='virtio-disk1'/>
    </disk>
  </devices>
</domain>""" % UUID


class FakeDomain:
    """A running transient domain: its live XML and bulk statistics."""

    def UUIDString(self):
        return UUID

    def ID(self):
        return 7

    def isPersistent(self):
        return False

    def XMLDesc(self, flags):
        return LIVE_XML


class FakeConn:
    def __init__(self, dom):
        self.dom = dom

    def getAllDomainStats(self, stats, flags):
        return [(self.dom, {})]


@testtools.skipIf(lv.libvirt is None, 'libvirt-python is not installed')
class LatencyHistogramsTest(test_base.TestCase):
    """``[agent] latency_histograms``: set once, read every pass."""

    def setUp(self):
        super().setUp()
        self.flags(latency_histograms=True, group='agent')
        self.driver = lv.LibvirtDriver(self.conf, uri='test:///default')
        self.driver._conn = FakeConn(FakeDomain())
        self.set, self.bins = [], {}
        self.useFixture(fixtures.MockPatch(
            'iotguard.agent.virt.histogram.set_bounds',
            lambda dom, alias: self.set.append(alias)))
        self.useFixture(fixtures.MockPatch(
            'iotguard.agent.virt.histogram.read',
            lambda dom: dict(self.bins)))
        self.useFixture(fixtures.MockPatch(
            'iotguard.agent.virt.libvirt._block_stats',
            lambda dom, dev: (0,) * 7))

    def p99(self, **bins):
        self.bins = {alias: np.array(counts) for alias, counts in
                     bins.items()}
        got = self.driver.get_block_stats()
        return dict(zip([dev for _uuid, dev in got.keys],
                        got.p99_ms.tolist()))

    def test_virtio_disks_only_each_pass_its_interval(self):
        bounds = len(histogram.BOUNDS_MS) + 1
        first = [100] + [0] * (bounds - 1)
        got = self.p99(**{'virtio-disk0': first})
        self.assertEqual(['virtio-disk0', 'virtio-disk1'], self.set)
        self.assertTrue(all(math.isnan(v) for v in got.values()), got)
        # 100 more operations of vda in (1, 2] ms; vdb has no bins
        second = [100, 100] + [0] * (bounds - 2)
        got = self.p99(**{'virtio-disk0': second})
        self.assertAlmostEqual(1.99, got['vda'])
        self.assertTrue(math.isnan(got['sda']))
        self.assertTrue(math.isnan(got['vdb']))
        # set once per domain id, not every pass
        self.assertEqual(['virtio-disk0', 'virtio-disk1'], self.set)
        # a reset (the domain restarted, same id here): no value, then on
        got = self.p99(**{'virtio-disk0': first})
        self.assertTrue(math.isnan(got['vda']))
        # forgotten (an event): set again, its last reading dropped
        self.driver.forget(UUID)
        got = self.p99(**{'virtio-disk0': second})
        self.assertEqual(['virtio-disk0', 'virtio-disk1'] * 2, self.set)
        self.assertTrue(math.isnan(got['vda']))

    def test_off_by_default(self):
        self.flags(latency_histograms=False, group='agent')
        driver = lv.LibvirtDriver(self.conf, uri='test:///default')
        driver._conn = FakeConn(FakeDomain())
        self.assertIsNone(driver.get_block_stats().p99_ms)
        self.assertEqual([], self.set)

    def test_buses_and_aliases_from_the_live_xml(self):
        self.assertEqual({'vda': ('virtio', 'virtio-disk0'),
                          'sda': ('scsi', 'scsi0-0-0-0'),
                          'vdb': ('virtio', 'virtio-disk1')},
                         lv.parse_disk_buses(LIVE_XML))
