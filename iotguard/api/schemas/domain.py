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

"""Request bodies of /v1/domains."""

from iotguard import admission
from iotguard.api.schemas import common
from iotguard.policy import base

_PARAM = {'type': ['number', 'string', 'boolean'], 'maxLength': 255,
          'minimum': -1e15, 'maximum': 1e15}


def _profile_value(key: str) -> dict[str, object]:
    low, high = admission.PROFILE_RANGES[key]
    return {'type': 'number', 'minimum': low, 'maximum': high}


UPDATE = {
    'type': 'object',
    'properties': {
        'iops_4k': _profile_value('iops_4k'),
        'bytes_sec': _profile_value('bytes_sec'),
        'form': {'enum': list(base.FORMS)},
        'profile_source': {'enum': list(admission.SOURCES)},
        'policy': common.NAME,
        'params': {'type': 'object', 'maxProperties': 64,
                   'propertyNames': common.NAME,
                   'additionalProperties': _PARAM},
    },
    'minProperties': 1,
    'additionalProperties': False,
}
