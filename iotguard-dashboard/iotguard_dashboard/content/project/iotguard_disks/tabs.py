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

"""A "Disk I/O" tab on Horizon's instance details (Project > Compute >
Instances > a server), added by the panel's enabled file (EXTRA_TABS)."""

from django.utils.translation import gettext_lazy as _
from horizon import exceptions
from horizon import tabs

from iotguard_dashboard.api import iotguard
from iotguard_dashboard.content.project.iotguard_disks import tables


class DiskIOTab(tabs.TableTab):
    name = _('Disk I/O')
    slug = 'iotguard_disk_io'
    table_classes = (tables.DisksTable,)
    template_name = 'horizon/common/_detail_table.html'
    preload = False

    def allowed(self, request):
        return iotguard.is_enabled(request)

    def get_disks_data(self):
        instance = self.tab_group.kwargs['instance']
        try:
            disks = iotguard.instance_show(self.request, instance.id)['disks']
        except iotguard.APIError as exc:
            # 404: iotguard has not seen a disk of this server yet.
            if exc.code != 404:
                exceptions.handle(self.request, _(
                    'Unable to show the disks of %s from iotguard.')
                    % instance.name)
            return []
        return [iotguard.Record(d, server=instance.name) for d in disks]
