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

"""The admin's tier forms; iotguard-api checks the values (floors below
ceilings, names) and its refusal is shown in the form."""

from django.utils.translation import gettext_lazy as _
from horizon import forms
from horizon import messages

from iotguard_dashboard.api import iotguard

NUMBERS = ('min_iops', 'min_bytes_sec', 'max_iops', 'max_bytes_sec',
           'weight')
#: Optional: empty is 0 (none), and an API without them is shown 0.
OPTIONAL = ('min_iops_per_gb', 'min_bytes_sec_per_gb', 'max_iops_per_gb',
            'max_bytes_sec_per_gb', 'burst_factor', 'burst_seconds',
            'latency_p99_ms')


def _rate(label, help_text, required=True):
    return forms.FloatField(label=label, min_value=0, initial=0,
                            help_text=help_text, required=required)


def _optional(label, help_text):
    return _rate(label, help_text, required=False)


class TierForm(forms.SelfHandlingForm):
    description = forms.CharField(label=_('Description'), max_length=255,
                                  required=False)
    min_iops = _rate(_('Floor, IOPS'),
                     _('Guaranteed to every disk of the tier; 0: none.'))
    min_bytes_sec = _rate(_('Floor, bytes/s'), _('0: none.'))
    max_iops = _rate(_('Ceiling, IOPS'), _('0: unlimited.'))
    max_bytes_sec = _rate(_('Ceiling, bytes/s'), _('0: unlimited.'))
    min_iops_per_gb = _optional(
        _('Floor, IOPS per GiB'),
        _('A disk\'s floor grows with its size: this many IOPS for each '
          'GiB, never below the fixed floor above; 0: none.'))
    min_bytes_sec_per_gb = _optional(_('Floor, bytes/s per GiB'),
                                     _('As above, in bytes/s; 0: none.'))
    max_iops_per_gb = _optional(
        _('Ceiling, IOPS per GiB'),
        _('A disk\'s ceiling grows with its size: this many IOPS for each '
          'GiB, never above the fixed ceiling above; 0: none.'))
    max_bytes_sec_per_gb = _optional(_('Ceiling, bytes/s per GiB'),
                                     _('As above, in bytes/s; 0: none.'))
    burst_factor = _optional(
        _('Burst factor'),
        _('A disk that stayed below its floor may then go up to this many '
          'times its floor, above its ceiling, for a while. Above 1; '
          '0: no burst.'))
    burst_seconds = _optional(
        _('Burst seconds'),
        _('The longest a disk may burst, in seconds of credit it earns '
          'while below its floor. Needed with a burst factor.'))
    latency_p99_ms = _optional(
        _('Latency objective, ms'),
        _('The 99th percentile of a disk\'s reads and writes the tier '
          'promises, in milliseconds; 0: none.'))
    weight = forms.FloatField(label=_('Weight'), initial=1.0,
                              help_text=_('Share of spare capacity '
                                          'relative to other tiers.'))
    is_public = forms.BooleanField(label=_('Public'), required=False,
                                   initial=True)
    projects = forms.CharField(
        label=_('Projects'), required=False,
        help_text=_('IDs of the projects that may use a private tier, '
                    'separated by commas.'))

    def values(self, data):
        values = {k: data[k] for k in NUMBERS + ('description', 'is_public')}
        values.update((k, data[k] or 0.0) for k in OPTIONAL)
        values['projects'] = [p.strip() for p in data['projects'].split(',')
                              if p.strip()]
        return values

    def handle(self, request, data):
        try:
            tier = self.save(request, data)
        except iotguard.APIError as exc:
            self.api_error(exc.message)
            return False
        messages.success(request, self.done % tier.name)
        return True


class CreateTier(TierForm):
    name = forms.CharField(label=_('Name'), max_length=64)
    field_order = ['name']
    done = _('Tier %s created.')

    def save(self, request, data):
        return iotguard.tier_create(request, name=data['name'],
                                    **self.values(data))


class UpdateTier(TierForm):
    name = forms.CharField(widget=forms.HiddenInput())
    done = _('Tier %s changed.')

    def save(self, request, data):
        return iotguard.tier_update(request, data['name'],
                                    **self.values(data))


def initial(tier):
    """The form's values for ``tier`` as the API shows it."""
    values = {k: tier[k] for k in NUMBERS + ('name', 'description',
                                             'is_public')}
    values.update((k, tier.get(k, 0.0)) for k in OPTIONAL)
    values['projects'] = ', '.join(tier.get('projects') or ())
    return values
