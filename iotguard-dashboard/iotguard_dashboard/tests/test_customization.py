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

"""iotguard_dashboard.customization: "Change I/O tier" in Horizon's
instances table, loaded as HORIZON_CONFIG['customization_module'] (the
tests' settings name it, as the install guide has an operator do)."""

import importlib
from unittest import mock
import urllib.parse

from django.conf import settings
from django.urls import reverse
from openstack_dashboard.dashboards.project.instances import tables
from openstack_dashboard.test import helpers

from iotguard_dashboard.api import iotguard
from iotguard_dashboard.content.project.iotguard_disks import (
    tables as disk_tables)
from iotguard_dashboard import customization
from iotguard_dashboard.tests import test_panels as data

INSTANCES = '/project/instances/'


def _row_actions(test):
    """Our row actions in Horizon's instances table, by name.

    Ours alone (Horizon's own ask Nova and Neutron), for a server of
    Horizon's test data.
    """
    test.request.get_full_path = lambda: INSTANCES
    server = test.servers.first()
    table = tables.InstancesTable(test.request, data=[server])
    with mock.patch.object(table._meta, 'row_actions',
                           (disk_tables.ChangeServerTier,)):
        return {a.name: a for a in table.get_row_actions(server)}


class InstancesTableTests(data.CatalogMixin, helpers.TestCase):

    def test_loaded_by_horizon(self):
        self.assertEqual('iotguard_dashboard.customization',
                         settings.HORIZON_CONFIG['customization_module'])
        actions = tables.InstancesTable._meta.row_actions
        self.assertEqual(1, actions.count(disk_tables.ChangeServerTier))
        self.assertEqual(tables.ResizeLink, actions[actions.index(
            disk_tables.ChangeServerTier) - 1])
        # Imported again (another customization module importing it):
        # still once.
        importlib.reload(customization)
        self.assertEqual(1, tables.InstancesTable._meta.row_actions.count(
            disk_tables.ChangeServerTier))

    def test_a_servers_row_opens_the_tier_form(self):
        action = _row_actions(self)['iotguard_change_tier']
        self.assertEqual('Change I/O tier', str(action.verbose_name))
        tier = reverse('horizon:project:iotguard_disks:tier',
                       args=[self.servers.first().id])
        self.assertEqual('%s?%s' % (tier, urllib.parse.urlencode(
            {'next': INSTANCES})), action.bound_url)
        self.assertIn('ajax-modal', action.classes)


class WithoutIotguardTests(helpers.TestCase):

    def test_not_offered_without_iotguard_in_the_catalog(self):
        self.assertEqual({}, _row_actions(self))


class BackToTheInstancesTests(data.CatalogMixin, helpers.TestCase):

    def setUp(self):
        super().setUp()
        mock.patch.object(iotguard, 'tier_list',
                          return_value=data.records(data.TIERS)).start()
        mock.patch.object(iotguard, 'instance_show', return_value=(
            iotguard.Record(instance_uuid=data.UUID,
                            disks=[data.DISK]))).start()
        self.set_tier = mock.patch.object(iotguard,
                                          'instance_set_tier').start()

    def _post(self, next_url):
        return self.client.post(
            data.TIER + '?' + urllib.parse.urlencode({'next': next_url}),
            {'instance_uuid': data.UUID, 'tier': 'gold'})

    def test_the_form_posts_back_with_where_it_came_from(self):
        response = self.client.get(data.TIER + '?next=' + INSTANCES)
        self.assertEqual(data.TIER + '?' + urllib.parse.urlencode(
            {'next': INSTANCES}), response.context['submit_url'])

    def test_done_back_to_the_instances(self):
        self.assertRedirectsNoFollow(self._post(INSTANCES), INSTANCES)
        self.set_tier.assert_called_once_with(mock.ANY, data.UUID, 'gold')

    def test_not_to_another_site(self):
        self.assertRedirectsNoFollow(
            self._post('https://elsewhere.example/'), data.INDEX)
