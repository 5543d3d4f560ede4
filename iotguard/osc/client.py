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

"""A thin REST client for iotguard-api over a keystoneauth session.

It knows the URLs and nothing else: bodies go out and come back as the
API defines them (doc/source/reference/api.rst), errors become
:class:`APIError` with the API's message (and, for admission refusals,
its numbers).
"""

from typing import Any
from typing import cast
from typing import TypedDict
import urllib.parse

from keystoneauth1 import adapter
from keystoneauth1 import session as ksa_session
from osc_lib import exceptions
import requests

SERVICE_TYPE = 'resource-guarantee'
Body = dict[str, Any]


class Answer(TypedDict, total=False):
    tier: Body
    tiers: list[Body]
    instance: Body
    instances: list[Body]
    domain: Body
    domains: list[Body]
    agents: list[Body]
    decision: Body
    decisions: list[Body]
    links: list[Body]
    record: Body


class APIError(exceptions.CommandError):
    """An error answer of iotguard-api (OpenStack error format)."""

    def __init__(self, code: int, message: str,
                 numbers: dict[str, Any] | None = None) -> None:
        self.code, self.numbers = code, numbers
        text = 'iotguard-api answered %s: %s' % (code, message)
        if numbers:
            text += '\n' + '\n'.join(
                '  %s: %s' % (key, numbers[key]) for key in sorted(numbers))
        super().__init__(text)


def _error(response: requests.Response) -> APIError:
    try:
        error = response.json()['error']
        return APIError(error.get('code', response.status_code),
                        error.get('message', response.reason),
                        error.get('numbers'))
    except (ValueError, KeyError, TypeError):
        return APIError(response.status_code,
                        response.text.strip()[:500] or response.reason)


def _quote(segment: str) -> str:
    return urllib.parse.quote(segment, safe='')


class Client:
    """iotguard's /v1 calls; ``headers`` are added to every request."""

    def __init__(self, session: ksa_session.Session,
                 endpoint: str | None = None, interface: str | None = None,
                 region_name: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        self.http = adapter.Adapter(
            session, service_type=SERVICE_TYPE, interface=interface,
            region_name=region_name, endpoint_override=endpoint,
            additional_headers=headers or {})

    def _call(self, method: str, path: str, body: Body | None = None,
              params: dict[str, Any] | None = None) -> Answer:
        # A parameter of None is not sent.
        kwargs = {'raise_exc': False, 'params': {
            k: v for k, v in (params or {}).items() if v is not None}}
        if body is not None:
            kwargs['json'] = body
        response = self.http.request('/v1' + path, method, **kwargs)
        if response.status_code >= 400:
            raise _error(response)
        if response.status_code == 204 or not response.content:
            return {}
        return cast(Answer, response.json())

    def tier_list(self) -> list[Body]:
        return self._call('GET', '/tiers')['tiers']

    def tier_show(self, name: str) -> Body:
        return self._call('GET', '/tiers/%s' % _quote(name))['tier']

    def tier_create(self, name: str, **fields: Any) -> Body:
        return self._call('POST', '/tiers', dict(fields, name=name))['tier']

    def tier_update(self, name: str, **fields: Any) -> Body:
        return self._call('PATCH', '/tiers/%s' % _quote(name),
                          fields)['tier']

    def tier_delete(self, name: str) -> None:
        self._call('DELETE', '/tiers/%s' % _quote(name))

    def instance_list(self, all_projects: bool = False,
                      project_id: str | None = None) -> list[Body]:
        params = {'all_projects': 'true' if all_projects else None,
                  'project_id': project_id}
        return self._call('GET', '/instances', params=params)['instances']

    def instance_show(self, uuid: str) -> Body:
        return self._call('GET', '/instances/%s' % _quote(uuid))['instance']

    def disk_record(self, uuid: str, dev: str, **window: Any) -> Body:
        """A disk's record; ``window``: ``since``, ``until`` (or None)."""
        return self._call('GET', '/instances/%s/disks/%s/record' % (
            _quote(uuid), _quote(dev)), params=window)['record']

    def instance_set_tier(self, uuid: str, tier: str) -> Body:
        return self._call('PUT', '/instances/%s/tier' % _quote(uuid),
                          {'tier': tier})['instance']

    def instance_unset_tier(self, uuid: str) -> None:
        self._call('DELETE', '/instances/%s/tier' % _quote(uuid))

    def domain_list(self) -> list[Body]:
        return self._call('GET', '/domains')['domains']

    def domain_show(self, name: str) -> Body:
        return self._call('GET', '/domains/%s' % _quote(name))['domain']

    def domain_update(self, name: str, **fields: Any) -> Body:
        return self._call('PATCH', '/domains/%s' % _quote(name),
                          fields)['domain']

    def agent_list(self, host: str | None = None,
                   alive: bool | None = None) -> list[Body]:
        params = {'host': host,
                  'alive': None if alive is None else str(alive).lower()}
        return self._call('GET', '/agents', params=params)['agents']

    def decision_show(self, decision_id: int) -> Body:
        return self._call('GET', '/decisions/%d' % decision_id)['decision']

    def decision_list(self, **filters: Any) -> tuple[list[Body], int | None]:
        """One page: ``(decisions, marker of the next page or None)``."""
        body = self._call('GET', '/decisions', params=filters)
        decisions = body['decisions']
        more = any(link.get('rel') == 'next' for link in body.get('links', ()))
        return decisions, decisions[-1]['id'] if more and decisions else None
