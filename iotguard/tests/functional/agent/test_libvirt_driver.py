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

"""The agent on real libvirt-python against the ``test:///default`` driver.

The test driver keeps its state per process while a connection is open; it
counts block statistics up with the wall clock (synthetic, but real
counters through the real API), returns empty ``getAllDomainStats``
records (so the ``blockStats`` fallback is what runs here), and checks
``*_max`` against every value it is given.
"""

import time
from unittest import mock
import uuid

import fixtures
import testtools

from iotguard.agent import manager as manager_mod
from iotguard.agent.virt import base
from iotguard.agent.virt import libvirt as lv
from iotguard.tests import base as test_base
from iotguard.wire import caps
from iotguard.wire import rates

try:
    import libvirt
except ImportError:
    libvirt = None

DOMAIN_XML = """<domain type='test'>
  <name>%(name)s</name>
  <uuid>%(uuid)s</uuid>
  <memory>1024</memory>
  <metadata>
    <nova:instance xmlns:nova="http://openstack.org/xmlns/libvirt/nova/1.1">
      <nova:owner><nova:project uuid="proj-1">demo</nova:project>
      </nova:owner>
    </nova:instance>
  </metadata>
  <os><type>hvm</type></os>
  <devices>
    <disk type='file' device='disk'>
      <source file='/guest/%(name)s-a'/><target dev='vda' bus='virtio'/>
      <iotune><total_iops_sec>1000</total_iops_sec>
        <total_bytes_sec>10485760</total_bytes_sec></iotune>
    </disk>
    <disk type='file' device='disk'>
      <source file='/guest/%(name)s-b'/><target dev='vdb' bus='virtio'/>
      <serial>vol-%(name)s</serial>
    </disk>
  </devices>
</domain>"""

STATIC_VDA = {'total_iops_sec': 1000, 'total_bytes_sec': 10485760}
URI = 'test:///default'


class Clock:
    def __init__(self):
        self.now = time.time()

    def __call__(self):
        return self.now


class MemoryStore:
    def __init__(self):
        self.saved = {}

    def save(self, held):
        self.saved = dict(held)

    def load(self):
        return dict(self.saved)


@testtools.skipIf(libvirt is None,
                  'libvirt-python is not installed (pip install '
                  'libvirt-python; it builds against Debian libvirt-dev)')
class LibvirtTestDriverTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(host='compute-ft')
        self.events = []
        self.driver = lv.LibvirtDriver(self.conf, uri=URI)
        self.driver.start(
            lifecycle_callback=lambda u, e: self.events.append((u, e)))
        self.addCleanup(self.driver.stop)
        # Keep the test driver's state alive across the driver's
        # reconnections, as a daemon would.
        self.keeper = libvirt.open(URI)
        self.addCleanup(self.keeper.close)
        self.uuid = str(uuid.uuid4())
        name = 'ft-' + self.uuid[:8]
        self.dom = self.keeper.defineXML(DOMAIN_XML % {'name': name,
                                                       'uuid': self.uuid})
        self.dom.create()
        self.addCleanup(self._remove)
        self.vda = (self.uuid, 'vda')
        self.clock = Clock()
        self.mgr = manager_mod.AgentManager(self.conf, self.driver,
                                            clock=self.clock,
                                            store=MemoryStore())
        self.mgr.periodic()

    def _remove(self):
        if self.dom.isActive():
            self.dom.destroy()
        self.dom.undefine()

    def cap(self, lease_in=60.0, **limits):
        return {'instance_uuid': self.uuid, 'dev': 'vda', 'limits': limits,
                'lease_expires_at': self.clock.now + lease_in,
                'decision_id': 'd-' + uuid.uuid4().hex[:6]}

    def live(self):
        tune = self.dom.blockIoTune('vda', libvirt.VIR_DOMAIN_AFFECT_LIVE)
        return {k: tune[k] for k in ('total_iops_sec', 'total_bytes_sec',
                                     'read_iops_sec', 'write_iops_sec')}

    def test_disks_and_static_ceilings_from_domain_xml(self):
        disks = self.driver.list_disks()
        vda, vdb = disks[self.vda], disks[(self.uuid, 'vdb')]
        self.assertEqual(caps.full(STATIC_VDA), vda.static)
        self.assertEqual('proj-1', vda.project_id)
        self.assertIsNone(vda.volume_id)
        self.assertEqual('vol-' + 'ft-' + self.uuid[:8], vdb.volume_id)

    def test_stats_read_and_turned_into_rates(self):
        stats = self.driver.get_block_stats().as_dict()
        self.assertIn(self.vda, stats)
        self.assertIn((self.uuid, 'vdb'), stats)
        series = rates.Series()
        t0 = time.monotonic()
        series.update(self.vda, rates.Reading(t0, stats[self.vda]))
        time.sleep(0.2)
        stats = self.driver.get_block_stats().as_dict()
        r = series.update(self.vda, rates.Reading(time.monotonic(),
                                                  stats[self.vda]))
        self.assertIsInstance(r, rates.Rates)
        # The test driver's counters grow with the clock.
        self.assertGreater(r.read_iops, 0)
        self.assertGreater(r.write_bytes_sec, 0)

    def test_cap_applied_and_read_back_static_kept_in_xml(self):
        self.mgr.apply_caps({}, [self.cap(total_iops_sec=200)])
        self.assertEqual({'total_iops_sec': 200,
                          'total_bytes_sec': 10485760,
                          'read_iops_sec': 0, 'write_iops_sec': 0},
                         self.live())
        self.assertEqual(200, self.driver.get_iotune(*self.vda)
                         ['total_iops_sec'])
        # The persistent definition (the static ceiling) is untouched.
        self.driver.forget(self.uuid)
        self.assertEqual(caps.full(STATIC_VDA),
                         self.driver.list_disks()[self.vda].static)

    def test_cap_recognised_after_a_live_migration_left_it_persistent(self):
        self.mgr.apply_caps({}, [self.cap(lease_in=5.0,
                                          total_iops_sec=200)])
        live_xml = self.dom.XMLDesc(0)
        # The record: the static ceiling found, and what libvirt took.
        (static, applied), = lv.parse_cap_record(live_xml).values()
        self.assertEqual(caps.full(STATIC_VDA), static)
        self.assertEqual(200, applied['total_iops_sec'])
        # What Nova does on the destination of a live migration: the live
        # XML, our cap and record included, becomes the persistent domain.
        self.keeper.defineXML(live_xml)
        persistent = lv.parse_domain_xml(self.uuid, self.dom.XMLDesc(
            libvirt.VIR_DOMAIN_XML_INACTIVE))
        self.assertEqual(200, persistent['vda'].static['total_iops_sec'])
        driver = self.assertStaticWrittenBack()
        mgr = manager_mod.AgentManager(self.conf, driver, clock=self.clock,
                                       store=MemoryStore())
        mgr.recover()
        # The cap it does not hold a lease for goes back to the static
        # ceiling, and the record goes with it.
        mgr.periodic()
        self.assertEqual(1000, self.live()['total_iops_sec'])
        self.assertEqual({}, lv.parse_cap_record(self.dom.XMLDesc(0)))

    def test_cap_changed_while_migrating_recognised_too(self):
        """A cap changed after its record: the persisted one is ours too.

        The live iotune changed after the record was written (a cap set as
        the guest left), and Nova persisted the live definition.
        """
        self.mgr.apply_caps({}, [self.cap(lease_in=5.0,
                                          total_iops_sec=200)])
        self.dom.setBlockIoTune('vda', dict(self.live(),
                                            total_iops_sec=150),
                                libvirt.VIR_DOMAIN_AFFECT_LIVE)
        (_static, applied), = lv.parse_cap_record(
            self.dom.XMLDesc(0)).values()
        self.assertEqual(200, applied['total_iops_sec'])
        self.keeper.defineXML(self.dom.XMLDesc(0))
        self.assertStaticWrittenBack()

    def test_cap_changed_after_the_definition_was_persisted(self):
        """The persisted cap is ours by the record the definition carries.

        Nova persisted the live XML (cap 200 and its record); this host's
        agent then changed the cap (150, the live record with it) before
        it read the definition: the live record no longer says 200. The
        multi-host cloud's live migration met this.
        """
        self.persist_then(lambda: self.mgr.apply_caps({}, [self.cap(
            lease_in=5.0, total_iops_sec=150)]))
        (_static, applied), = lv.parse_cap_record(
            self.dom.XMLDesc(0)).values()
        self.assertEqual(150, applied['total_iops_sec'])
        self.assertStaticWrittenBack()

    def test_cap_released_after_the_definition_was_persisted(self):
        """The same with the cap released: no live record at all."""
        self.persist_then(lambda: self.mgr.release_caps({}, [{
            'instance_uuid': self.uuid, 'dev': 'vda'}]))
        self.assertEqual({}, lv.parse_cap_record(self.dom.XMLDesc(0)))
        self.assertStaticWrittenBack()

    def persist_then(self, change):
        """Cap 200 persisted as Nova does after a migration, then change."""
        self.mgr.apply_caps({}, [self.cap(lease_in=5.0,
                                          total_iops_sec=200)])
        self.keeper.defineXML(self.dom.XMLDesc(0))
        change()
        persistent = lv.parse_domain_xml(self.uuid, self.dom.XMLDesc(
            libvirt.VIR_DOMAIN_XML_INACTIVE))
        self.assertEqual(200, persistent['vda'].static['total_iops_sec'])

    def test_refused_write_back_is_tried_again(self):
        """A write-back libvirt refuses (the migration's job) is retried."""
        self.mgr.apply_caps({}, [self.cap(lease_in=5.0,
                                          total_iops_sec=200)])
        self.keeper.defineXML(self.dom.XMLDesc(0))
        real = libvirt.virDomain.setBlockIoTune
        refused = []

        def refuse_once(dom, dev, params, flags):
            if flags == libvirt.VIR_DOMAIN_AFFECT_CONFIG and not refused:
                refused.append(dev)
                raise libvirt.libvirtError('domain is being migrated')
            return real(dom, dev, params, flags)

        def persistent():
            return lv.parse_domain_xml(self.uuid, self.dom.XMLDesc(
                libvirt.VIR_DOMAIN_XML_INACTIVE))['vda'].static

        driver = lv.LibvirtDriver(self.conf, uri=URI)
        driver.start()
        self.addCleanup(driver.stop)
        with mock.patch.object(libvirt.virDomain, 'setBlockIoTune',
                               autospec=True, side_effect=refuse_once):
            self.assertEqual(caps.full(STATIC_VDA),
                             driver.list_disks()[self.vda].static)
            self.assertEqual(['vda'], refused)
            self.assertEqual(200, persistent()['total_iops_sec'])
            driver.list_disks()     # the next pass
        self.assertEqual(STATIC_VDA['total_iops_sec'],
                         persistent()['total_iops_sec'])

    def assertStaticWrittenBack(self):
        """A fresh agent on the migrated domain: the static is Nova's.

        A new driver (nothing in memory or on disk) takes the recorded
        static ceiling, not the cap the domain came with, and writes it
        back: no cap stays in the definition (the test driver wants
        bursts: the base values are what count). Returns the driver.
        """
        driver = lv.LibvirtDriver(self.conf, uri=URI)
        driver.start()
        self.addCleanup(driver.stop)
        self.assertEqual(caps.full(STATIC_VDA),
                         driver.list_disks()[self.vda].static)
        persistent = lv.parse_domain_xml(self.uuid, self.dom.XMLDesc(
            libvirt.VIR_DOMAIN_XML_INACTIVE))['vda'].static
        self.assertEqual({k: caps.full(STATIC_VDA)[k] for k in caps.BASE_KEYS},
                         {k: persistent[k] for k in caps.BASE_KEYS})
        return driver

    def test_release_drops_the_record(self):
        self.mgr.apply_caps({}, [self.cap(total_iops_sec=200)])
        self.assertIn('vda', lv.parse_cap_record(self.dom.XMLDesc(0)))
        self.mgr.release_caps({}, [{'instance_uuid': self.uuid,
                                    'dev': 'vda'}])
        self.assertEqual(1000, self.live()['total_iops_sec'])
        self.assertEqual({}, lv.parse_cap_record(self.dom.XMLDesc(0)))

    def test_cap_above_static_is_clamped(self):
        self.mgr.apply_caps({}, [self.cap(total_iops_sec=5000,
                                          total_bytes_sec=1 << 20)])
        self.assertEqual(1000, self.live()['total_iops_sec'])
        self.assertEqual(1 << 20, self.live()['total_bytes_sec'])

    def test_read_write_cap_over_total_static(self):
        self.mgr.apply_caps({}, [self.cap(read_iops_sec=100,
                                          write_iops_sec=50)])
        self.assertEqual(150, self.live()['total_iops_sec'])
        self.assertEqual(0, self.live()['read_iops_sec'])

    def test_idempotent_no_second_libvirt_call(self):
        real = libvirt.virDomain.setBlockIoTune
        with mock.patch.object(libvirt.virDomain, 'setBlockIoTune',
                               autospec=True, side_effect=real) as spy:
            self.mgr.apply_caps({}, [self.cap(total_iops_sec=200)])
            first = spy.call_count
            self.mgr.apply_caps({}, [self.cap(total_iops_sec=200,
                                              lease_in=120)])
            self.mgr.periodic()
            self.mgr.apply_caps({}, [self.cap(total_iops_sec=300)])
        self.assertEqual(200, spy.call_args_list[first - 1][0][2]
                         ['total_iops_sec'])
        # The same cap again (a renewal) made no libvirt call; a new value
        # makes exactly one (the driver knows by now that the test driver
        # wants bursts).
        self.assertEqual(first + 1, spy.call_count)
        self.assertEqual(300, self.live()['total_iops_sec'])

    def test_test_driver_gets_bursts_after_one_refusal(self):
        log = self.useFixture(fixtures.FakeLogger())
        self.driver.set_iotune(self.uuid, 'vda', {'total_iops_sec': 10})
        self.assertIn('wants *_max >= every value', log.output)
        tune = self.dom.blockIoTune('vda', libvirt.VIR_DOMAIN_AFFECT_LIVE)
        self.assertEqual((10, 10), (tune['total_iops_sec'],
                                    tune['total_iops_sec_max']))

    def test_lease_expiry_restores_static(self):
        self.mgr.apply_caps({}, [self.cap(lease_in=10, total_iops_sec=200)])
        self.assertEqual(200, self.live()['total_iops_sec'])
        self.clock.now += 10
        self.mgr.periodic()
        self.assertEqual(1000, self.live()['total_iops_sec'])
        self.assertEqual(10485760, self.live()['total_bytes_sec'])

    def test_release_restores_static(self):
        self.mgr.apply_caps({}, [self.cap(total_bytes_sec=1 << 20)])
        self.mgr.release_caps({}, [{'instance_uuid': self.uuid,
                                    'dev': 'vda'}])
        self.assertEqual(10485760, self.live()['total_bytes_sec'])

    def test_malformed_cap_refused_without_crash(self):
        log = self.useFixture(fixtures.FakeLogger())
        bad = self.cap(total_iops_sec=300, read_iops_sec=100)
        worse = {'instance_uuid': self.uuid, 'limits': 'lots'}
        good = dict(self.cap(total_iops_sec=250), dev='vdb')
        self.mgr.apply_caps({}, [bad, worse, good])
        self.assertEqual(1000, self.live()['total_iops_sec'])
        tune = self.dom.blockIoTune('vdb', libvirt.VIR_DOMAIN_AFFECT_LIVE)
        self.assertEqual(250, tune['total_iops_sec'])
        self.assertIn('Refusing malformed cap', log.output)
        # Still serving.
        self.mgr.apply_caps({}, [self.cap(total_iops_sec=300)])
        self.assertEqual(300, self.live()['total_iops_sec'])

    def test_reconnects_after_losing_the_connection(self):
        log = self.useFixture(fixtures.FakeLogger())
        self.driver._conn.close()   # what a libvirtd restart leaves us
        stats = self.driver.get_block_stats().as_dict()
        self.assertIn(self.vda, stats)
        self.assertIn('Lost the libvirt connection', log.output)
        self.driver._conn.close()
        self.mgr.apply_caps({}, [self.cap(total_iops_sec=123)])
        self.assertEqual(123, self.live()['total_iops_sec'])

    def wait_event(self, event):
        deadline = time.monotonic() + 5
        while (event not in self.events and time.monotonic() < deadline):
            time.sleep(0.05)
        self.assertIn(event, self.events)

    def test_events_come_again_after_a_reconnect(self):
        # libvirtd restarted: the callbacks were on the lost connection;
        # the new one must have them, else a hard reboot after a restart
        # of libvirtd leaves its disk without its cap until the lease
        # lapses.
        lost = self.driver._conn
        for callback_id in list(lost.domainEventCallbackID):
            lost.domainEventDeregisterAny(callback_id)  # gone with it
        lost.close()
        self.driver.list_disks()
        self.assertIsNot(lost, self.driver._conn)
        del self.events[:]
        self.dom.destroy()
        self.wait_event((self.uuid, base.EVENT_STOPPED))
        self.dom.create()
        self.wait_event((self.uuid, base.EVENT_STARTED))

    def test_unreachable_libvirt_is_unavailable(self):
        self.driver._conn.close()
        with mock.patch.object(lv.libvirt, 'open', side_effect=(
                libvirt.libvirtError('Failed to connect socket'))):
            self.assertRaises(base.Unavailable, self.driver.list_disks)
            self.assertRaises(base.Unavailable, self.driver.list_disks)
        # the daemon back: the next call connects
        self.assertIn(self.vda, self.driver.list_disks())

    def test_lifecycle_event_reapplies_within_one_interval(self):
        self.mgr.apply_caps({}, [self.cap(total_iops_sec=200)])
        # A hard reboot: the domain is rebuilt from its definition.
        self.dom.destroy()
        self.dom.create()
        self.assertEqual(1000, self.live()['total_iops_sec'])
        deadline = time.monotonic() + 5
        while (not any(e == (self.uuid, base.EVENT_STARTED)
                       for e in self.events)
               and time.monotonic() < deadline):
            time.sleep(0.05)
        self.assertIn((self.uuid, base.EVENT_STARTED), self.events)
        self.mgr.mark_dirty(self.uuid, base.EVENT_STARTED)
        self.mgr.periodic()
        self.assertEqual(200, self.live()['total_iops_sec'])

    def test_restart_recovery_keeps_provable_cap(self):
        store = MemoryStore()
        m1 = manager_mod.AgentManager(self.conf, self.driver,
                                      clock=self.clock, store=store)
        m1.periodic()
        m1.apply_caps({}, [self.cap(total_iops_sec=200)])
        # An unrecorded throttle on vdb (left by a crashed older agent).
        self.dom.setBlockIoTune('vdb', {'total_iops_sec': 7,
                                        'total_iops_sec_max': 7},
                                libvirt.VIR_DOMAIN_AFFECT_LIVE)
        m2 = manager_mod.AgentManager(self.conf, self.driver,
                                      clock=self.clock, store=store)
        m2.recover()
        self.assertEqual(200, self.live()['total_iops_sec'])
        self.assertIsNotNone(m2.cap_in_force(self.vda))
        tune = self.dom.blockIoTune('vdb', libvirt.VIR_DOMAIN_AFFECT_LIVE)
        self.assertEqual(0, tune['total_iops_sec'])
