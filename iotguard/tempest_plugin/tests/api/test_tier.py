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

"""Tiers: the admin's CRUD, what projects see and may do."""

from tempest.lib.common.utils import data_utils
from tempest.lib.common.utils import test_utils
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from iotguard.tempest_plugin.tests import base


class TierAdminTest(base.BaseIotguardTest):

    @decorators.idempotent_id('6a0d3f5e-1b8e-4d2c-9d4b-2f7c1e0a9b11')
    def test_create_show_update_delete(self) -> None:
        name = data_utils.rand_name(prefix='tempest', name='iotguard-tier')
        created = self.admin_client.create_tier(
            name=name, min_iops=200, max_iops=1000, weight=2,
            description='tempest')['tier']
        self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                        self.admin_client.delete_tier, name)
        self.assertEqual((name, 200.0, 1000.0, 2.0, True),
                         (created['name'], created['min_iops'],
                          created['max_iops'], created['weight'],
                          created['is_public']))
        shown = self.admin_client.show_tier(name)['tier']
        self.assertEqual(created['min_iops'], shown['min_iops'])
        self.assertIn(name, [t['name'] for t in
                             self.admin_client.list_tiers()['tiers']])
        updated = self.admin_client.update_tier(name, min_iops=300)['tier']
        self.assertEqual(300.0, updated['min_iops'])
        self.assertEqual('tempest', updated['description'])
        self.admin_client.delete_tier(name)
        self.assertRaises(lib_exc.NotFound, self.admin_client.show_tier,
                          name)

    @decorators.idempotent_id('0f6c4f2b-7a55-4b8e-8f0e-8d7d0a6c2b22')
    def test_floor_above_ceiling_is_refused(self) -> None:
        self.assertRaises(
            lib_exc.BadRequest, self.admin_client.create_tier,
            name=data_utils.rand_name(prefix='tempest', name='bad'),
            min_iops=500, max_iops=100)

    @decorators.idempotent_id('c2b8a1d4-3e9f-4a7b-b6c5-1d0e9f8a7b33')
    def test_duplicate_name_is_a_conflict(self) -> None:
        tier = self.create_tier()
        self.assertRaises(lib_exc.Conflict, self.admin_client.create_tier,
                          name=tier['name'])


class TierProjectTest(base.BaseIotguardTest):

    @decorators.idempotent_id('3d1e5b7a-9c2f-4e8d-a1b0-7c6d5e4f3a44')
    def test_project_cannot_change_tiers(self) -> None:
        tier = self.create_tier()
        self.assertRaises(lib_exc.Forbidden, self.client.create_tier,
                          name=data_utils.rand_name(prefix='tempest',
                                                    name='mine'))
        self.assertRaises(lib_exc.Forbidden, self.client.update_tier,
                          tier['name'], weight=10)
        self.assertRaises(lib_exc.Forbidden, self.client.delete_tier,
                          tier['name'])

    @decorators.idempotent_id('8e7f6a5b-4c3d-4b2a-9e1f-0a9b8c7d6e55')
    def test_private_tier_only_for_its_projects(self) -> None:
        project = self.os_primary.credentials.project_id
        private = self.create_tier(is_public=False, projects=[project])
        public = self.create_tier()
        mine = [t['name'] for t in self.client.list_tiers()['tiers']]
        self.assertIn(private['name'], mine)
        self.assertIn(public['name'], mine)
        self.assertNotIn('projects', self.client.show_tier(
            private['name'])['tier'])
        theirs = [t['name'] for t in self.alt_client.list_tiers()['tiers']]
        self.assertNotIn(private['name'], theirs)
        self.assertIn(public['name'], theirs)
        self.assertRaises(lib_exc.NotFound, self.alt_client.show_tier,
                          private['name'])
