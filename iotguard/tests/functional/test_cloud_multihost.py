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

These are the moves iotguard must follow (a guest's throttle belongs to
the host the guest is on); the test is the fixture's proof that they work
here. Measured: live migration 6-8 s, evacuation ~20 s, cold migration
~14 s (+2 s confirm).
"""

import os
import shutil
import unittest

import fixtures

from iotguard.tests import base
from iotguard.tests.fixtures import ceph as ceph_fixture
from iotguard.tests.fixtures import cloud as cloud_fixture
from iotguard.tests.fixtures import database
from iotguard.tests.fixtures import hosts as hosts_fixture


class MultiHostCloudTest(base.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        for why in (cloud_fixture.unavailable(),
                    hosts_fixture.unavailable(ssh=True),
                    ceph_fixture.unavailable(),
                    None if shutil.which('ceph-mgr') else
                    'ceph-mgr not installed (bindep.txt)',
                    database.unavailable('mysql')):
            if why:
                raise unittest.SkipTest(why)
        cls.cloud = cloud_fixture.Cloud(
            os.environ.get('IOTGUARD_CLOUD_DIR'), cinder=True, hosts=2,
            ephemeral_rbd=True)
        cls.cloud.setUp()     # cleans up after itself if it fails
        cls.flavor = cls.cloud.flavor('iotguard-multihost', {
            'quota:disk_total_bytes_sec': str(40 << 20)})

    @classmethod
    def tearDownClass(cls):
        cls.cloud.cleanUp()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(300, gentle=True))
        self.host1, self.host2 = self.cloud.hosts

    def boot(self, name, **kwargs):
        """A server on host 1, deleted at the end of the test."""
        server = self.cloud.boot(name, self.flavor, host=self.host1,
                                 **kwargs)
        self.addCleanup(self._delete, server)
        self.assertEqual(self.host1.name, server.compute_host)
        self.assertRunsOn(self.host1, server)
        return server

    def _delete(self, server):
        compute = self.cloud.conn.compute
        compute.delete_server(server, ignore_missing=True)
        compute.wait_for_delete(server, wait=120)

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

    def test_live_migration(self):
        """Live, to host 2, shared RBD storage: no block migration."""
        volume = self.cloud.volume('live-migrated')
        server = self.boot('live-migrated', volumes=[volume])
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

    def test_evacuation(self):
        """Host 1 dies, is forced down; the server is rebuilt on host 2."""
        server = self.boot('evacuated')
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

    def test_cold_migration(self):
        """Cold, to host 2 (Nova's ssh between the hosts), confirmed."""
        server = self.boot('cold-migrated')
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
