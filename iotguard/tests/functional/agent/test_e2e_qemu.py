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

"""End to end on a real libvirtd + QEMU (TCG) guest that writes to its disk.

The agent's libvirt driver, manager and sampler (not the RPC layer, which
test_rpc covers) run against ``qemu:///system`` with a real guest
(:mod:`guest`): the sampled write rate is the guest's real one, held at
the static ceiling from the domain XML (as Nova's ``quota:disk_*`` would
set it); a cap shows in the measured rate within one interval; when its
lease lapses the agent restores the ceiling and the rate comes back.

It skips, saying why, where libvirtd is not reachable (tools/test-setup.sh
starts it), or the guest kernel or busybox is missing. KVM does not work in
this sandbox; the guest is ``type='qemu'`` (TCG). About 30-50 s.
"""

import math
import os
import time
import uuid

import fixtures
from oslo_log import log as logging
import testtools

from iotguard.agent import manager as manager_mod
from iotguard.agent import sampler as sampler_mod
from iotguard.agent.virt import histogram
from iotguard.agent.virt import libvirt as lv
from iotguard.tests import base as test_base
from iotguard.tests.fixtures import ceph as ceph_fixture
from iotguard.tests.functional.agent import guest
from iotguard.wire import batch as batch_mod

try:
    import libvirt
except ImportError:
    libvirt = None

LOG = logging.getLogger(__name__)
URI = os.environ.get('IOTGUARD_TEST_LIBVIRT_URI', 'qemu:///system')
MIB = 1 << 20
STATIC = 40 * MIB      # the static ceiling, Nova-style, in the domain XML
CAP = 4 * MIB
INTERVAL = 2.0


class Recorder:
    def __init__(self):
        self.batches = []

    def report_samples(self, ctxt, host, samples):
        self.batches.append(samples)

    def agent_heartbeat(self, ctxt, host, info):
        pass


class NoStore:
    def save(self, held):
        pass

    def load(self):
        return {}


@testtools.skipIf(libvirt is None, 'libvirt-python is not installed')
class QemuGuestEndToEndTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(180, gentle=True))
        libvirt.registerErrorHandler(lambda c, e: None, None)
        try:
            conn = libvirt.open(URI)
        except libvirt.libvirtError as e:
            self.skipTest('libvirtd not reachable at %s (%s); '
                          'tools/test-setup.sh starts it' % (URI, e))
        self.addCleanup(conn.close)
        try:
            guest.find_kernel()
        except LookupError as e:
            self.skipTest(str(e))
        if not os.path.exists(guest.BUSYBOX):
            self.skipTest('%s missing (busybox-static)' % guest.BUSYBOX)

        self.workdir = self.useFixture(fixtures.TempDir(
            rootdir='/var/tmp')).path
        os.chmod(self.workdir, 0o755)
        self.uuid = str(uuid.uuid4())
        xml = guest.domain_xml('iotg-e2e-' + self.uuid[:8], self.uuid,
                               self.workdir, STATIC, rbd=self.rbd_disk())
        self.dom = conn.defineXML(xml)
        self.addCleanup(self.dom.undefine)
        self.dom.create()
        self.addCleanup(self._destroy)
        self._wait_for_boot()

        self.flags(host='e2e-host')
        self.flags(sample_interval=INTERVAL, group='agent')
        self.events = []
        self.wall = [time.time()]
        self.api = Recorder()
        self.new_agent(lifecycle_callback=self._on_event)

    def new_agent(self, **start):
        """An agent started afresh: driver, manager (no state), sampler."""
        self.driver = lv.LibvirtDriver(self.conf, uri=URI)
        self.driver.start(**start)
        self.addCleanup(self.driver.stop)
        self.mgr = manager_mod.AgentManager(
            self.conf, self.driver, clock=lambda: self.wall[0],
            store=NoStore())
        self.sampler = sampler_mod.Sampler(self.conf, self.driver, self.mgr,
                                           self.api)

    def rbd_disk(self):
        """None: the guest's disk is a file (see the Ceph subclass)."""
        return None

    def _on_event(self, instance_uuid, event):
        self.events.append((instance_uuid, event))
        self.mgr.mark_dirty(instance_uuid, event)

    def _destroy(self):
        if self.dom.isActive():
            self.dom.destroy()

    def _wait_for_boot(self):
        console = guest.console_path(self.workdir)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if (os.path.exists(console) and
                    b'IOTG: boot-done' in open(console, 'rb').read()):
                return
            time.sleep(0.25)
        tail = open(console, 'rb').read()[-600:] if os.path.exists(
            console) else b'(no console)'
        self.fail('guest did not boot in 90 s: %r' % tail)

    def tick(self):
        """One agent interval: caps, then statistics; vda's sample."""
        self.wall[0] = time.time()
        disks = self.driver.list_disks()
        self.mgr.periodic(disks)
        batch = batch_mod.decode(self.sampler.run_once(disks).to_wire())
        i = batch.keys().index((self.uuid, 'vda'))
        sample = {'gap': batch.gap[i], 'static_bytes_sec': batch.static[1, i],
                  'cap': self.mgr.cap_in_force((self.uuid, 'vda'))}
        sample.update(zip(batch_mod.RATES, batch.rates[:, i].tolist()))
        return sample

    def interval(self):
        time.sleep(INTERVAL)
        return self.tick()

    def test_real_rate_cap_within_one_interval_and_lease_lapse(self):
        self.tick()                                   # first reading
        free = self.interval()
        self.assertIsNone(free['gap'])
        self.assertEqual(STATIC, free['static_bytes_sec'])
        # The guest writes as fast as the static ceiling lets it.
        self.assertGreater(free['write_bytes_sec'], 0.5 * STATIC, free)
        self.assertLess(free['write_bytes_sec'], 1.3 * STATIC, free)
        self.assertGreater(free['write_iops'], 0)
        self.assertGreater(free['write_latency_ms'], 0)

        self.mgr.apply_caps({}, [{
            'instance_uuid': self.uuid, 'dev': 'vda',
            'limits': {'total_bytes_sec': CAP},
            'lease_expires_at': time.time() + 2.5 * INTERVAL,
            'decision_id': 'e2e'}])
        live = self.dom.blockIoTune('vda', libvirt.VIR_DOMAIN_AFFECT_LIVE)
        self.assertEqual(CAP, live['total_bytes_sec'])
        self.tick()             # closes the interval the cap arrived in
        capped = self.interval()
        self.assertEqual(CAP, capped['cap'][0]['total_bytes_sec'])
        # QEMU's bucket lets one burst of the base value through.
        self.assertLess(capped['write_bytes_sec'], 1.6 * CAP, capped)
        self.assertGreater(capped['write_bytes_sec'], 0.3 * CAP, capped)

        # The lease lapses: the agent restores the ceiling by itself.
        deadline = time.monotonic() + 4 * INTERVAL
        while self.mgr.cap_in_force((self.uuid, 'vda')) is not None:
            self.assertLess(time.monotonic(), deadline, 'lease never lapsed')
            self.interval()
        live = self.dom.blockIoTune('vda', libvirt.VIR_DOMAIN_AFFECT_LIVE)
        self.assertEqual(STATIC, live['total_bytes_sec'])
        self.tick()
        back = self.interval()
        self.assertIsNone(back['cap'])
        self.assertGreater(back['write_bytes_sec'], 0.5 * STATIC, back)

    def test_latency_histograms_a_p99_of_the_writes_and_a_restart(self):
        """``[agent] latency_histograms``: QEMU's bins of the real writes.

        The driver sets the histogram on vda when it first reads the
        domain (no value for that pass), gives the interval's p99 from
        the next; a restart (new QEMU, counts from 0) gives no value for
        the interval it happens in, then values again.
        """
        self.flags(latency_histograms=True, group='agent')
        self.driver.stop()
        self.new_agent()

        def p99():
            """vda's p99 (nan: none), its sample; after one interval."""
            time.sleep(INTERVAL)
            sample = self.tick()
            got = self.api.batches[-1].p99_ms
            i = self.api.batches[-1].keys().index((self.uuid, 'vda'))
            return (math.nan if got is None else got[i]), sample

        self.tick()     # the histogram set on the first read, no value
        self.assertIsNone(self.api.batches[-1].p99_ms)
        seen = [p99() for _ in range(2)]
        for value, sample in seen:
            # dd's 1 MiB direct writes at the 40 MiB/s ceiling: tens of
            # ms each, throttle included; the tail at least the mean's
            # order, under the last bound
            self.assertGreater(sample['write_iops'], 0, sample)
            self.assertGreater(value, 0.5 * sample['write_latency_ms'],
                               (value, sample))
            self.assertLess(value, histogram.BOUNDS_MS[-1], sample)
        # QEMU counted the writes in its bins: no more than libvirt's
        # counters saw since the guest booted
        counted = int(histogram.read(self.dom)['virtio-disk0'].sum())
        stats = self.dom.blockStatsFlags('vda')
        self.assertGreater(counted, 0)
        self.assertLessEqual(
            counted, stats['wr_operations'] + stats['rd_operations'])
        LOG.info('p99 %s ms, mean write latency %s ms; %d operations in '
                 'the bins', [round(v, 2) for v, _s in seen],
                 [round(s['write_latency_ms'], 2) for _v, s in seen],
                 counted)

        # A restart: a new QEMU, its bins set again from 0
        self.dom.destroy()
        self.dom.create()
        self._wait_for_boot()
        after, _sample = p99()
        self.assertTrue(math.isnan(after))
        again, sample = p99()
        self.assertGreater(again, 0.5 * sample['write_latency_ms'],
                           (again, sample))

    def test_cap_reapplied_after_hard_reboot_event(self):
        self.tick()
        self.mgr.apply_caps({}, [{
            'instance_uuid': self.uuid, 'dev': 'vda',
            'limits': {'total_bytes_sec': CAP},
            'lease_expires_at': time.time() + 120,
            'decision_id': 'e2e-reboot'}])
        # What Nova's hard reboot does: the domain is rebuilt from its
        # definition, and the live throttle is gone.
        self.dom.destroy()
        self.dom.create()
        live = self.dom.blockIoTune('vda', libvirt.VIR_DOMAIN_AFFECT_LIVE)
        self.assertEqual(STATIC, live['total_bytes_sec'])
        deadline = time.monotonic() + 10
        while ((self.uuid, 'started') not in self.events and
               time.monotonic() < deadline):
            time.sleep(0.1)
        self.assertIn((self.uuid, 'started'), self.events)
        self.tick()                              # the next interval
        live = self.dom.blockIoTune('vda', libvirt.VIR_DOMAIN_AFFECT_LIVE)
        self.assertEqual(CAP, live['total_bytes_sec'])

    def test_live_migration_leftover_lapses_to_the_static_ceiling(self):
        """What a live migration leaves on the destination, on one host.

        Nova defines the migrated live XML (our cap in its ``<iotune>``)
        as the destination's persistent domain and runs it; a fresh agent
        there (nothing in memory or in its state file) must still take
        Nova's ceiling for the static one, so the cap lapses at its lease.
        """
        self.tick()
        self.mgr.apply_caps({}, [{
            'instance_uuid': self.uuid, 'dev': 'vda',
            'limits': {'total_bytes_sec': CAP},
            'lease_expires_at': time.time() + 120,
            'decision_id': 'e2e-migrated'}])
        # The source's agent is on another host: it sees none of this.
        # (Nor may any other agent on this libvirtd: one that finds our cap
        # record with no lease of its own restores the ceiling live and
        # drops the record, as it should on its own host. The functional
        # tests run one at a time; test_cloud's agent must not run
        # meanwhile.)
        self.driver.stop()
        conn = libvirt.open(URI)
        self.addCleanup(conn.close)
        conn.defineXML(self.dom.XMLDesc(0))
        self.dom.destroy()
        self.dom.create()       # the destination's domain, with the cap
        persistent = self.dom.blockIoTune('vda',
                                          libvirt.VIR_DOMAIN_AFFECT_CONFIG)
        self.assertEqual(CAP, persistent['total_bytes_sec'])
        self._wait_for_boot()
        # The destination's agent: new driver and manager, no state.
        self.new_agent()
        self.mgr.recover()
        sample = self.tick()
        self.assertEqual(STATIC, sample['static_bytes_sec'])
        # Nova's ceiling is written back into the persistent definition.
        persistent = self.dom.blockIoTune('vda',
                                          libvirt.VIR_DOMAIN_AFFECT_CONFIG)
        self.assertEqual(STATIC, persistent['total_bytes_sec'])
        # No lease here for that cap: Nova's ceiling is back at once, and
        # the guest writes above the cap again.
        live = self.dom.blockIoTune('vda', libvirt.VIR_DOMAIN_AFFECT_LIVE)
        self.assertEqual(STATIC, live['total_bytes_sec'])
        self.tick()
        back = self.interval()
        self.assertGreater(back['write_bytes_sec'], 2 * CAP, back)


class QemuGuestOnCephRbdTest(QemuGuestEndToEndTest):
    """The same, the guest's disk an RBD image of a real Ceph cluster.

    As a Ceph-backed Cinder volume reaches QEMU on a Nova compute host
    (librbd, ``<disk type='network'>``): the agent reads its statistics
    and caps it through the same live iotune path.
    """

    def rbd_disk(self):
        why = ceph_fixture.unavailable()
        if why:
            self.skipTest(why)
        ceph = self.useFixture(ceph_fixture.Ceph())
        image = ceph.create_image('iotg-e2e-' + self.uuid[:8], 256)
        return image, ceph.port, ceph.conf
