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

"""A server's life across two compute hosts of a real Nova cloud.

The cloud of :mod:`iotguard.tests.fixtures.cloud` with ``hosts=2``: two
simulated compute hosts (:mod:`iotguard.tests.fixtures.hosts`, each its own
namespaces, libvirtd and nova-compute), Nova's disks and Cinder's volumes
on one Ceph (RBD pools ``vms`` and ``volumes``). Started once for the
class (~70-80 s on 2 cores); each test boots its own busybox server on
host 1 and moves it to host 2 through the compute API, as an operator
would: live migration (shared RBD storage, no block migration, libvirt's
peer-to-peer migration over TCP), evacuation (host 1 dies and is forced
down) and cold migration (Nova's ssh between the hosts). What is asserted
is where the guest runs: in host 2's libvirtd and no longer in host 1's.

Measured: live migration 6-8 s, evacuation ~20 s, cold migration ~14 s
(+2 s confirm).

iotguard runs beside it as an operator of a Ceph-backed cloud would
deploy it (:mod:`iotguard.tests.fixtures.deployment`): the API and two
controllers sharing the domains over tooz (Redis) on the machine, one
agent in each compute host. The Ceph cluster's OSD sits on BlueStore
behind a known throttle (``CAPACITY``), and Nova's ``vms`` pool and
Cinder's ``volumes`` pool on it are one domain, declared once
(``[membership] ephemeral_domain``, ``volume_domains``) and calibrated
with the throttle's figures. The noisy-neighbour test reads each guest's
rate itself, from the libvirtd of the host it runs on.
"""

import os
import shutil
import statistics
import time
import unittest
import urllib.parse
import uuid

import fixtures
try:
    import libvirt
except ImportError:
    libvirt = None

from iotguard.tests import base
from iotguard.tests.fixtures import ceph as ceph_fixture
from iotguard.tests.fixtures import cloud as cloud_fixture
from iotguard.tests.fixtures import database
from iotguard.tests.fixtures import deployment
from iotguard.tests.fixtures import hosts as hosts_fixture

MIB = 1 << 20
#: What the throttled OSD serves (reads and writes each): the truth.
CAPACITY = {'iops': 400, 'bytes_sec': 4 * MIB}
STATIC = 40 * MIB           # the flavors' quota:disk_total_bytes_sec
VOLUME_STATIC = 48 * MIB    # the volume type's front-end QoS
FLOOR = 768 << 10           # mh-silver's floor (bytes/s)
CEILING = 2 * MIB           # mh-bronze's ceiling
INTERVAL, LEASE, SAMPLE = 2.0, 8.0, 1.0
WINDOW = 5.0
DOMAIN = 'ceph:cluster'
LOCAL = 'local:'
RESOURCE_CLASS = 'CUSTOM_IOTGUARD_FLOOR'
#: The noisy guest: four writers of 64 KiB blocks side by side, as fast as
#: the storage lets them (the quiet one has one, and pauses).
NOISY = '''for i in 1 2 3 4; do
    (while true; do
        [ -b /dev/%(dev)s ] || { sleep 1; continue; }
        dd if=/dev/zero of=/dev/%(dev)s bs=64k count=64 seek=$((i * 64)) \\
            oflag=direct 2>/dev/null
    done) &
done
wait
'''
#: A guest writing its root disk and its volume, one writer each.
BOTH = '''for dev in vda vdb; do
    (while true; do
        [ -b /dev/$dev ] || { sleep 1; continue; }
        dd if=/dev/zero of=/dev/$dev bs=64k count=64 seek=64 \\
            oflag=direct 2>/dev/null
    done) &
done
wait
'''
REDIS = os.environ.get('IOTGUARD_TEST_REDIS_URL', 'redis://127.0.0.1:6379')
EXTRA = '''
[membership]
ephemeral_domain = %(domain)s
volume_domains = ceph:%(domain)s
[coordination]
backend_url = %(redis)s
group_name = %(group)s
member_timeout = 2
[placement]
enabled = true
unit_bytes_sec = %(unit)s
[tiers]
flavor_tiers = mh-floor:mh-silver
'''
#: One floor unit: the domain's own bytes/s per operation (see
#: test_floors_fill_the_domain).
UNIT = CAPACITY['bytes_sec'] / CAPACITY['iops']


class TwoHosts(base.TestCase):
    """What the tests on a two-host cloud ask Nova and Placement."""

    @classmethod
    def start(cls, cloud, flavor, extra):
        """``cloud`` started, then iotguard beside it (``_start_iotguard``).

        ``flavor``: the name of the static flavor (``cls.flavor``);
        ``extra``: iotguard's config beyond the deployment's.
        """
        try:
            cls.cloud = cls.class_fixture(cloud)
            cls.flavor = cls.cloud.flavor(flavor, {
                'quota:disk_total_bytes_sec': str(STATIC)})
            db = cls.class_fixture(database.Database('mysql'))
            cls.iotguard = cls.class_fixture(deployment.Deployment(
                cls.cloud, db.url, INTERVAL, LEASE, SAMPLE, extra=extra))
            cls._start_iotguard()
        except BaseException:
            cls.tearDownClass()
            raise

    def _delete(self, server):
        compute = self.cloud.conn.compute
        compute.delete_server(server, ignore_missing=True)
        compute.wait_for_delete(server, wait=120)

    def placement(self, path):
        return self.cloud.conn.placement.get(
            path, microversion='1.39').json()

    def floor_provider(self, name='iotguard:' + DOMAIN):
        """Provider ``name`` once it has its floor inventory.

        A shared domain's is ``iotguard:<domain>``, a host-local one's
        ``<host>:iotguard`` (a child of the compute node).
        """
        found = self.placement('/resource_providers?name='
                               + name)['resource_providers']
        if not found:
            return None
        inventories = self.placement('/resource_providers/%s/inventories'
                                     % found[0]['uuid'])['inventories']
        return found[0]['uuid'] if RESOURCE_CLASS in inventories else None

    def refusal(self, server, response):
        """Why Nova refused a server action, once it did.

        nova-api answers at once (400) what it waits for (a live
        migration before compute API 2.34); what it casts to the
        conductor (a resize) is accepted (202) and refused in the
        instance action's failed event (compute API 2.84 shows its
        details). None if there is no refusal within two minutes.
        """
        if response.status_code == 400:
            return response.text
        self.assertEqual(202, response.status_code, response.text)
        path = '/servers/%s/os-instance-actions/%s' % (
            server.id, response.headers['x-openstack-request-id'])

        def failed():
            action = self.cloud.conn.compute.get(
                path, microversion='2.84').json()['instanceAction']
            return ' '.join(e.get('details') or e['event']
                            for e in action['events']
                            if e['result'] == 'Error') or None
        return base.wait_for(failed, 120, 1.0)


def unavailable():
    """Why the two-host Ceph cloud cannot run here; None if it can."""
    for why in (cloud_fixture.unavailable(),
                hosts_fixture.unavailable(ssh=True),
                ceph_fixture.unavailable(),
                None if shutil.which('ceph-mgr') else
                'ceph-mgr not installed (bindep.txt)',
                ceph_fixture.unavailable('bluestore'),
                None if libvirt else 'libvirt-python not installed',
                database.unavailable('mysql')):
        if why:
            return why
    return None


def ceph_cloud(workdir=None):
    """The two-host cloud on one throttled Ceph cluster (a fixture)."""
    return cloud_fixture.Cloud(
        workdir, cinder=True, hosts=2, ephemeral_rbd=True,
        ceph_options=dict(CAPACITY, store='bluestore'))


def ceph_extra(group):
    """iotguard's config on that cloud, its controllers in tooz ``group``."""
    return EXTRA % {'domain': DOMAIN, 'redis': REDIS, 'unit': UNIT,
                    'group': group}


def start_iotguard(cloud, iotguard):
    """The operator's steps on the Ceph cloud; its tier flavors.

    The cluster's domain calibrated with what it serves, two controllers
    (``controller-1``, ``controller-2``), an agent in each compute host
    (``agent-<host>``), the tiers mh-silver and mh-bronze. Returns the
    mh-floor flavor (its floor written by the API's tier sync, ``[tiers]
    flavor_tiers``) and ``{'silver': flavor, 'bronze': flavor}``.
    """
    proc = iotguard.manage(
        'domain', 'calibrate', DOMAIN, '--iops-4k',
        str(CAPACITY['iops']), '--bytes-sec', str(CAPACITY['bytes_sec']),
        '--form', 'max', '--create', '--kind', 'ceph')
    if proc.returncode:
        raise RuntimeError(proc.stderr)
    for n in (1, 2):
        iotguard.spawn('controller-%d' % n, 'controller',
                       'iotguard-controller-%d' % n)
    for host in cloud.hosts:
        iotguard.spawn('agent-' + host.name, 'agent', host.name,
                       popen=host.popen)
    floor_flavor = cloud.flavor('mh-floor')
    for name, body in (('mh-silver', {'min_bytes_sec': FLOOR}),
                       ('mh-bronze', {'max_bytes_sec': CEILING})):
        resp = iotguard.request('POST', '/v1/tiers', dict(body, name=name))
        if resp.status_code != 201:
            raise RuntimeError('tier %s: %s' % (name, resp.text))
    return floor_flavor, {tier: cloud.flavor('mh-' + tier, {
        'quota:disk_total_bytes_sec': str(STATIC),
        'iotguard:tier': 'mh-' + tier}) for tier in ('silver', 'bronze')}


class MultiHostCloudTest(TwoHosts):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        why = unavailable()
        if why:
            raise unittest.SkipTest(why)
        cls.group = 'iotguard-mh-' + uuid.uuid4().hex[:8]
        cls.start(ceph_cloud(os.environ.get('IOTGUARD_CLOUD_DIR')),
                  'iotguard-multihost', ceph_extra(cls.group))

    @classmethod
    def _start_iotguard(cls):
        cls.floor_flavor, cls.flavors = start_iotguard(cls.cloud,
                                                       cls.iotguard)

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(300, gentle=True))
        self.host1, self.host2 = self.cloud.hosts

    def boot(self, name, flavor=None, host=None, **kwargs):
        """A server on host 1 (or ``host``), deleted at the end."""
        host = host or self.host1
        server = self.cloud.boot(name, flavor or self.flavor, host=host,
                                 **kwargs)
        self.addCleanup(self._delete, server)
        self.assertEqual(host.name, server.compute_host)
        self.assertRunsOn(host, server)
        return server

    # -- what each host's libvirtd says --------------------------------
    @staticmethod
    def _domain(host, server, what):
        conn = libvirt.open(host.libvirt_uri)
        try:
            return what(conn.lookupByUUIDString(server.id))
        finally:
            conn.close()

    def written(self, host, server, dev='vda'):
        """Bytes the guest wrote to ``dev``, as ``host``'s libvirtd says."""
        return self._domain(host, server, lambda d: d.blockStats(dev)[3])

    def iotune(self, host, server, dev='vda', persistent=False):
        flags = (libvirt.VIR_DOMAIN_AFFECT_CONFIG if persistent
                 else libvirt.VIR_DOMAIN_AFFECT_LIVE)
        return self._domain(host, server,
                            lambda d: d.blockIoTune(dev, flags))

    def capped_on(self, host, server, dev='vda'):
        """The live total bytes/s limit on ``host`` if below the quota."""
        try:
            limit = self.iotune(host, server, dev)['total_bytes_sec']
        except libvirt.libvirtError:
            return None             # not (or no longer) there
        return limit if 0 < limit < STATIC else None

    def windows(self, guests, count):
        """Per WINDOW: bytes/s each ``(host, server, dev)`` wrote."""
        rows = []
        last = {name: self.written(*g) for name, g in guests.items()}
        began = time.monotonic()
        for _ in range(count):
            time.sleep(WINDOW)
            now = {name: self.written(*g) for name, g in guests.items()}
            took, began = time.monotonic() - began, time.monotonic()
            rows.append({name: (now[name] - last[name]) / took
                         for name in guests})
            last = now
        return rows

    def caps(self, server, dev='vda'):
        disk = (self.iotguard.disks(server) or {}).get(dev) or {}
        cap = disk.get('cap') or {}
        return (cap.get('limits') or {}).get('total_bytes_sec')

    def assertRunsOn(self, host, server):
        """``server`` runs in ``host``'s libvirtd and in no other's."""
        for other in self.cloud.hosts:
            if other is host:
                self.assertIn(server.instance_name, other.domains())
            else:
                self.assertNotIn(server.instance_name, other.domains())
        # Its root disk is an RBD image in the pool vms, wherever it runs.
        xml = host.run(['virsh', 'dumpxml', server.instance_name]).stdout
        self.assertIn("name='%s/%s_disk'" % (cloud_fixture.VMS_POOL,
                                             server.id), xml)

    def qos_volume(self, name):
        """A volume whose type has mh-bronze and a front-end QoS."""
        storage = self.cloud.conn.block_storage
        vtype = storage.find_type('mh-bronze-qos')
        if vtype is None:
            vtype = storage.create_type(name='mh-bronze-qos', extra_specs={
                'iotguard:tier': 'mh-bronze'})
            qos = storage.create_qos_spec(
                name='mh-bronze-qos', consumer='front-end',
                total_bytes_sec=str(VOLUME_STATIC))
            storage.associate_qos_spec(qos, vtype.id)
        return self.cloud.volume(name, vtype.name)

    def test_live_migration(self):
        """Live, to host 2, shared RBD storage: no block migration.

        The guest's volume has a type with a tier and a front-end QoS: its
        cap follows too, and the QoS stays its static ceiling.
        """
        volume = self.qos_volume('live-migrated')
        server = self.boot('live-migrated', self.flavors['bronze'],
                           volumes=[volume], user_data=BOTH)
        self.assertCapped(self.host1, server)
        self.assertCapped(self.host1, server, dev='vdb')
        self.assertEqual(VOLUME_STATIC, self.iotune(
            self.host1, server, 'vdb', persistent=True)['total_bytes_sec'])
        self.cloud.conn.compute.live_migrate_server(
            server, host=self.host2.name, block_migration=False)
        server = self.cloud.settle(
            server, lambda s: s.compute_host == self.host2.name)
        self.assertEqual(('ACTIVE', self.host2.name),
                         (server.status, server.compute_host))
        self.assertRunsOn(self.host2, server)
        xml = self.host2.run(['virsh', 'dumpxml',
                              server.instance_name]).stdout
        self.assertIn('volume-%s' % volume.id, xml)
        # The live cap moves with the guest and host 2's agent takes it
        # over. Nova persists the migrated live definition on host 2, the
        # cap with it: host 2's agent recognises its cap there and writes
        # the quota back (assertCapFollows checks the definition).
        self.assertCapFollows(server, self.host2)
        self.assertCapFollows(server, self.host2, 'vdb', VOLUME_STATIC)

    def test_evacuation(self):
        """Host 1 dies, is forced down; the server is rebuilt on host 2."""
        server = self.boot('evacuated', self.flavors['bronze'])
        self.assertCapped(self.host1, server)
        self.addCleanup(self.cloud.recover_host, self.host1)
        self.cloud.fail_host(self.host1)
        # 2.94: the server comes back ACTIVE (2.95 would leave it stopped).
        response = self.cloud.conn.compute.post(
            '/servers/%s/action' % server.id, json={'evacuate': {}},
            microversion='2.94')
        self.assertEqual(200, response.status_code, response.text)
        server = self.cloud.settle(
            server, lambda s: (s.compute_host == self.host2.name
                               and s.status == 'ACTIVE'))
        self.assertEqual(('ACTIVE', self.host2.name),
                         (server.status, server.compute_host))
        self.assertRunsOn(self.host2, server)
        self.assertCapFollows(server, self.host2)

    def test_cold_migration(self):
        """Cold, to host 2 (Nova's ssh between the hosts), confirmed."""
        server = self.boot('cold-migrated', self.flavors['bronze'])
        self.assertCapped(self.host1, server)
        response = self.cloud.conn.compute.post(
            '/servers/%s/action' % server.id,
            json={'migrate': {'host': self.host2.name}}, microversion='2.56')
        self.assertEqual(202, response.status_code, response.text)
        server = self.cloud.settle(
            server, lambda s: s.status == 'VERIFY_RESIZE')
        self.assertEqual(('VERIFY_RESIZE', self.host2.name),
                         (server.status, server.compute_host))
        self.cloud.conn.compute.confirm_server_resize(server)
        server = self.cloud.settle(server, lambda s: s.status == 'ACTIVE')
        self.assertEqual(('ACTIVE', self.host2.name),
                         (server.status, server.compute_host))
        self.assertRunsOn(self.host2, server)
        self.assertCapFollows(server, self.host2)

    def test_floors_fill_the_domain(self):
        """The domain holds one mh-silver floor: the next one fits nowhere.

        The controllers put the Ceph domain in Placement (a sharing
        provider of both hosts, with ``UNIT``: 360 units), the API's tier
        sync gave the mh-floor flavor mh-silver's 267; Nova's scheduler
        places the first server and refuses the second on either host.
        """
        provider = base.wait_for(self.floor_provider, 90, 1.0)
        self.assertTrue(provider, 'the domain never reached Placement')
        specs = self.cloud.conn.compute.fetch_flavor_extra_specs(
            self.floor_flavor).extra_specs
        units = int(specs['resources:' + RESOURCE_CLASS])
        total = self.placement('/resource_providers/%s/inventories'
                               % provider)['inventories'][RESOURCE_CLASS][
                                   'total']
        self.assertEqual((267, 360), (units, total))
        aggregates = self.placement('/resource_providers/%s/aggregates'
                                    % provider)['aggregates']
        for host in self.cloud.hosts:
            node = self.placement('/resource_providers?name='
                                  + host.name)['resource_providers'][0]
            self.assertEqual(aggregates, [a for a in self.placement(
                '/resource_providers/%s/aggregates' % node['uuid'])[
                    'aggregates'] if a in aggregates])

        first = self.cloud.boot('floor-1', self.floor_flavor)
        self.addCleanup(self._delete, first)
        self.assertEqual('ACTIVE', first.status)
        self.assertEqual({RESOURCE_CLASS: units}, self.placement(
            '/resource_providers/%s/usages' % provider)['usages'])
        # iotguard gave the flavor's tier, admitted: its committed floors
        # are the units Placement counts.
        self.assertTrue(base.wait_for(lambda: (
            (self.iotguard.disks(first) or {}).get('vda') or {}).get(
                'tier') == 'mh-silver', 60, 0.5), self.iotguard.disks(first))

        compute = self.cloud.conn.compute
        second = compute.create_server(
            name='floor-2', flavor_id=self.floor_flavor.id,
            image_id=self.cloud.images['disk'], networks='none')
        self.addCleanup(self._delete, second)
        second = self.cloud.settle(second, lambda s: s.status != 'BUILD')
        self.assertEqual('ERROR', second.status)
        self.assertIn('No valid host', second.fault['message'])
        self.assertEqual({RESOURCE_CLASS: units}, self.placement(
            '/resource_providers/%s/usages' % provider)['usages'])
        self._moves_into_the_full_domain(first, provider, units)

    def _moves_into_the_full_domain(self, first, provider, units):
        """Resize and moves while the domain is full: all refused.

        A floorless server resized to mh-floor; ``first`` live-migrated
        to the other host, the scheduler asked (on a sharing provider the
        move would hold the floor twice until it ends), and forced there
        (``force``, compute API 2.30 to 2.67), which Nova refuses for an
        allocation on more than one provider. Each time the server stays
        where and as it was, and Placement's usage is the units of the
        floors iotguard committed in the domain.
        """
        other = self.boot('floor-resized', self.flavors['bronze'])
        compute = self.cloud.conn.compute
        target = next(h.name for h in self.cloud.hosts
                      if h.name != first.compute_host)
        for server, body in (
                (other, {'resize': {'flavorRef': self.floor_flavor.id}}),
                (first, {'os-migrateLive': {
                    'host': target, 'block_migration': False}}),
                (first, {'os-migrateLive': {
                    'host': target, 'block_migration': False,
                    'force': True}})):
            response = compute.post('/servers/%s/action' % server.id,
                                    json=body, microversion='2.30')
            refusal = self.refusal(server, response)
            self.assertIn('No valid host', refusal)
            if 'force' in body.get('os-migrateLive', {}):
                self.assertIn('complex allocations', refusal)
            after = self.cloud.settle(server, lambda s: True)
            self.assertEqual(
                ('ACTIVE', server.compute_host, server.flavor.name),
                (after.status, after.compute_host, after.flavor.name))

            def tiers():
                return [((self.iotguard.disks(s) or {}).get('vda') or {})
                        .get('tier') for s in (first, other)]
            self.assertTrue(base.wait_for(
                lambda: tiers() == ['mh-silver', 'mh-bronze'], 60, 0.5),
                tiers())
            self.assertEqual({RESOURCE_CLASS: units}, self.placement(
                '/resource_providers/%s/usages' % provider)['usages'])

    # -- iotguard across the hosts ------------------------------------
    def assertCapped(self, host, server, timeout=60, dev='vda'):
        """``dev`` (a mh-bronze disk) capped at its ceiling on ``host``."""
        capped = base.wait_for(lambda: self.capped_on(host, server, dev),
                               timeout, 0.2)
        self.assertTrue(capped, 'never capped on %s: %s' % (
            host.name, self.iotguard.disks(server)))
        self.assertLessEqual(capped, CEILING * 1.01)
        return capped

    def assertCapFollows(self, server, dest, dev='vda', static=STATIC):
        """After a move: ``dev`` capped on ``dest`` again, ``static`` kept.

        Within four intervals of the move (membership follows Nova's
        notification, the owner decides, the agent of ``dest`` applies);
        the cap only live, the persistent definition keeps the flavor's
        quota (the volume type's QoS for a volume); iotguard knows the
        disk on ``dest``, in the same domain.
        """
        began = time.monotonic()
        self.assertTrue(base.wait_for(
            lambda: (self.iotguard.disks(server) or {}).get(dev, {})
            .get('host') == dest.name, 4 * INTERVAL, 0.2),
            self.iotguard.disks(server))
        self.assertCapped(dest, server, 4 * INTERVAL + 2 * SAMPLE, dev)
        self.addDetail('seconds from the move to %s capped on %s' % (
            dev, dest.name), _text('%.1f' % (time.monotonic() - began)))
        self.assertEqual(DOMAIN, self.iotguard.disks(server)[dev]['domain'])
        # The agent of ``dest`` writes the static back when it first reads
        # the arrived domain (its next sampling pass), or at the next ones
        # while libvirt refuses it (the migration's job still running):
        # within a lease more on a loaded machine (the CI-equivalent run
        # once missed 10 s; it matters at the guest's next cold boot).
        persistent = base.wait_for(lambda: self.iotune(
            dest, server, dev, persistent=True)['total_bytes_sec'] == static,
            2 * SAMPLE + 4 * INTERVAL + LEASE, 0.2)
        self.assertTrue(persistent, self.iotune(dest, server, dev,
                                                persistent=True))

    def set_policy(self, policy):
        resp = self.iotguard.request(
            'PATCH', '/v1/domains/%s' % urllib.parse.quote(DOMAIN, ''),
            {'policy': policy})
        self.assertEqual(200, resp.status_code, resp.text)

    def known(self, server, host, dev='vda'):
        """The disk iotguard knows of ``server`` on ``host``."""
        disk = base.wait_for(
            lambda: ((self.iotguard.disks(server) or {}).get(dev) or {})
            .get('host') == host.name and self.iotguard.disks(server)[dev],
            60, 0.5)
        self.assertTrue(disk, self.iotguard.disks(server))
        self.assertEqual(DOMAIN, disk['domain'])
        return disk

    def test_noisy_neighbour_across_hosts(self):
        """A noisy guest on host 1 drags a quiet one on host 2; capped.

        Both root disks are RBD images of one throttled Ceph cluster: one
        domain, fed by both hosts' agents. Without iotguard (the domain's
        policy ``none``) the quiet guest falls far below its demand; with
        ``guarantee`` the noisy disk is capped by host 1's agent and the
        quiet guest is back at its demand, its floor kept in every settled
        window. Rates read here from each host's libvirtd.
        """
        self._noisy_neighbour('vda')

    def test_noisy_volume_next_to_a_quiet_ephemeral_disk(self):
        """The same, the noisy disk a Cinder volume on the same cluster.

        Nova's pool and Cinder's pool are one domain: the volume's writes
        are seen to drag the quiet guest's ephemeral disk, and capped.
        """
        self._noisy_neighbour('vdb',
                              volumes=[self.cloud.volume('mh-noisy-volume')])

    def _noisy_neighbour(self, dev, volumes=()):
        quiet = self.boot('mh-quiet', self.flavors['silver'], host=self.host2,
                          metadata={'iotg_bs': '64k', 'iotg_count': '16',
                                    'iotg_pause': '0.5'})
        disk = self.known(quiet, self.host2)
        self.assertTrue(base.wait_for(
            lambda: self.iotguard.disks(quiet)['vda']['tier'] ==
            'mh-silver', 45, 0.5), self.iotguard.disks(quiet))
        self.assertTrue(base.wait_for(lambda: self.written(
            self.host2, quiet) > 0, 60, 0.5), 'the quiet guest never wrote')
        demand = max(r['quiet'] for r in self.windows(
            {'quiet': (self.host2, quiet, 'vda')}, 2))
        self.set_policy('none')
        noisy = self.boot('mh-noisy', host=self.host1, volumes=volumes,
                          user_data=NOISY % {'dev': dev})
        self.known(noisy, self.host1, dev)
        self.assertTrue(base.wait_for(lambda: self.written(
            self.host1, noisy, dev) > 0, 60, 0.5),
            'the noisy guest never wrote')
        guests = {'quiet': (self.host2, quiet, 'vda'),
                  'noisy': (self.host1, noisy, dev)}
        without = self.windows(guests, 4)
        self.set_policy('guarantee')
        self.assertTrue(base.wait_for(lambda: self.capped_on(
            self.host1, noisy, dev), 10 * INTERVAL, 0.2),
            'the noisy disk was never capped: %s' % self.iotguard.disks(
                noisy))
        time.sleep(2 * INTERVAL + SAMPLE)
        with_ = []
        for _ in range(8):
            row, = self.windows(guests, 1)
            row['cap'] = self.caps(noisy, dev)
            with_.append(row)
        report = 'noisy disk %s\n%s' % (dev, self._report(demand, without,
                                                          with_))
        self.addDetail('windows', _text(report))
        path = os.environ.get('IOTGUARD_MULTIHOST_REPORT')
        if path:
            with open(path, 'a') as out:
                out.write(report + '\n')
        quiet_without = statistics.median(r['quiet'] for r in without)
        self.assertLess(quiet_without, 0.75 * demand,
                        'no effect to reproduce:\n' + report)
        kept = min(FLOOR, demand)
        for row in with_:
            self.assertGreaterEqual(row['quiet'], 0.9 * kept, report)
        # Beyond the floor (the contract, above), the quiet guest near its
        # demand once the cap settled: the policy finds what the quiet
        # guest asks beyond its floor in steps, from its rate under the
        # flood (an idle run, the noisy disk a volume: 0.56 of its demand
        # in the first window, 0.91 and 1.26 in the fifth and sixth; a
        # loaded CI run: a median of 0.56 over the first six), the array
        # runs full beside it and its QEMU shares 2 cores with the noisy
        # one's and the suite's.
        self.assertGreaterEqual(statistics.median(
            r['quiet'] for r in with_[-4:]), 0.7 * demand, report)
        self.assertIsNone(self.capped_on(self.host2, quiet), report)
        decisions = self.iotguard.request(
            'GET', '/v1/decisions?instance=%s&limit=5' % noisy.id).json()
        self.assertIn(DOMAIN, {d['domain'] for d in decisions['decisions']})
        self.assertEqual(disk['domain'], DOMAIN)

    @staticmethod
    def _report(demand, without, with_):
        lines = ['quiet demand alone %.0f KiB/s, floor %.0f KiB/s, '
                 'capacity %.0f KiB/s' % (demand / 1024, FLOOR / 1024,
                                          CAPACITY['bytes_sec'] / 1024),
                 'window  policy     quiet KiB/s  noisy KiB/s  cap KiB/s']
        for policy, rows in (('none', without), ('guarantee', with_)):
            for i, row in enumerate(rows):
                cap = row.get('cap')
                lines.append('%6d  %-9s  %11.0f  %11.0f  %9s' % (
                    i, policy, row['quiet'] / 1024, row['noisy'] / 1024,
                    '-' if not cap else '%.0f' % (cap / 1024)))
        return '\n'.join(lines)

    def test_owner_killed_caps_held_on_both_hosts(self):
        """Each controller killed in turn: no cap lapses on either host.

        Two mh-bronze guests, one per host, each capped at its ceiling by
        the owner of the shared domain. Whichever controller owns it, the
        other takes the domain over within the lease: the live limits on
        both hosts never go back to the quota.
        """
        one = self.boot('mh-held-1', self.flavors['bronze'])
        two = self.boot('mh-held-2', self.flavors['bronze'], host=self.host2)
        for host, server in ((self.host1, one), (self.host2, two)):
            self.assertCapped(host, server)
        for name in ('controller-1', 'controller-2'):
            self.iotguard.kill(name)
            deadline = time.monotonic() + LEASE + 3 * INTERVAL
            while time.monotonic() < deadline:
                for host, server in ((self.host1, one), (self.host2, two)):
                    self.assertIsNotNone(
                        self.capped_on(host, server),
                        'cap lapsed on %s after %s was killed' % (
                            host.name, name))
                time.sleep(0.2)
            n = name.rsplit('-', 1)[1]
            self.iotguard.spawn(name, 'controller',
                                'iotguard-controller-' + n)
            time.sleep(2 * INTERVAL)

    def test_a_host_cut_off_from_the_broker(self):
        """The noisy guest's host cut from RabbitMQ for 30 s, then back.

        One episode of ``python -m benchmarks.faults --cloud --fault
        agent-cut`` on this class's cloud (:mod:`benchmarks.cloudbed`: a
        quiet mh-silver guest on host 2, a noisy one on host 1): the cap
        lapses at its lease during the cut, not later; after the heal it
        is in force again within a few intervals (the owner sends leases
        on host 1's clock, whichever controller its batches reach), the
        quiet guest's floor kept, every decision applied read back once,
        no error line of iotguard's own, no process dead.
        """
        from benchmarks import cloudbed
        from benchmarks import faults
        workdir = self.useFixture(fixtures.TempDir()).path
        bed = self.useFixture(cloudbed.CloudBed(workdir, (
            self.cloud, self.iotguard, self.group, self.flavor,
            self.flavors)))
        bed.ready()
        result = faults.episode(bed, 'agent-cut', 1, 5.0, 30.0, 20.0)
        shown = faults.table([result]) + '\n%s' % result
        base.bed_report(self, shown)
        self.assertLessEqual(result.past_lease, INTERVAL + faults.POLL_S,
                             shown)
        self.assertIsNotNone(result.recapped, shown)
        self.assertLessEqual(result.recapped, 4 * INTERVAL, shown)
        self.assertIsNotNone(result.restore, shown)
        self.assertEqual((0, 0), (result.lost, result.duplicated), shown)
        self.assertEqual({}, {k: faults.own(v) for k, v in
                              result.errors.items() if faults.own(v)}, shown)
        self.assertEqual([], result.dead, shown)


#: The host-local cloud's iotguard: no shared domain, each host's disks in
#: its own ``local:<host>``, both in Placement under the compute nodes.
LOCAL_EXTRA = '''
[placement]
enabled = true
unit_bytes_sec = %(unit)s
[tiers]
flavor_tiers = lc-floor:lc-silver
'''


class LocalDisksCloudTest(TwoHosts):
    """Two hosts on local disks: a host-local domain each, in Placement.

    The cloud without Ceph (Nova's disks are files on each host, moved by
    block live migration); each host's domain is calibrated as the Ceph
    domain of :class:`MultiHostCloudTest` is, so one lc-silver floor
    (267 of 360 units) fills it.
    """

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        for why in (cloud_fixture.unavailable(),
                    hosts_fixture.unavailable(),
                    None if libvirt else 'libvirt-python not installed',
                    database.unavailable('mysql')):
            if why:
                raise unittest.SkipTest(why)
        cls.start(cloud_fixture.Cloud(
            os.environ.get('IOTGUARD_CLOUD_DIR'), hosts=2), 'iotguard-local',
            LOCAL_EXTRA % {'unit': UNIT})

    @classmethod
    def _start_iotguard(cls):
        cloud = cls.cloud
        for host in cloud.hosts:
            proc = cls.iotguard.manage(
                'domain', 'calibrate', LOCAL + host.name, '--iops-4k',
                str(CAPACITY['iops']), '--bytes-sec',
                str(CAPACITY['bytes_sec']), '--form', 'max', '--create',
                '--kind', 'local')
            if proc.returncode:
                raise RuntimeError(proc.stderr)
        cls.iotguard.spawn('controller', 'controller', 'iotguard-controller')
        for host in cloud.hosts:
            cls.iotguard.spawn('agent-' + host.name, 'agent', host.name,
                               popen=host.popen)
        cls.floor_flavor = cloud.flavor('lc-floor')
        resp = cls.iotguard.request('POST', '/v1/tiers', {
            'name': 'lc-silver', 'min_bytes_sec': FLOOR})
        if resp.status_code != 201:
            raise RuntimeError('tier lc-silver: %s' % resp.text)

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(600, gentle=True))

    def boot(self, name, flavor, host=None):
        server = self.cloud.boot(name, flavor, host=host)
        self.addCleanup(self._delete, server)
        self.assertEqual('ACTIVE', server.status)
        return server

    def usages(self, providers):
        """``{host: floor units Placement counts in its domain}``."""
        return {host: self.placement('/resource_providers/%s/usages' % p)[
            'usages'].get(RESOURCE_CLASS, 0)
            for host, p in providers.items()}

    def disk(self, server):
        return ((self.iotguard.disks(server) or {}).get('vda') or {})

    def test_each_host_holds_one_floor(self):
        """Full host -> the other; both full -> no host; moves refused.

        The first lc-floor server fills one host's domain, the second goes
        to the other host, the third fits nowhere. A block live migration
        of the first into the other (full) host is refused by the
        scheduler. A server whose tier was chosen through iotguard's API
        (its flavor asks Placement for nothing) is forced into a full host
        by an admin: membership admits it there again, refuses, and says
        so on the disk. Placement's usage is the committed floors throughout.
        """
        providers = {}
        for host in self.cloud.hosts:
            providers[host.name] = base.wait_for(
                lambda: self.floor_provider(host.name + ':iotguard'), 90,
                1.0)
            self.assertTrue(providers[host.name],
                            '%s never reached Placement' % host.name)
        units = int(self.cloud.conn.compute.fetch_flavor_extra_specs(
            self.floor_flavor).extra_specs['resources:' + RESOURCE_CLASS])
        self.assertEqual(267, units)

        first = self.boot('lc-1', self.floor_flavor)
        a = self.cloud.host(first)
        b = next(h for h in self.cloud.hosts if h is not a)
        self.assertEqual({a.name: units, b.name: 0}, self.usages(providers))
        second = self.boot('lc-2', self.floor_flavor)
        self.assertEqual(b.name, second.compute_host)
        self.assertEqual({a.name: units, b.name: units},
                         self.usages(providers))
        compute = self.cloud.conn.compute
        third = compute.create_server(
            name='lc-3', flavor_id=self.floor_flavor.id,
            image_id=self.cloud.images['disk'], networks='none')
        self.addCleanup(self._delete, third)
        third = self.cloud.settle(third, lambda s: s.status != 'BUILD')
        self.assertEqual('ERROR', third.status)
        self.assertIn('No valid host', third.fault['message'])
        for server, host in ((first, a), (second, b)):
            self.assertTrue(base.wait_for(
                lambda: self.disk(server).get('tier') == 'lc-silver', 60,
                0.5), self.iotguard.disks(server))
            self.assertEqual(LOCAL + host.name, self.disk(server)['domain'])

        response = compute.post('/servers/%s/action' % first.id, json={
            'os-migrateLive': {'host': b.name, 'block_migration': True}},
            microversion='2.30')
        self.assertIn('No valid host', self.refusal(first, response))
        first = self.cloud.settle(first, lambda s: True)
        self.assertEqual((a.name, 'ACTIVE'),
                         (first.compute_host, first.status))
        self.assertEqual({a.name: units, b.name: units},
                         self.usages(providers))

        # Room on b again; a server there takes lc-silver through the API.
        self._delete(second)
        self.assertTrue(base.wait_for(
            lambda: self.iotguard.disks(second) is None, 60, 0.5),
            'iotguard still has %s' % second.id)
        chosen = self.boot('lc-api', self.flavor, host=b)
        resp = self.iotguard.request('PUT', '/v1/instances/%s/tier'
                                     % chosen.id, {'tier': 'lc-silver'})
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertIsNone(self.disk(chosen).get('tier_refused'))
        # An admin forces it into a (the scheduler skipped; its flavor asks
        # Placement for nothing, so Nova copies its allocation there).
        response = compute.post('/servers/%s/action' % chosen.id, json={
            'os-migrateLive': {'host': a.name, 'block_migration': True,
                               'force': True}}, microversion='2.30')
        self.assertEqual(202, response.status_code, response.text)
        chosen = self.cloud.settle(chosen,
                                   lambda s: s.compute_host == a.name)
        self.assertEqual((a.name, 'ACTIVE'),
                         (chosen.compute_host, chosen.status))
        moved = base.wait_for(
            lambda: self.disk(chosen).get('tier_refused') and
            self.disk(chosen), 60, 0.5)
        self.assertTrue(moved, self.iotguard.disks(chosen))
        self.assertEqual(LOCAL + a.name, moved['domain'])
        self.assertEqual({a.name: units, b.name: 0}, self.usages(providers))


def _text(value):
    from testtools import content
    return content.text_content(value)
