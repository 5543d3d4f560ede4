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

from django.urls import reverse
from django.urls import reverse_lazy
from django.utils.translation import gettext_lazy as _
from horizon import exceptions
from horizon import forms as horizon_forms
from horizon import tables as horizon_tables

from iotguard_dashboard.api import iotguard
from iotguard_dashboard.content.admin.iotguard import forms
from iotguard_dashboard.content.admin.iotguard import tables

INDEX = reverse_lazy('horizon:admin:iotguard:index')


class IndexView(horizon_tables.MultiTableView):
    table_classes = (tables.DomainsTable, tables.CapsTable,
                     tables.DecisionsTable, tables.TiersTable)
    template_name = 'iotguard_dashboard/admin/index.html'
    page_title = _('Disk I/O')

    def _domains(self):
        """Every domain's full (admin) view, listed once per request."""
        if not hasattr(self, '_full'):
            try:
                self._full = [
                    iotguard.domain_show(self.request, d.name)
                    for d in iotguard.domain_list(self.request)]
            except Exception:
                exceptions.handle(self.request,
                                  _('Unable to show the domains.'))
                self._full = []
        return self._full

    def get_domains_data(self):
        return self._domains()

    def get_caps_data(self):
        return [iotguard.Record(disk) for domain in self._domains()
                for disk in domain.get('disks', ()) if disk.get('cap')]

    def get_decisions_data(self):
        try:
            return iotguard.decision_list(self.request)
        except Exception:
            exceptions.handle(self.request,
                              _('Unable to list the decisions.'))
            return []

    def get_tiers_data(self):
        try:
            return iotguard.tier_list(self.request)
        except Exception:
            exceptions.handle(self.request, _('Unable to list the tiers.'))
            return []


class CreateTierView(horizon_forms.ModalFormView):
    form_class = forms.CreateTier
    template_name = 'iotguard_dashboard/admin/tier.html'
    modal_id = 'tier_modal'
    modal_header = page_title = submit_label = _('Create tier')
    submit_url = reverse_lazy('horizon:admin:iotguard:create_tier')
    success_url = INDEX


class UpdateTierView(horizon_forms.ModalFormView):
    form_class = forms.UpdateTier
    template_name = 'iotguard_dashboard/admin/tier.html'
    modal_id = 'tier_modal'
    modal_header = page_title = submit_label = _('Edit tier')
    success_url = INDEX

    def get_initial(self):
        try:
            tier = iotguard.tier_show(self.request, self.kwargs['name'])
        except Exception:
            exceptions.handle(self.request, _('Unable to show tier %s.')
                              % self.kwargs['name'], redirect=INDEX)
        return forms.initial(tier)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context['submit_url'] = reverse('horizon:admin:iotguard:update_tier',
                                        args=[self.kwargs['name']])
        return context
