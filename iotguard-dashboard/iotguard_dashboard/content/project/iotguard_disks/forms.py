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
from horizon import exceptions
from horizon import forms
from horizon import messages

from iotguard_dashboard.api import iotguard

#: The choice that drops the tier chosen through the API.
UNSET = ''


class ChangeTier(forms.SelfHandlingForm):
    instance_uuid = forms.CharField(widget=forms.HiddenInput())
    tier = forms.ChoiceField(
        label=_('I/O tier'), required=False,
        help_text=_('Every disk of the server gets this tier. Admission '
                    'refuses a tier whose floor a domain holding one of '
                    'the disks cannot keep.'))

    def __init__(self, request, *args, **kwargs):
        super().__init__(request, *args, **kwargs)
        try:
            tiers = iotguard.tier_list(request)
        except Exception:
            exceptions.handle(request, _('Unable to list the tiers.'))
            tiers = []
        self.fields['tier'].choices = [
            (UNSET, _("None chosen (the flavor's, volume type's or "
                      "default tier)"))] + [
            (t.name, '%s - %s' % (t.name, t.description) if t.description
             else t.name) for t in tiers]

    def handle(self, request, data):
        uuid, tier = data['instance_uuid'], data['tier']
        try:
            if tier == UNSET:
                iotguard.instance_unset_tier(request, uuid)
            else:
                iotguard.instance_set_tier(request, uuid, tier)
        except iotguard.APIError as exc:
            # A refusal (409) or anything the API says no to: its message,
            # in the form, which stays open.
            self.api_error(exc.message)
            return False
        if tier == UNSET:
            messages.success(request, _('Server %s has no I/O tier chosen '
                                        'any more.') % uuid)
        else:
            messages.success(request, _('Server %(uuid)s now has I/O tier '
                                        '%(tier)s.') % {'uuid': uuid,
                                                        'tier': tier})
        return True
