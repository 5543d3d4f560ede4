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

"""iotguard inside a real Nova cloud.

The cloud of :mod:`iotguard.tests.fixtures.cloud` (Keystone, Placement,
Glance, neutron-server, nova-api/conductor/scheduler and nova-compute on
the local libvirtd, and, where Ceph is installed, Cinder with the RBD
driver on a one-node Ceph; from PyPI and Debian, on MariaDB and RabbitMQ)
runs once for the class; iotguard runs beside it as three processes, as an
operator would deploy it: iotguard-api (Keystone auth, listed in the catalog),
iotguard-controller (membership from Nova through the service
credentials, Nova's notifications on the cloud's own RabbitMQ vhost) and
iotguard-agent (the libvirt driver on ``qemu:///system``, the compute
host's name), on their own MariaDB database.

Servers are booted through nova-api and run on nova-compute: busybox
guests writing to their root disk, their workload chosen through the
server's metadata (config drive). The flavor's ``quota:disk_*`` is each
disk's static ceiling. Several minutes: the cloud starts in ~40 s, each
server boots in ~5 s.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
import unittest
import urllib.parse

import fixtures
from oslo_config import cfg
import oslo_messaging

from iotguard.api.handlers import disk as disk_handler
from iotguard.tests import base
from iotguard.tests.fixtures import ceph as ceph_fixture
from iotguard.tests.fixtures import cloud as cloud_fixture
from iotguard.tests.fixtures import confs
from iotguard.tests.fixtures import database
from iotguard.tests.fixtures import deployment
from iotguard.tests.fixtures import horizon as horizon_fixture
from iotguard.tests.functional import test_osc_keystone
from iotguard.wire import rpc

try:
    import libvirt
except ImportError:
    libvirt = None

MIB = 1 << 20
STATIC = 40 * MIB           # the flavor's quota:disk_total_bytes_sec
PROFILE_BYTES_SEC = 24 * MIB  # what the operator says local:<host> holds
FLOOR = 4 * MIB             # silver's floor
CEILING = 8 * MIB           # bronze's ceiling
INTERVAL = 2.0
LEASE = 6.0
SAMPLE = 1.0
DOMAIN = 'local:' + cloud_fixture.COMPUTE_HOST

TEMPEST_CONF = '''
[compute]
image_ref = %(image)s
flavor_ref = %(flavor)s
region = %(region)s
endpoint_type = publicURL
build_timeout = 120
[image]
region = %(region)s
endpoint_type = public
[network]
region = %(region)s
endpoint_type = public
[validation]
run_validation = False
[service_available]
iotguard = True
nova = True
glance = True
neutron = True
cinder = %(cinder)s
swift = False
[iotguard]
region = %(region)s
endpoint_type = public
build_timeout = 120
build_interval = 1
decision_interval = %(interval)s
rates_write_interval = 1
[iotguard_feature_enabled]
agent = True
'''

# A guest's user data: it writes to its volume (vdb) while it has one.
VOLUME_WORKLOAD = '''echo "IOTG: writing to vdb"
while true; do
    if [ -b /dev/vdb ]; then
        dd if=/dev/zero of=/dev/vdb bs=%(bs)s count=%(count)d oflag=direct \\
            2>/dev/null || sleep 1
    else
        sleep 1
    fi
    [ "%(pause)s" = 0 ] || sleep %(pause)s
done
'''


def wait_for(predicate, timeout, step=0.5):
    """:func:`iotguard.tests.base.wait_for`, every half second (a cloud)."""
    return base.wait_for(predicate, timeout, step)


class TierEvents:
    """iotguard's tier notifications, as an operator's alarm would see."""

    filter_rule = oslo_messaging.NotificationFilter(
        event_type=r'^iotguard\.tier\.')

    def __init__(self):
        self.seen = []

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self.seen.append((event_type, payload))

    warn = info

    def about(self, server):
        return [(event, p['tier'], p['source']) for event, p in self.seen
                if p.get('instance_uuid') == server.id]


class CloudTest(horizon_fixture.Browsing, base.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        for why in (cloud_fixture.unavailable(),
                    database.unavailable('mysql'),
                    None if libvirt else 'libvirt-python not installed'):
            if why:
                raise unittest.SkipTest(why)
        try:
            # Two Cinder back ends: the second is a migration's target
            # (new volumes land on the first).
            cls.cloud = cls.class_fixture(cloud_fixture.Cloud(
                os.environ.get('IOTGUARD_CLOUD_DIR'),
                cinder=ceph_fixture.unavailable() is None,
                cinder_backends=2))
            cls.db = cls.class_fixture(database.Database('mysql'))
            cls._listen()
            cls._start_iotguard()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def _listen(cls):
        """A pool of our own on the cloud's notifications topic."""
        transport = oslo_messaging.get_notification_transport(
            cfg.ConfigOpts(), url=cls.cloud.transport_url)
        cls.events = TierEvents()
        listener = oslo_messaging.get_notification_listener(
            transport, [oslo_messaging.Target(topic='notifications',
                                              exchange=rpc.EXCHANGE)],
            [cls.events], executor='threading', pool='iotguard-cloud-test')
        listener.start()
        cls.listener = listener

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, 'listener', None) is not None:
            cls.listener.stop()
            cls.listener.wait()
        super().tearDownClass()

    @classmethod
    def _start_iotguard(cls):
        cls.iotguard = cls.class_fixture(deployment.Deployment(
            cls.cloud, cls.db.url, INTERVAL, LEASE, SAMPLE))
        cls.dir = cls.iotguard.dir
        cls.iotguard.spawn('controller', 'controller', 'iotguard-controller')
        cls.iotguard.spawn('agent', 'agent', cloud_fixture.COMPUTE_HOST)

    # -- helpers ---------------------------------------------------------
    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(600, gentle=True))
        self.assertEqual([], self.iotguard.dead(), 'see %s' % self.dir)

    def api(self, method, path, body=None, ok=(200, 201, 202, 204)):
        resp = self.iotguard.request(method, path, body)
        self.assertIn(resp.status_code, ok, '%s %s -> %d %s' % (
            method, path, resp.status_code, resp.text))
        return resp.json() if resp.text else None

    def disks(self, server):
        return self.iotguard.disks(server)

    def live_iotune(self, server, flags=None, dev='vda'):
        conn = libvirt.open(cloud_fixture.LIBVIRT_URI)
        try:
            dom = conn.lookupByUUIDString(server.id)
            flags = (libvirt.VIR_DOMAIN_AFFECT_LIVE if flags is None
                     else flags)
            return dom.blockIoTune(dev, flags)
        finally:
            conn.close()

    def live_stats(self, server, dev='vda'):
        """``(rd_req, rd_bytes, wr_req, wr_bytes, errs)`` from libvirt."""
        conn = libvirt.open(cloud_fixture.LIBVIRT_URI)
        try:
            return conn.lookupByUUIDString(server.id).blockStats(dev)
        finally:
            conn.close()

    def persistent_iotune(self, server, dev='vda'):
        return self.live_iotune(server, libvirt.VIR_DOMAIN_AFFECT_CONFIG,
                                dev)

    def boot_pair(self, prefix, noisy_tier=None, quiet_tier=None):
        """A quiet and a noisy server (their flavors may name tiers)."""
        quota = {'quota:disk_total_bytes_sec': str(STATIC)}

        def flavor(name, tier):
            return self.cloud.flavor(name, dict(
                quota, **({'iotguard:tier': tier} if tier else {})))

        quiet_flavor = flavor(prefix + '-flavor', quiet_tier)
        noisy_flavor = flavor(prefix + '-noisy-flavor', noisy_tier)
        # quiet: 1 MiB then half a second of rest (~1.5 MiB/s); noisy:
        # as fast as its static ceiling lets it.
        quiet = self.cloud.boot(prefix + '-quiet', quiet_flavor, metadata={
            'iotg_bs': '64k', 'iotg_count': '16', 'iotg_pause': '0.5'})
        noisy = self.cloud.boot(prefix + '-noisy', noisy_flavor)
        for server in (quiet, noisy):
            self.addCleanup(self.cloud.conn.compute.delete_server, server)
        return quiet, noisy

    # -- the tests -------------------------------------------------------
    def test_noisy_neighbour_on_nova_compute(self):
        """A noisy server capped on nova-compute, through its lifecycle.

        Membership from Nova, tiers through the API, a cap on the noisy
        server's disk, its static ceiling the flavor's quota, the cap back
        after a hard reboot, and a lapse at the lease when no controller
        is left.

        The host's storage is far faster than the guests ask, so nobody
        really starves here (the guarantee policy then caps no one for its
        neighbours' sake: that needs a shared queue that fills). The noisy
        server is capped because its tier, bronze, has a ceiling it runs
        far above while the domain is busy.
        """
        self.api('POST', '/v1/tiers', {'name': 'bronze',
                                       'max_bytes_sec': CEILING})
        quiet, noisy = self.boot_pair('nn', noisy_tier='bronze',
                                      quiet_tier='silver')
        # A tenant writing the key into Nova's metadata gets nothing.
        self.cloud.conn.compute.set_server_metadata(
            noisy, **{'iotguard:tier': 'silver'})

        # Membership: both disks known from Nova, in the host's domain.
        for server in (quiet, noisy):
            disks = wait_for(lambda: self.disks(server), 60)
            self.assertIsNotNone(disks, 'iotguard never heard of %s'
                                 % server.id)
            self.assertEqual(DOMAIN, disks['vda']['domain'])
            self.assertEqual(cloud_fixture.COMPUTE_HOST,
                             disks['vda']['host'])
        # The quiet server's flavor names silver, which the operator has not
        # created yet: refused, visibly, and the server runs all the same.
        refused = wait_for(
            lambda: self.disks(quiet)['vda']['tier_refused'], 30)
        self.assertTrue(refused, self.disks(quiet))
        self.assertEqual(('silver', 'flavor'),
                         (refused['tier'], refused['source']))
        self.assertIn('silver', refused['reason'])
        self.assertIsNone(self.disks(quiet)['vda']['tier_source'])
        self.assertTrue(wait_for(lambda: ('iotguard.tier.refused', 'silver',
                                          'flavor') in
                                 self.events.about(quiet), 10),
                        self.events.seen)
        # The operator's capacity profile of the host's local storage, and
        # the tier: the next resync gives the flavor's tier.
        self.api('PATCH', '/v1/domains/%s' % DOMAIN,
                 {'iops_4k': 100000, 'bytes_sec': PROFILE_BYTES_SEC})
        self.api('POST', '/v1/tiers', {'name': 'silver',
                                       'min_bytes_sec': FLOOR})
        given = wait_for(
            lambda: self.disks(quiet)['vda']['tier_source'] == 'flavor'
            and self.disks(quiet)['vda'], 45)
        self.assertTrue(given, self.disks(quiet))
        self.assertEqual('silver', given['tier'])
        self.assertIsNone(given['tier_refused'])
        self.assertTrue(wait_for(lambda: ('iotguard.tier.admitted', 'silver',
                                          'flavor') in
                                 self.events.about(quiet), 10),
                        self.events.seen)
        self.assertEqual(1, [e for e, _t, _s in self.events.about(quiet)]
                         .count('iotguard.tier.refused'))
        # The tenant chooses a tier for the quiet server: admitted, and
        # the API wrote it into the server's metadata in Nova.
        chosen = self.api('PUT', '/v1/instances/%s/tier' % quiet.id,
                          {'tier': 'silver'})['instance']
        self.assertEqual('silver', chosen['tier'])
        self.assertEqual('api', self.disks(quiet)['vda']['tier_source'])
        self.assertEqual(
            'silver', self.cloud.conn.compute.get_server_metadata(
                quiet).metadata.get('iotguard:tier'))
        # The noisy server's tier comes from its flavor (the controller
        # reads the flavor embedded in the server, admission first).
        tiered = wait_for(
            lambda: self.disks(noisy)['vda']['tier_source'] == 'flavor'
            and self.disks(noisy)['vda'], 30)
        self.assertTrue(tiered, self.disks(noisy))
        self.assertEqual('bronze', tiered['tier'])
        self.assertEqual(CEILING, tiered['ceiling']['max_bytes_sec'])

        # Nova put the flavor's quota in the domain XML: the static ceiling.
        self.assertEqual(STATIC,
                         self.persistent_iotune(noisy)['total_bytes_sec'])

        # The noisy disk is capped, the quiet one is not.
        def capped():
            cap = self.disks(noisy)['vda']['cap']
            return cap if cap and cap['limits'] else None
        cap = wait_for(capped, 60)
        self.assertIsNotNone(cap, 'the noisy disk was never capped')
        capped_at = cap['limits']['total_bytes_sec']
        self.assertLessEqual(capped_at, CEILING * 1.01)
        self.assertGreater(capped_at, 0)
        self.assertIn('guarantee', cap['reason'])
        self.assertIsNone(self.disks(quiet)['vda']['cap'])
        live = wait_for(lambda: self.live_iotune(noisy)['total_bytes_sec']
                        < STATIC and self.live_iotune(noisy), 3 * INTERVAL)
        self.assertTrue(live, 'the cap never reached libvirt')
        # The cap is live only: the persistent definition keeps the quota.
        self.assertEqual(STATIC,
                         self.persistent_iotune(noisy)['total_bytes_sec'])
        quiet_disk = self.disks(quiet)['vda']
        self.assertEqual('silver', quiet_disk['tier'])
        self.assertEqual(FLOOR, quiet_disk['floor']['min_bytes_sec'])

        # Hard reboot: Nova rebuilds the domain from the flavor (quota
        # only); the cap is back within about one interval after it runs.
        compute = self.cloud.conn.compute
        compute.reboot_server(noisy, 'HARD')
        compute.wait_for_server(compute.get_server(noisy), wait=120)
        began = time.monotonic()
        back = wait_for(
            lambda: self.live_iotune(noisy)['total_bytes_sec'] < STATIC,
            4 * INTERVAL + SAMPLE, step=0.2)
        self.assertTrue(back, 'the cap did not come back after the hard '
                              'reboot')
        self.addDetail('cap back after hard reboot (s)',
                       _text('%.1f' % (time.monotonic() - began)))

        # No controller left: the cap lapses at its lease, back to the
        # flavor's quota, and nothing else changes.
        self.iotguard.kill('controller')
        lapsed = wait_for(
            lambda: self.live_iotune(noisy)['total_bytes_sec'] == STATIC,
            LEASE + 2 * SAMPLE + 2, step=0.2)
        self.assertTrue(lapsed, 'the cap outlived its lease')
        self.iotguard.spawn('controller', 'controller', 'iotguard-controller')

    def test_caps_through_nova_lifecycle_operations(self):
        """Every lifecycle operation Nova performs on one host.

        Hard reboot, suspend and resume, rescue and unrescue, resize (same
        host) and confirm, rebuild, shelve (offloaded) and unshelve: after
        each, the noisy disk is under its cap again within a few intervals,
        its static ceiling is the flavor's quota, never the cap, and the
        instance has no disk but its root (rescue adds one for a while).
        """
        self.api('POST', '/v1/tiers', {'name': 'lifecycle-bronze',
                                       'max_bytes_sec': CEILING},
                 ok=(201,))
        quota = {'quota:disk_total_bytes_sec': str(STATIC),
                 'iotguard:tier': 'lifecycle-bronze'}
        flavor = self.cloud.flavor('lc-flavor', quota)
        bigger = self.cloud.flavor('lc-flavor-2', quota, ram=160)
        compute = self.cloud.conn.compute
        noisy = self.cloud.boot('lc-noisy', flavor)
        self.addCleanup(compute.delete_server, noisy)
        # Membership records the disk (and creates its domain) first.
        self.assertTrue(wait_for(lambda: self.disks(noisy), 60))
        self.api('PATCH', '/v1/domains/%s' % DOMAIN,
                 {'iops_4k': 100000, 'bytes_sec': PROFILE_BYTES_SEC})

        def status(wanted):
            return compute.wait_for_server(compute.get_server(noisy),
                                           status=wanted, wait=180)

        def capped():
            try:
                return (self.live_iotune(noisy)['total_bytes_sec']
                        <= CEILING * 1.01)
            except libvirt.libvirtError:
                return False        # between two domains

        operations = [
            ('hard reboot', [lambda: compute.reboot_server(noisy, 'HARD')],
             'ACTIVE'),
            ('suspend, resume', [lambda: compute.suspend_server(noisy),
                                 lambda: status('SUSPENDED'),
                                 lambda: compute.resume_server(noisy)],
             'ACTIVE'),
            ('rescue, unrescue', [lambda: compute.rescue_server(noisy),
                                  lambda: status('RESCUE'),
                                  lambda: compute.unrescue_server(noisy)],
             'ACTIVE'),
            ('resize, confirm', [
                lambda: compute.resize_server(noisy, bigger),
                lambda: status('VERIFY_RESIZE'),
                lambda: compute.confirm_server_resize(noisy)], 'ACTIVE'),
            ('rebuild', [lambda: compute.rebuild_server(
                noisy, image=self.cloud.images['disk'])], 'ACTIVE'),
            ('shelve, unshelve', [
                lambda: compute.shelve_server(noisy),
                lambda: status('SHELVED_OFFLOADED'),
                lambda: compute.unshelve_server(noisy)], 'ACTIVE'),
        ]

        def written():
            try:
                return self.live_stats(noisy)[3]
            except libvirt.libvirtError:
                return None         # between two domains

        def writing(since):
            """The guest writes again (its workload started after boot)."""
            now = written()
            return now is not None and now > since

        self.assertTrue(wait_for(capped, 60), 'never capped')
        took = {}
        for name, steps, final in operations:
            for step in steps:
                step()
            status(final)
            # Where Nova started the domain anew, its cap comes back with
            # the domain (the agent keeps it); where iotguard must measure
            # the disk again (unshelve: a new disk on the host), its clock
            # starts when the guest writes, as the policy caps what it
            # measures.
            began = time.monotonic()
            first = written() or 0
            self.assertTrue(wait_for(lambda: capped() or writing(first), 90),
                            'the guest never wrote after %s' % name)
            to_write = time.monotonic() - began
            began = time.monotonic()
            if not wait_for(capped, 4 * INTERVAL + SAMPLE, step=0.2):
                # the disk and its decisions, read only on failure
                self.fail('not capped again after %s (%.1f s from ACTIVE '
                          'to the first write); disk %s; decisions %s' % (
                              name, to_write, self.disks(noisy),
                              self.api('GET', '/v1/decisions?instance=%s'
                                       '&limit=5' % noisy.id)))
            took[name] = (round(to_write, 1),
                          round(time.monotonic() - began, 1))
            # Only the disks the domain has now: the rescue layout's
            # second disk, registered by the agent, goes after unrescue.
            self.assertTrue(wait_for(
                lambda: sorted(self.disks(noisy) or ()) == ['vda'],
                4 * INTERVAL + 3 * SAMPLE, step=0.5),
                'disks after %s: %s' % (name, self.disks(noisy)))
            self.assertEqual(
                STATIC, self.persistent_iotune(noisy)['total_bytes_sec'],
                'static ceiling after %s' % name)
        self.addDetail('seconds from ACTIVE to the first write, then to '
                       'capped', _text(str(took)))

    def manage(self, *argv):
        proc = self.iotguard.manage(*argv)
        self.assertEqual(0, proc.returncode, proc.stdout + proc.stderr)
        return proc.stdout

    def test_volume_tiers_on_ceph(self):
        """Cinder volumes on Ceph: tiers from volume types, a live cap.

        Creating the tiers through the API makes their volume types;
        a volume of ``iotguard-vol-silver`` gets silver's floor from its
        type. The noisy volume's type is the operator's own, naming a tier
        with a ceiling in ``iotguard:tier``, its front-end QoS far above
        it: Nova copies that QoS into the domain at attach (the static
        ceiling) and iotguard caps the volume's disk live under it, on
        the same path as a root disk (QEMU opens the volume through
        librbd). Extending the attached volume keeps the cap; detaching
        drops the disk and its cap; attaching again brings the QoS back
        as the static ceiling and the cap on top of it.
        """
        if not self.cloud.cinder:
            self.skipTest('no Ceph here: %s' % ceph_fixture.unavailable())
        storage = self.cloud.conn.block_storage
        # A tier created through the API reaches Cinder by itself (the
        # API syncs with its [service_credentials]); tier sync then finds
        # nothing to do.
        for body in ({'name': 'vol-silver', 'min_bytes_sec': FLOOR},
                     {'name': 'vol-bronze', 'max_bytes_sec': CEILING}):
            self.assertEqual('synced', self.api(
                'POST', '/v1/tiers', body, ok=(201,))['cloud_sync'])
        silver_type = storage.find_type('iotguard-vol-silver',
                                        ignore_missing=False)
        self.assertNotIn('vol-silver', self.manage('tier', 'sync'))
        self.assertEqual('vol-silver', silver_type.extra_specs.get(
            'iotguard:tier'))
        # The operator's own type: a tier and a generous front-end QoS.
        fast = storage.create_type(name='ceph-fast', extra_specs={
            'iotguard:tier': 'vol-bronze'})
        qos = storage.create_qos_spec(name='ceph-fast', consumer='front-end',
                                      total_bytes_sec=str(STATIC))
        storage.associate_qos_spec(qos, fast.id)
        quiet_volume = self.cloud.volume('vol-quiet', 'iotguard-vol-silver')
        noisy_volume = self.cloud.volume('vol-noisy', 'ceph-fast')
        flavor = self.cloud.flavor('vol-flavor', {
            'quota:disk_total_bytes_sec': str(STATIC)})
        quiet = self.cloud.boot('vol-quiet', flavor, volumes=[quiet_volume],
                                user_data=VOLUME_WORKLOAD % {
                                    'bs': '64k', 'count': 16,
                                    'pause': 0.5})
        noisy = self.cloud.boot('vol-noisy', flavor, volumes=[noisy_volume],
                                user_data=VOLUME_WORKLOAD % {
                                    'bs': '1M', 'count': 64,
                                    'pause': 0})
        for server in (quiet, noisy):
            self.addCleanup(self.cloud.conn.compute.delete_server, server)

        # Both volumes are disks of their servers, in the back end's
        # domain. Their types' tiers wait for the operator to calibrate
        # that domain (admission cannot check floors without a profile).
        domain = '%s@%s#%s' % (cloud_fixture.VOLUME_HOST,
                               cloud_fixture.CEPH_BACKEND,
                               cloud_fixture.CEPH_BACKEND)
        for server in (quiet, noisy):
            self.assertTrue(wait_for(
                lambda: 'vdb' in (self.disks(server) or {}), 60),
                self.disks(server))
        refused = wait_for(lambda: self.disks(quiet)['vdb']['tier_refused'],
                           30)
        self.assertEqual('volume_type', (refused or {}).get('source'),
                         self.disks(quiet))
        self.assertIn('no capacity profile', refused['reason'])
        self.api('PATCH', '/v1/domains/%s' % urllib.parse.quote(domain, ''),
                 {'iops_4k': 100000, 'bytes_sec': PROFILE_BYTES_SEC})
        # The next resync admits them.
        for server, volume, tier in ((quiet, quiet_volume, 'vol-silver'),
                                     (noisy, noisy_volume, 'vol-bronze')):
            disk = wait_for(
                lambda: self.disks(server)['vdb']['tier_source'] ==
                'volume_type' and self.disks(server)['vdb'], 45)
            self.assertTrue(disk, self.disks(server))
            self.assertEqual((domain, volume.id, tier, None),
                             (disk['domain'], disk['volume_id'],
                              disk['tier'], disk['tier_refused']))
            # The root disk is the host's, without a tier.
            self.assertEqual(DOMAIN, self.disks(server)['vda']['domain'])
            self.assertIsNone(self.disks(server)['vda']['tier'])
        self.assertEqual(FLOOR, self.disks(quiet)['vdb']['floor'][
            'min_bytes_sec'])
        # Nova copied the front-end QoS into the domain: the static ceiling.
        self.assertEqual(STATIC, self.persistent_iotune(
            noisy, 'vdb')['total_bytes_sec'])

        def capped():
            try:
                return (self.live_iotune(noisy, dev='vdb')['total_bytes_sec']
                        <= CEILING * 1.01)
            except libvirt.libvirtError:
                return False
        self.assertTrue(wait_for(capped, 60), 'the noisy volume was never '
                        'capped: %s' % self.disks(noisy))
        cap = self.disks(noisy)['vdb']['cap']
        self.assertIsNotNone(cap)
        self.assertIn('guarantee', cap['reason'])
        self.assertIsNone(self.disks(quiet)['vdb']['cap'])
        self.assertEqual(STATIC, self.persistent_iotune(
            noisy, 'vdb')['total_bytes_sec'])

        # Extend the attached volume (Cinder tells Nova, which resizes the
        # disk in the running guest): still capped, the QoS still static.
        # Cinder's volume.resize.end tells membership too: the disk is
        # admitted again at its new size, well before the resync.
        self.assertEqual(1, self.disks(noisy)['vdb']['size_gib'])
        storage.extend_volume(noisy_volume, 2)
        self.assertTrue(wait_for(
            lambda: storage.get_volume(noisy_volume).size == 2, 60))
        began = time.monotonic()
        self.assertTrue(wait_for(
            lambda: self.disks(noisy)['vdb']['size_gib'] == 2, 15),
            self.disks(noisy))
        self.addDetail('seconds from extended to the new size',
                       _text('%.1f' % (time.monotonic() - began)))
        with open(os.path.join(self.dir, 'controller.log')) as log:
            self.assertIn('volume.resize.end: instance %s re-read'
                          % noisy.id, log.read())
        storage.wait_for_status(storage.get_volume(noisy_volume),
                                'in-use', wait=120)
        self.assertTrue(wait_for(capped, 4 * INTERVAL + SAMPLE, step=0.2),
                        'not capped after the extend')
        self.assertEqual(STATIC, self.persistent_iotune(
            noisy, 'vdb')['total_bytes_sec'])

        # Detach: the disk leaves membership, its cap with it.
        compute = self.cloud.conn.compute
        compute.delete_volume_attachment(noisy, noisy_volume.id)
        storage.wait_for_status(storage.get_volume(noisy_volume),
                                'available', wait=180)
        self.assertTrue(wait_for(lambda: 'vdb' not in self.disks(noisy),
                                 30), self.disks(noisy))
        # Attach again: the QoS is the static ceiling again, and the cap is
        # back within a few intervals.
        compute.create_volume_attachment(noisy, volume_id=noisy_volume.id)
        storage.wait_for_status(storage.get_volume(noisy_volume),
                                'in-use', wait=180)
        began = time.monotonic()
        self.assertTrue(wait_for(capped, 30, step=0.2),
                        'not capped after the attach: %s'
                        % self.disks(noisy))
        self.addDetail('seconds from in-use to capped after attach',
                       _text('%.1f' % (time.monotonic() - began)))
        self.assertEqual(STATIC, self.persistent_iotune(
            noisy, 'vdb')['total_bytes_sec'])
        # The disk's tier from its volume type comes back with
        # membership's notifications, within seconds (the CI run found it
        # a moment after the cap under load).
        self.assertTrue(wait_for(
            lambda: self.disks(noisy)['vdb']['tier_source'] == 'volume_type',
            30), self.disks(noisy))

        # Retype the attached volume to another type of the same back end
        # and QoS (Cinder retypes an in-use volume only when its front-end
        # QoS stays): Cinder's volume.retype notification, on the exchange
        # Cinder really uses, brings the new type's tier within seconds,
        # well before the resync (30 s here).
        faster = storage.create_type(name='ceph-fast-silver', extra_specs={
            'iotguard:tier': 'vol-silver'})
        storage.associate_qos_spec(qos, faster.id)
        storage.retype_volume(noisy_volume, faster.name,
                              migration_policy='never')
        self.assertTrue(wait_for(
            lambda: storage.get_volume(noisy_volume).volume_type ==
            faster.name, 60), storage.get_volume(noisy_volume))
        began = time.monotonic()
        self.assertTrue(wait_for(
            lambda: self.disks(noisy)['vdb']['tier'] == 'vol-silver', 15),
            self.disks(noisy))
        self.addDetail('seconds from retyped to the new tier',
                       _text('%.1f' % (time.monotonic() - began)))
        with open(os.path.join(self.dir, 'controller.log')) as log:
            self.assertIn('volume.retype: instance %s re-read' % noisy.id,
                          log.read())
        self.assertEqual(FLOOR, self.disks(noisy)['vdb']['floor'][
            'min_bytes_sec'])

    def test_volume_migration_followed_within_seconds(self):
        """An attached volume migrated to the other back end, followed.

        An admin's ``cinder migrate`` of a volume a running guest writes
        to, to the second RBD back end (its own pool): Nova swaps the disk
        (a block copy) and Cinder swaps the two volumes' records, and no
        notification tells the end. Membership reads the volume while it
        migrates (from the events of Nova's swap) and moves its disk to
        the new back end's domain within seconds of the end, well before
        the resync (30 s here, 600 s by default). (The floor admitted
        again in the new domain is the unit tests': a profile given to the
        first back end's domain here would stay for the other tests.)
        """
        if not self.cloud.cinder:
            self.skipTest('no Ceph here: %s' % ceph_fixture.unavailable())
        storage = self.cloud.conn.block_storage
        volume = self.cloud.volume('vol-moving')
        flavor = self.cloud.flavor('moving-flavor', {
            'quota:disk_total_bytes_sec': str(STATIC)})
        server = self.cloud.boot('vol-moving', flavor, volumes=[volume],
                                 user_data=VOLUME_WORKLOAD % {
                                     'bs': '64k', 'count': 16,
                                     'pause': 0.5})
        self.addCleanup(self.cloud.conn.compute.delete_server, server)
        source, target = ('%s@%s#%s' % (cloud_fixture.VOLUME_HOST, b, b)
                          for b in (cloud_fixture.CEPH_BACKEND,
                                    cloud_fixture.CEPH_BACKEND2))
        self.assertEqual(source, storage.get_volume(volume).host)
        self.assertTrue(wait_for(
            lambda: 'vdb' in (self.disks(server) or {}), 60),
            self.disks(server))
        self.assertEqual(source, self.disks(server)['vdb']['domain'])

        began = time.monotonic()
        storage.migrate_volume(volume, host=target)

        def migrated():
            now = storage.get_volume(volume)
            self.assertNotEqual('error', now.migration_status)
            return now.migration_status == 'success' and now.host == target
        self.assertTrue(wait_for(migrated, 300),
                        storage.get_volume(volume))
        ended = time.monotonic()
        self.addDetail('seconds from migrate to Cinder\'s success',
                       _text('%.1f' % (ended - began)))
        self.assertTrue(wait_for(
            lambda: (self.disks(server) or {}).get('vdb', {}).get(
                'domain') == target, 15), self.disks(server))
        self.addDetail('seconds from Cinder\'s success to the disk moved',
                       _text('%.1f' % (time.monotonic() - ended)))
        self.assertEqual(volume.id, self.disks(server)['vdb']['volume_id'])
        # The follower logs once its re-read of the instance is over: the
        # disk is moved inside it, sizes and tiers are synced after (in a
        # loaded CI run the disk had moved 3.1 s after Cinder's success,
        # the line was not yet written).
        followed = 'Volume %s migration followed: domain %s -> %s' % (
            volume.id, source, target)

        def logged():
            with open(os.path.join(self.dir, 'controller.log')) as log:
                return followed in log.read()
        self.assertTrue(wait_for(logged, 15), followed)
        # The guest's disk is the copy in the second back end's pool now.
        conn = libvirt.open(cloud_fixture.LIBVIRT_URI)
        try:
            xml = conn.lookupByUUIDString(server.id).XMLDesc()
        finally:
            conn.close()
        self.assertIn(cloud_fixture.CEPH_POOL2 + '/', xml)

    def test_horizon_instances_change_io_tier(self):
        """Horizon's Instances table: "Change I/O tier" on a Nova server.

        Horizon 27 with the plugin and its customization module, on the
        cloud's Keystone; a project member's server booted through
        nova-api; the member, in headless Chromium, opens Project >
        Compute > Instances, the server's row actions, and changes its
        tier: admitted (the API then has it), and refused with
        admission's message (nothing changed).
        """
        why = horizon_fixture.unavailable()
        if why:
            self.skipTest(why)
        identity = self.cloud.conn.identity
        project = identity.create_project(name='horizon-demo',
                                          domain_id='default')
        self.addCleanup(identity.delete_project, project)
        user = identity.create_user(name='horizon-demo', domain_id='default',
                                    password=cloud_fixture.PASSWORD)
        self.addCleanup(identity.delete_user, user)
        identity.assign_project_role_to_user(project, user,
                                             identity.find_role('member'))
        member = self.cloud.connection(username='horizon-demo',
                                       project_name='horizon-demo')
        flavor = self.cloud.flavor('horizon-flavor', {
            'quota:disk_total_bytes_sec': str(STATIC)})
        server = member.compute.create_server(
            name='horizon-server', flavor_id=flavor.id,
            image_id=self.cloud.images['disk'], networks='none',
            metadata={'iotg_bs': '64k', 'iotg_count': '1',
                      'iotg_pause': '1'})
        self.addCleanup(self.cloud.conn.compute.delete_server, server)
        self.start_browsing(self.cloud.auth_url, cloud_fixture.PASSWORD)
        member.compute.wait_for_server(server, wait=180)
        self.assertTrue(wait_for(lambda: self.disks(server), 60))
        # A floor the host's local storage keeps, and one it cannot.
        self.api('PATCH', '/v1/domains/%s' % DOMAIN,
                 {'iops_4k': 100000, 'bytes_sec': PROFILE_BYTES_SEC})
        for name, floor in (('horizon-silver', MIB),
                            ('horizon-platinum', PROFILE_BYTES_SEC)):
            self.api('POST', '/v1/tiers', {'name': name,
                                           'min_bytes_sec': floor},
                     ok=(201,))

        def change_tier(tier):
            from selenium.webdriver.support import ui

            self.open('/project/instances/')
            row = 'tr[data-object-id="%s"]' % server.id
            self.wait_text(row, 'horizon-server')
            self.css(row + ' .dropdown-toggle').click()
            action = self.css(row + ' a[id$="__action_iotguard_change_tier"]')
            self.wait(lambda b: action.is_displayed())
            if tier == 'horizon-silver':
                self.screenshot('user', 'instances-action')
            action.click()
            self.wait(lambda b: self.css('.modal #id_tier', many=True))
            ui.Select(self.css('.modal #id_tier')).select_by_value(tier)
            self.css('.modal [type=submit]').click()

        self.login('horizon-demo', '/project/instances/')
        change_tier('horizon-silver')
        self.wait_text('.alert-success', 'Server %s now has I/O tier '
                       'horizon-silver' % server.id)
        self.assertIn('/project/instances/', self.browser.current_url)
        self.assertEqual(('horizon-silver', 'api'), (
            self.disks(server)['vda']['tier'],
            self.disks(server)['vda']['tier_source']))
        change_tier('horizon-platinum')
        self.wait_text('.modal .alert-danger',
                       'Tier horizon-platinum does not fit in domain %s now'
                       % disk_handler.domain_id(project.id, DOMAIN))
        self.assertEqual('horizon-silver', self.disks(server)['vda']['tier'])

    def test_openstack_cli_by_server_name(self):
        """``openstack iotguard`` through Keystone, servers by Nova name.

        The real ``openstack`` CLI with a password, the endpoint from the
        catalog, the server looked up by name in nova-api: set (silent),
        show (one object), list, unset.
        """
        self.api('POST', '/v1/tiers', {'name': 'cli-gold'}, ok=(201,))
        flavor = self.cloud.flavor('cli-flavor', {
            'quota:disk_total_bytes_sec': str(STATIC)})
        server = self.cloud.boot('cli-server', flavor, metadata={
            'iotg_bs': '64k', 'iotg_count': '1', 'iotg_pause': '1'})
        self.addCleanup(self.cloud.conn.compute.delete_server, server)
        self.assertTrue(wait_for(lambda: self.disks(server), 60))
        home = self.useFixture(fixtures.TempHomeDir()).path

        def cli(*args):
            proc = test_osc_keystone.run_cli(self.cloud.auth, home, *args)
            self.assertEqual(0, proc.returncode, proc.stderr)
            return proc.stdout

        self.assertEqual('', cli('instance', 'set', '--tier', 'cli-gold',
                                 'cli-server'))
        shown = json.loads(cli('instance', 'show', 'cli-server', '-f',
                               'json'))
        self.assertEqual(server.id, shown['UUID'])
        self.assertEqual([('vda', 'cli-gold', 'api')],
                         [(d['dev'], d['tier'], d['tier_source'])
                          for d in shown['Disks']])
        rows = json.loads(cli('instance', 'list', '-f', 'json'))
        self.assertIn((server.id, 'vda', 'cli-gold'),
                      [(r['Instance'], r['Disk'], r['Tier']) for r in rows])
        self.assertEqual('', cli('instance', 'unset', '--tier',
                                 'cli-server'))
        self.assertIsNone(self.disks(server)['vda']['tier'])
        self.assertNotIn('iotguard:tier', self.cloud.conn.compute
                         .get_server_metadata(server).metadata)

    def test_tempest_plugin_against_the_cloud(self):
        """``tempest run --regex iotguard`` against the cloud.

        The plugin's API tests through Keystone and its scenario test on
        nova-compute: nothing skipped, nothing failed.
        """
        work = os.path.join(self.dir, 'tempest')
        shutil.rmtree(work, ignore_errors=True)
        tempest = os.path.join(os.path.dirname(sys.executable), 'tempest')
        # Its own workspace registry, not the user's ~/.tempest.
        subprocess.run([tempest, 'init', '--workspace-path',
                        os.path.join(self.dir, 'tempest-workspaces.yaml'),
                        work], check=True, capture_output=True, timeout=120)
        flavor = self.cloud.flavor('tempest-flavor')
        with open(os.path.join(work, 'etc', 'tempest.conf'), 'w') as out:
            out.write(confs.tempest(work, self.cloud.auth_url,
                                    cloud_fixture.PASSWORD))
            out.write(TEMPEST_CONF % dict(
                self.iotguard.settings, dir=work,
                image=self.cloud.images['disk'],
                flavor=flavor.id, cinder=self.cloud.cinder,
                region=cloud_fixture.REGION))
        # The iotguard.egg-info of a checkout would shadow the installed
        # entry points tempest finds its plugins by: run from ``work``.
        listed = subprocess.run(
            [tempest, 'run', '--list-tests', '--regex', '^iotguard\\.'],
            cwd=work, capture_output=True, text=True, timeout=300)
        expected = len([line for line in listed.stdout.splitlines()
                        if line.startswith('iotguard.')])
        self.assertGreater(expected, 10, listed.stdout + listed.stderr)
        proc = subprocess.run(
            [tempest, 'run', '--regex', '^iotguard\\.', '--concurrency',
             '1'], cwd=work, capture_output=True, text=True, timeout=1500)
        summary = proc.stdout[proc.stdout.rfind('Totals'):]
        self.addDetail('tempest', _text(summary or proc.stdout[-3000:]))
        counts = {key: int(n) for key, n in re.findall(
            r'- (Passed|Skipped|Failed): (\d+)', summary)}
        # stestr prints the failed tests' tracebacks after this line, then
        # their logs: the tracebacks say what failed.
        failed = proc.stdout.find(' - output below:')
        self.assertEqual({'Passed': expected, 'Skipped': 0, 'Failed': 0},
                         counts, (proc.stdout[failed:failed + 8000]
                                  if failed >= 0 else proc.stdout[-6000:])
                         + proc.stderr[-2000:])


def _text(value):
    from testtools import content
    return content.text_content(value)
