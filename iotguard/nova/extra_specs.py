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

"""Nova's validator of the ``iotguard:tier`` flavor extra spec.

Loaded *inside nova-api* through the ``nova.api.extra_spec_validators``
entry point, when iotguard is installed where Nova runs: ``openstack
flavor set --property iotguard:tier=...`` is then checked by Nova (compute
API 2.86 and later validate extra specs). It imports nothing but Nova's
validator base, so that loading it costs nova-api nothing else.

The value is a tier name as iotguard's API accepts it: 1 to 64 of
``A-Z a-z 0-9 . _ -``, not ``.`` or ``..``. Whether the tier exists is
iotguard's business (tiers come and go without touching flavors): the
controller does not give a tier it does not know, and says so.
"""

from nova.api.validation.extra_specs import base

#: A tier name (iotguard.api.schemas.common.NAME), not '.' or '..'.
TIER_NAME_PATTERN = r'(?!\.\.?$)[A-Za-z0-9._-]{1,64}'

EXTRA_SPEC_VALIDATORS = [
    base.ExtraSpecValidator(
        name='iotguard:tier',
        description=(
            'The iotguard tier (minimum I/O guarantee) of the disks of '
            'servers of this flavor, by name; a tier chosen through '
            "iotguard's API wins over it. Written by iotguard-manage tier "
            'sync.'
        ),
        value={
            'type': str,
            'description': 'The name of an iotguard tier.',
            'pattern': TIER_NAME_PATTERN,
        },
    ),
]


def register() -> list[base.ExtraSpecValidator]:
    return EXTRA_SPEC_VALIDATORS
