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

    def _call(self, method: str, url: str, status: int = 200,
              body: dict[str, Any] | None = None) -> dict[str, Any]:
        resp, raw = self.request(
            method, 'v1/' + url,
            body=None if body is None else json.dumps(body))
        self.expected_success(status, resp.status)
        answer: dict[str, Any] = rest_client.ResponseBody(
            resp, json.loads(raw) if raw else None)
        return answer

    def list_tiers(self) -> dict[str, Any]:
        return self._call('GET', 'tiers')

    def show_tier(self, name: str) -> dict[str, Any]:
        return self._call('GET', 'tiers/' + _quote(name))

    def create_tier(self, **fields: Any) -> dict[str, Any]:
        return self._call('POST', 'tiers', 201, fields)

    def update_tier(self, name: str, **fields: Any) -> dict[str, Any]:
        return self._call('PATCH', 'tiers/' + _quote(name), body=fields)

    def delete_tier(self, name: str) -> dict[str, Any]:
        return self._call('DELETE', 'tiers/' + _quote(name), 204)

    def list_instances(self) -> dict[str, Any]:
        return self._call('GET', 'instances')

    def show_instance(self, uuid: str) -> dict[str, Any]:
        return self._call('GET', 'instances/' + _quote(uuid))

    def set_instance_tier(self, uuid: str, tier: str) -> dict[str, Any]:
        return self._call('PUT', 'instances/%s/tier' % _quote(uuid),
                          body={'tier': tier})

    def list_domains(self) -> dict[str, Any]:
        return self._call('GET', 'domains')

    def show_domain(self, name: str) -> dict[str, Any]:
        return self._call('GET', 'domains/' + _quote(name))

    def update_domain(self, name: str, **fields: Any) -> dict[str, Any]:
        return self._call('PATCH', 'domains/' + _quote(name), body=fields)

    def list_decisions(self, **params: Any) -> dict[str, Any]:
        query = urllib.parse.urlencode(sorted(
            (k, v) for k, v in params.items() if v is not None))
        return self._call('GET', 'decisions' + ('?' + query if query else ''))
