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

"""A project picks the tier of its server; other projects see nothing."""

from tempest.common import utils
from tempest import config
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from iotguard.tempest_plugin.tests import base

CONF = config.CONF


class NovaTest(base.BaseIotguardTest):
    """Needs Nova: iotguard learns the server's disks from its events."""

    @classmethod
    def skip_checks(cls) -> None:
        super().skip_checks()
        if not CONF.service_available.nova:
            raise cls.skipException('Nova is not available')


class InstanceTierTest(NovaTest):
    """A project's tier choices on its server's disks."""

    @classmethod
    def resource_setup(cls) -> None:
        super().resource_setup()
        # No floor: admitted on any domain, calibrated or not. The tiers
        # come first, so that they are deleted after the server.
        cls.weight_only = cls.create_tier(weight=3)
        cls.impossible = cls.create_tier(min_iops=1e12)
        cls.server = cls.create_server(cls.os_primary)
        cls.instance = cls.wait_for_instance(cls.client, cls.server['id'])

    @decorators.idempotent_id('5b4a3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c66')
    @utils.services('compute')
    def test_disks_are_known(self) -> None:
        self.assertEqual(self.server['id'], self.instance['uuid'])
        self.assertEqual(self.os_primary.credentials.project_id,
                         self.instance['project_id'])
        self.assertTrue(self.instance['disks'])
        for disk in self.instance['disks']:
            # Topology is the admin's (iotguard:disk:topology).
            self.assertTrue(disk['domain_id'])
            self.assertNotIn('host', disk)
            self.assertNotIn('domain', disk)
            self.assertIn(disk['tier_source'],
                          (None, 'api', 'flavor', 'volume_type',
                           'default'))

    @decorators.idempotent_id('9a8b7c6d-5e4f-4321-a0b9-c8d7e6f5a477')
    @utils.services('compute')
    def test_project_sets_tier(self) -> None:
        answer = self.client.set_instance_tier(
            self.server['id'], self.weight_only['name'])['instance']
        self.assertEqual(self.weight_only['name'], answer['tier'])
        self.assertIn(answer['nova_metadata'], ('synced', 'disabled'))
        disks = self.client.show_instance(self.server['id'])['instance'][
            'disks']
        self.assertEqual({(self.weight_only['name'], 'api')},
                         {(d['tier'], d['tier_source']) for d in disks})

    @decorators.idempotent_id('1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e88')
    @utils.services('compute')
    def test_admission_refusal_changes_nothing(self) -> None:
        before = self.client.show_instance(self.server['id'])['instance']
        exc = self.assertRaises(lib_exc.Conflict,
                                self.client.set_instance_tier,
                                self.server['id'], self.impossible['name'])
        self.assertIn(self.impossible['name'], str(exc.resp_body))
        after = self.client.show_instance(self.server['id'])['instance']
        self.assertEqual([d['tier'] for d in before['disks']],
                         [d['tier'] for d in after['disks']])

    @decorators.idempotent_id('2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f99')
    @utils.services('compute')
    def test_other_project_sees_and_changes_nothing(self) -> None:
        uuid = self.server['id']
        self.assertRaises(lib_exc.NotFound, self.alt_client.show_instance,
                          uuid)
        self.assertRaises(lib_exc.NotFound,
                          self.alt_client.set_instance_tier, uuid,
                          self.weight_only['name'])
        self.assertEqual([], self.alt_client.list_decisions(
            instance=uuid)['decisions'])
        disk = self.admin_client.show_instance(uuid)['instance']['disks'][0]
        # The project knows the domain by its opaque id only.
        mine = self.client.list_domains()['domains']
        self.assertIn(disk['domain_id'], [d['domain_id'] for d in mine])
        self.assertNotIn(disk['domain'], str(mine))
        seen = self.client.show_domain(disk['domain_id'])['domain']
        self.assertEqual({self.os_primary.credentials.project_id},
                         {d['project_id'] for d in seen['disks']})
        self.assertNotIn('committed', seen)
        self.assertRaises(lib_exc.NotFound, self.client.show_domain,
                          disk['domain'])
        self.assertRaises(lib_exc.NotFound, self.alt_client.show_domain,
                          disk['domain_id'])

    @decorators.idempotent_id('3e4f5a6b-7c8d-4e9f-a0b1-2c3d4e5f6a00')
    @utils.services('compute')
    def test_admin_sees_domain_figures(self) -> None:
        disk = self.admin_client.show_instance(self.server['id'])[
            'instance']['disks'][0]
        self.assertTrue(disk['host'])
        domain = disk['domain']
        shown = self.admin_client.show_domain(domain)['domain']
        self.assertEqual(1.0, shown['capacity'])
        self.assertIn(self.server['id'],
                      [d['instance_uuid'] for d in shown['disks']])
        page = self.admin_client.list_decisions(limit=1)
        self.assertLessEqual(len(page['decisions']), 1)


class ReaderSeesNoTopologyTest(NovaTest):
    """A project reader: its disks' opaque domain_id, no host, no domain."""

    # The project_* personas share one project: the member makes the
    # server, the reader looks at it.
    credentials = ['project_member', 'project_reader', 'alt', 'admin']

    @classmethod
    def setup_clients(cls) -> None:
        cls.os_primary = cls.os_project_member
        super().setup_clients()
        cls.reader = cls.os_project_reader.iotguard_v1.IotguardClient()

    @classmethod
    def resource_setup(cls) -> None:
        super().resource_setup()
        cls.server = cls.create_server(cls.os_project_member)
        cls.instance = cls.wait_for_instance(cls.reader, cls.server['id'])

    @decorators.idempotent_id('7c1e5a9d-3b2f-4e60-8a4d-2f9b6c0e1d37')
    @utils.services('compute')
    def test_reader_sees_opaque_domain_id_only(self) -> None:
        admin = self.admin_client.show_instance(self.server['id'])[
            'instance']['disks']
        listed = [d for i in self.reader.list_instances()['instances']
                  for d in i['disks'] if i['uuid'] == self.server['id']]
        for disks in (self.instance['disks'], listed):
            self.assertEqual([d['domain_id'] for d in admin],
                             [d['domain_id'] for d in disks])
            for disk, real in zip(disks, admin):
                self.assertNotIn('host', disk)
                self.assertNotIn('domain', disk)
                self.assertNotIn(real['host'], str(disk))
                self.assertNotIn(real['domain'], str(disk))
        self.assertRaises(lib_exc.Forbidden, self.reader.set_instance_tier,
                          self.server['id'], 'any')
