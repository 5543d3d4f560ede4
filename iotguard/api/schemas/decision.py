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

"""Query of GET /v1/decisions (every value a string)."""

from iotguard.api.schemas import common

LIST_QUERY = {
    'type': 'object',
    'properties': {
        'instance': common.UUID,
        'domain': common.DOMAIN_NAME,
        'since': {'type': 'string', 'maxLength': 40,
                  'pattern': r'^[0-9]{4}-[0-9]{2}-[0-9]{2}'
                             r'(T[0-9:.]+(Z|[+-][0-9]{2}:?[0-9]{2})?)?$'},
        'limit': common.QUERY_INT,
        'marker': common.QUERY_INT,
    },
    'additionalProperties': False,
}
