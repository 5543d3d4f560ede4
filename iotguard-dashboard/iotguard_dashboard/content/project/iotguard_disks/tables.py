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

import urllib.parse

from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from horizon import tables

from iotguard_dashboard.api import iotguard
from iotguard_dashboard.content import format as fmt
from iotguard_dashboard.content import tiers


class ChangeTier(tables.LinkAction):
    name = 'change_tier'
    verbose_name = _('Change I/O tier')
    url = 'horizon:project:iotguard_disks:tier'
    classes = ('ajax-modal',)
    icon = 'pencil'

    def get_link_url(self, datum):
        return reverse(self.url, args=[datum.instance_uuid])


class ChangeServerTier(ChangeTier):
    """Change I/O tier on a row of Horizon's instances table.

    The row is a Nova server; iotguard_dashboard.customization adds the
    action to that table; the form goes back to that page once done.
    """

    name = 'iotguard_change_tier'

    def allowed(self, request, server=None):
        return iotguard.is_enabled(request)

    def get_link_url(self, server):
        return '%s?%s' % (reverse(self.url, args=[server.id]),
                          urllib.parse.urlencode(
                              {'next': self.table.get_full_url()}))


def _disk_url(disk):
    """The disk's page: its last hour charted."""
    return reverse('horizon:project:iotguard_disks:disk',
                   args=[disk.instance_uuid, disk.dev])


class DisksTable(tables.DataTable):
    server = tables.Column('server', verbose_name=_('Server'))
    dev = tables.Column('dev', verbose_name=_('Device'), link=_disk_url)
    # A project sees an opaque id (the name is the admin's, issue 26): 56
    # hex digits would widen the table; its first 8 tell a project's
    # domains apart (as Horizon shows ids), the whole id in the cell's
    # tooltip. Horizon's tooltip reads the datum's attribute named as the
    # column: the column is named domain_id.
    domain_id = tables.Column('domain_id', verbose_name=_('Domain'),
                              truncate=9)
    tier = tables.Column(fmt.tier, verbose_name=_('Tier'))
    floor = tables.Column(fmt.floor, verbose_name=_('Floor'))
    rates = tables.Column(fmt.rates, verbose_name=_('Current rate'))
    cap = tables.Column(fmt.cap, verbose_name=_('Cap in force'))
    reason = tables.Column(fmt.cap_reason, verbose_name=_('Reason'))

    def get_object_id(self, datum):
        return '%s-%s' % (datum.instance_uuid, datum.dev)

    class Meta:
        name = 'disks'
        verbose_name = _('Disks')
        row_actions = (ChangeTier,)


def _public(tier):
    return _('public') if tier.is_public else _('private')


class TiersTable(tiers.TiersTable):
    visibility = tables.Column(_public, verbose_name=_('Visibility'))

    class Meta:
        name = 'tiers'
        verbose_name = _('Tiers this project may choose')
