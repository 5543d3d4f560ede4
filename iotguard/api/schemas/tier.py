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

"""Request bodies of /v1/tiers."""

from iotguard.api.schemas import common

_PROPERTIES = {
    'description': {'type': 'string', 'maxLength': 255},
    'min_iops': common.RATE,
    'min_bytes_sec': common.RATE,
    'max_iops': common.RATE,
    'max_bytes_sec': common.RATE,
    'weight': {'type': 'number', 'exclusiveMinimum': 0, 'maximum': 1e6},
    'is_public': {'type': 'boolean'},
    'projects': {'type': 'array', 'items': common.PROJECT_ID,
                 'uniqueItems': True, 'maxItems': 1000},
}

CREATE = {
    'type': 'object',
    'properties': dict(_PROPERTIES, name=common.NAME),
    'required': ['name'],
    'additionalProperties': False,
}

UPDATE = {
    'type': 'object',
    'properties': _PROPERTIES,
    'minProperties': 1,
    'additionalProperties': False,
}
