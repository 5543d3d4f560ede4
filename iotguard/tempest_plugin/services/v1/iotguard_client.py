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

"""Tempest's REST client for iotguard-api /v1.

Every call checks the status code the API reference promises and returns
a ``ResponseBody``; errors are tempest's exceptions (NotFound, Conflict,
Forbidden ...), so the tests can assert on them.
"""

import json
from typing import Any
import urllib.parse

from tempest.lib.common import rest_client


def _quote(segment: str) -> str:
    return urllib.parse.quote(segment, safe='')


class IotguardClient(rest_client.RestClient):
    """Tiers, instances, domains and decisions."""

    def _body(self, resp: Any, body: bytes, status: int) -> dict[str, Any]:
        self.expected_success(status, resp.status)
        answer: dict[str, Any] = rest_client.ResponseBody(
            resp, json.loads(body) if body else None)
        return answer

    def _get(self, url: str) -> dict[str, Any]:
        resp, body = self.get(url)
        return self._body(resp, body, 200)

    def list_tiers(self) -> dict[str, Any]:
        return self._get('v1/tiers')

    def show_tier(self, name: str) -> dict[str, Any]:
        return self._get('v1/tiers/%s' % _quote(name))

    def create_tier(self, **fields: Any) -> dict[str, Any]:
        resp, body = self.post('v1/tiers', json.dumps(fields))
        return self._body(resp, body, 201)

    def update_tier(self, name: str, **fields: Any) -> dict[str, Any]:
        resp, body = self.patch('v1/tiers/%s' % _quote(name),
                                json.dumps(fields))
        return self._body(resp, body, 200)

    def delete_tier(self, name: str) -> dict[str, Any]:
        resp, body = self.delete('v1/tiers/%s' % _quote(name))
        return self._body(resp, body, 204)

    def show_instance(self, uuid: str) -> dict[str, Any]:
        return self._get('v1/instances/%s' % _quote(uuid))

    def set_instance_tier(self, uuid: str, tier: str) -> dict[str, Any]:
        resp, body = self.put('v1/instances/%s/tier' % _quote(uuid),
                              json.dumps({'tier': tier}))
        return self._body(resp, body, 200)

    def list_domains(self) -> dict[str, Any]:
        return self._get('v1/domains')

    def show_domain(self, name: str) -> dict[str, Any]:
        return self._get('v1/domains/%s' % _quote(name))

    def update_domain(self, name: str, **fields: Any) -> dict[str, Any]:
        resp, body = self.patch('v1/domains/%s' % _quote(name),
                                json.dumps(fields))
        return self._body(resp, body, 200)

    def list_decisions(self, **params: Any) -> dict[str, Any]:
        query = urllib.parse.urlencode(sorted(
            (k, v) for k, v in params.items() if v is not None))
        return self._get('v1/decisions' + ('?' + query if query else ''))
