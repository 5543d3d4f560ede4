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
import urllib.parse

from django.urls import reverse
from django.urls import reverse_lazy
from django.utils import http as http_utils
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from horizon import exceptions
from horizon import forms as horizon_forms
from horizon import tables as horizon_tables
from horizon import views as horizon_views
from openstack_dashboard import api as os_api

from iotguard_dashboard.api import iotguard
from iotguard_dashboard.content import chart
from iotguard_dashboard.content import format as fmt
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

    def _next(self):
        """Where the form was opened from, if on this site, or None.

        Horizon's instances page, for one.
        """
        url = self.request.GET.get('next')
        if url and http_utils.url_has_allowed_host_and_scheme(
                url, {self.request.get_host()},
                self.request.is_secure()):
            return url
        return None

    def get_success_url(self):
        return self._next() or super().get_success_url()

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context['submit_url'] = reverse(
            'horizon:project:iotguard_disks:tier',
            args=[self.kwargs['instance_uuid']])
        if self._next():
            context['submit_url'] += '?' + urllib.parse.urlencode(
                {'next': self._next()})
        context['instance_uuid'] = self.kwargs['instance_uuid']
        return context


class DiskView(horizon_views.HorizonTemplateView):
    """One disk: what the API says of it now and its last hour charted."""

    template_name = 'iotguard_dashboard/project/disk.html'
    page_title = _('Disk {{ dev }} of {{ server }}')

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        uuid, dev = self.kwargs['instance_uuid'], self.kwargs['dev']
        index = reverse('horizon:project:iotguard_disks:index')
        try:
            disk = next(d for d in iotguard.instance_show(
                self.request, uuid)['disks'] if d['dev'] == dev)
        except Exception:
            exceptions.handle(self.request, _(
                'Unable to show disk %(dev)s of %(uuid)s from iotguard.')
                % {'dev': dev, 'uuid': uuid}, redirect=index)
        try:
            record = iotguard.disk_record(self.request, uuid, dev)
        except Exception:
            exceptions.handle(self.request, _(
                'Unable to read the record of disk %s from iotguard.') % dev)
            record = None
        context.update(
            dev=dev, server=_server_names(self.request).get(uuid, uuid),
            tier=fmt.tier(disk), floor=fmt.floor(disk),
            rates=fmt.rates(disk), cap=fmt.cap(disk),
            reason=fmt.cap_reason(disk), record=record)
        if record:
            context.update(
                kept=(fmt.percent(record['floor_kept_ratio'])
                      if record['floor_due_s'] else _('no floor due')),
                capped=_('%d s') % record['capped_s'],
                since=chart.clock(record['since']),
                until=chart.clock(record['until']),
                zone=timezone.get_current_timezone_name(),
                charts=chart.charts(record, disk),
                spells=chart.spells(record))
        context.update(
            tier_url=reverse('horizon:project:iotguard_disks:tier',
                             args=[uuid]))
        return context
