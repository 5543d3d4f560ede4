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

"""The tiers' table as both panels show it (each adds who may choose)."""

from django.utils.translation import gettext_lazy as _
from horizon import tables

from iotguard_dashboard.content import format as fmt


class TiersTable(tables.DataTable):
    name = tables.Column('name', verbose_name=_('Tier'))
    description = tables.Column('description', verbose_name=_('Description'))
    floor = tables.Column(lambda t: fmt.tier_limit(t, 'min', _('none')),
                          verbose_name=_('Guaranteed floor'))
    ceiling = tables.Column(
        lambda t: fmt.tier_limit(t, 'max', _('unlimited')),
        verbose_name=_('Ceiling'))
    burst = tables.Column(fmt.burst, verbose_name=_('Burst'))
    latency = tables.Column(fmt.latency, verbose_name=_('Latency p99'))
    weight = tables.Column('weight', verbose_name=_('Weight'))

    def get_object_id(self, datum):
        return datum.name
