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

from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext_lazy
from horizon import messages
from horizon import tables

from iotguard_dashboard.api import iotguard
from iotguard_dashboard.content import format as fmt
from iotguard_dashboard.content import tiers


def profile(domain):
    """The profile in use, its source and the learned fit's confidence."""
    p = domain.get('profile')
    if not p:
        return _('not calibrated')
    text = '%s (%s)' % (fmt.iops_and_bytes(p['iops_4k'], p['bytes_sec']),
                        p['source'])
    if p.get('form'):
        text = '%s, %s' % (text, p['form'])
    learned = p.get('learned')
    if learned:
        text += ' ' + str(_('- learned, confidence %.2f')
                          % learned['confidence'])
    return text


def committed(domain):
    return _('%(committed)s of %(allowed)s allowed') % {
        'committed': fmt.fraction(domain.get('committed')),
        'allowed': fmt.fraction(domain.get('max_commit_ratio'))}


def state(domain):
    if domain.get('beyond_capacity'):
        return _('floors beyond capacity')
    if domain.get('overcommitted'):
        return _('over-committed')
    if domain.get('overcommitted') is None:
        return _('no learned verdict')
    return _('within capacity')


class DomainsTable(tables.DataTable):
    name = tables.Column('name', verbose_name=_('Domain'))
    kind = tables.Column('kind', verbose_name=_('Kind'))
    policy = tables.Column('policy', verbose_name=_('Policy'))
    profile = tables.Column(profile, verbose_name=_('Capacity profile'))
    committed = tables.Column(committed, verbose_name=_('Committed floors'))
    utilisation = tables.Column(lambda d: fmt.percent(d.get('utilisation')),
                                verbose_name=_('Utilisation'))
    state = tables.Column(state, verbose_name=_('Over-commit'))

    def get_object_id(self, datum):
        return datum.name

    class Meta:
        name = 'domains'
        verbose_name = _('Domains')


class CapsTable(tables.DataTable):
    instance = tables.Column('instance_uuid', verbose_name=_('Instance'))
    dev = tables.Column('dev', verbose_name=_('Device'))
    domain = tables.Column('domain', verbose_name=_('Domain'))
    project = tables.Column('project_id', verbose_name=_('Project'))
    tier = tables.Column(fmt.tier, verbose_name=_('Tier'))
    cap = tables.Column(fmt.cap, verbose_name=_('Cap'))
    reason = tables.Column(fmt.cap_reason, verbose_name=_('Reason'))
    lease = tables.Column(lambda d: fmt.moment(d['cap']['lease_expires_at']),
                          verbose_name=_('Lease expires'))

    def get_object_id(self, datum):
        return '%s-%s' % (datum.instance_uuid, datum.dev)

    class Meta:
        name = 'caps'
        verbose_name = _('Caps in force')


class DecisionsTable(tables.DataTable):
    created_at = tables.Column(lambda d: fmt.moment(d.created_at),
                               verbose_name=_('Time'))
    domain = tables.Column('domain', verbose_name=_('Domain'))
    instance = tables.Column('instance_uuid', verbose_name=_('Instance'))
    dev = tables.Column('dev', verbose_name=_('Device'))
    action = tables.Column('action', verbose_name=_('Action'))
    limits = tables.Column(lambda d: fmt.limits(d.new_limits or {}),
                           verbose_name=_('New limits'))
    reason = tables.Column('reason', verbose_name=_('Reason'))

    def get_object_id(self, datum):
        return str(datum.id)

    class Meta:
        name = 'decisions'
        verbose_name = _('Latest decisions')


class CreateTier(tables.LinkAction):
    name = 'create_tier'
    verbose_name = _('Create tier')
    url = 'horizon:admin:iotguard:create_tier'
    classes = ('ajax-modal',)
    icon = 'plus'


class UpdateTier(tables.LinkAction):
    name = 'update_tier'
    verbose_name = _('Edit tier')
    url = 'horizon:admin:iotguard:update_tier'
    classes = ('ajax-modal',)
    icon = 'pencil'


class DeleteTier(tables.DeleteAction):
    help_text = _('A tier that disks or tier choices use cannot be deleted.')

    @staticmethod
    def action_present(count):
        return ngettext_lazy('Delete Tier', 'Delete Tiers', count)

    @staticmethod
    def action_past(count):
        return ngettext_lazy('Deleted Tier', 'Deleted Tiers', count)

    def delete(self, request, obj_id):
        try:
            iotguard.tier_delete(request, obj_id)
        except iotguard.APIError as exc:
            # Why (a tier in use), besides Horizon's "Unable to delete".
            messages.error(request, exc.message)
            raise


def _projects(tier):
    if tier.is_public:
        return _('public')
    return ', '.join(tier.get('projects') or ()) or _('private, no project')


class TiersTable(tiers.TiersTable):
    projects = tables.Column(_projects, verbose_name=_('Projects'))

    def get_object_display(self, datum):
        return datum.name

    class Meta:
        name = 'tiers'
        verbose_name = _('Tiers')
        table_actions = (CreateTier, DeleteTier)
        row_actions = (UpdateTier, DeleteTier)
