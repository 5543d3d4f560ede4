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

"""Schema pieces shared by the API's request schemas."""

from typing import Any

from iotguard.wire import caps

#: Not ``.`` or ``..``: a name is a URL path segment.
_NOT_DOTS = r'^(?!\.\.?$)'
#: A name: letters, digits, dot, dash, underscore; a domain's may also
#: hold ``:``, ``@`` and ``#`` (``host@backend#pool``).
NAME = {'type': 'string', 'minLength': 1, 'maxLength': 64,
        'pattern': _NOT_DOTS + r'[A-Za-z0-9._-]+$'}
DOMAIN_NAME = {'type': 'string', 'minLength': 1, 'maxLength': 255,
               'pattern': _NOT_DOTS + r'[A-Za-z0-9._:@#-]+$'}
#: A compute host's name (``[DEFAULT] host`` of its agent).
HOST = {'type': 'string', 'minLength': 1, 'maxLength': 255,
        'pattern': _NOT_DOTS + r'[A-Za-z0-9._:@-]+$'}
PROJECT_ID = {'type': 'string', 'minLength': 1, 'maxLength': 64,
              'pattern': _NOT_DOTS + r'[A-Za-z0-9._-]+$'}
#: A rate (IOPS, bytes/s), 0 = no limit; up to 10^15.
RATE = {'type': 'number', 'minimum': 0, 'maximum': caps.MAX_RATE}
UUID = {'type': 'string',
        'pattern': r'^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-'
                   r'[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'}
#: A time in a query: ISO 8601, UTC unless it has an offset.
QUERY_TIME = {'type': 'string', 'maxLength': 40,
              'pattern': r'^[0-9]{4}-[0-9]{2}-[0-9]{2}'
                         r'(T[0-9:.]+(Z|[+-][0-9]{2}:?[0-9]{2})?)?$'}
#: Query parameters arrive as strings.
QUERY_INT = {'type': 'string', 'pattern': r'^[0-9]{1,9}$'}
#: A boolean query parameter (``true``/``false``, any case, or 1/0, yes/no).
QUERY_BOOL = {'type': 'string', 'pattern': r'^(?i:true|false|yes|no|1|0)$'}


def closed(properties: dict[str, Any], **more: Any) -> dict[str, Any]:
    """An object schema of ``properties`` (and ``more``), no others."""
    return dict({'type': 'object', 'properties': properties,
                 'additionalProperties': False}, **more)


#: The query string of every endpoint but the lists that take parameters.
NO_QUERY = closed({})
