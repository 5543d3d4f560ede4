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

import logging

from django.urls import reverse
from django.urls import reverse_lazy
from django.utils.translation import gettext_lazy as _
from horizon import exceptions
from horizon import forms as horizon_forms
from horizon import tables as horizon_tables
from openstack_dashboard import api as os_api

from iotguard_dashboard.api import iotguard
from iotguard_dashboard.content.project.iotguard_disks import forms
from iotguard_dashboard.content.project.iotguard_disks import tables

LOG = logging.getLogger(__name__)


def _server_names(request):
    """Nova's names of the project's servers ({} without Nova)."""
    if not os_api.base.is_service_enabled(request, 'compute'):
        return {}
    try:
        servers, _more = os_api.nova.server_list(request)
    except Exception:
        LOG.warning('Could not list the servers in Nova; the disks show '
                    'instance UUIDs', exc_info=True)
        return {}
    return {s.id: s.name for s in servers}


class IndexView(horizon_tables.MultiTableView):
    table_classes = (tables.DisksTable, tables.TiersTable)
    template_name = 'iotguard_dashboard/project/index.html'
    page_title = _('Disk I/O')

    def get_disks_data(self):
        try:
            disks = iotguard.disk_list(self.request)
        except Exception:
            exceptions.handle(self.request,
                              _('Unable to list the disks from iotguard.'))
            return []
        names = _server_names(self.request) if disks else {}
        for disk in disks:
            uuid = disk.instance_uuid
            disk['server'] = ('%s (%s)' % (names[uuid], uuid)
                              if uuid in names else uuid)
        return disks

    def get_tiers_data(self):
        try:
            return iotguard.tier_list(self.request)
        except Exception:
            exceptions.handle(self.request,
                              _('Unable to list the tiers from iotguard.'))
            return []


class TierView(horizon_forms.ModalFormView):
    form_class = forms.ChangeTier
    template_name = 'iotguard_dashboard/project/tier.html'
    modal_id = 'change_tier_modal'
    modal_header = _('Change I/O tier')
    submit_label = _('Change I/O tier')
    page_title = _('Change I/O tier')
    success_url = reverse_lazy('horizon:project:iotguard_disks:index')

    def get_initial(self):
        uuid = self.kwargs['instance_uuid']
        try:
            instance = iotguard.instance_show(self.request, uuid)
        except Exception:
            exceptions.handle(self.request,
                              _('Unable to show instance %s.') % uuid,
                              redirect=self.success_url)
        chosen = {d['tier'] for d in instance['disks']
                  if d['tier_source'] == 'api'}
        return {'instance_uuid': uuid,
                'tier': chosen.pop() if len(chosen) == 1 else ''}

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context['submit_url'] = reverse(
            'horizon:project:iotguard_disks:tier',
            args=[self.kwargs['instance_uuid']])
        context['instance_uuid'] = self.kwargs['instance_uuid']
        return context
