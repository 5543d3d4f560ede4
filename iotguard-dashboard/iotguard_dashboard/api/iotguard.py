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

"""iotguard-api through the Keystone catalog, with the user's token.

The endpoint is the catalog's ``resource-guarantee`` service in the user's
region (Horizon's ``OPENSTACK_ENDPOINT_TYPE``); the session carries the
token Horizon holds for the user, so iotguard's policy sees the user as
the ``openstack`` CLI would. Bodies come back as the API defines them
(api-ref/source); error answers become :class:`APIError` with the API's
message (a member's admission refusal has no numbers, an admin's has).
"""

import urllib.parse

from django.conf import settings
from keystoneauth1 import adapter
from keystoneauth1 import session
from keystoneauth1 import token_endpoint
from openstack_dashboard.api import base

SERVICE_TYPE = 'resource-guarantee'
#: The decisions the admin panel lists (the newest first).
DECISIONS_SHOWN = 20


class APIError(Exception):
    """An error answer of iotguard-api: ``code``, ``message``, ``numbers``."""

    def __init__(self, code, message, numbers=None):
        super().__init__(message)
        self.code, self.message, self.numbers = code, message, numbers


class Record(dict):
    """An API object whose fields are also attributes (for tables)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def is_enabled(request):
    return base.is_service_enabled(request, SERVICE_TYPE)


def _adapter(request):
    verify = (False if settings.OPENSTACK_SSL_NO_VERIFY
              else settings.OPENSTACK_SSL_CACERT or True)
    endpoint = base.url_for(request, SERVICE_TYPE)
    auth = token_endpoint.Token(endpoint, request.user.token.id)
    return adapter.Adapter(session.Session(auth=auth, verify=verify),
                           endpoint_override=endpoint,
                           user_agent='iotguard-dashboard')


def _call(request, method, path, body=None, params=None):
    kwargs = {'raise_exc': False, 'params': {
        k: v for k, v in (params or {}).items() if v is not None}}
    if body is not None:
        kwargs['json'] = body
    response = _adapter(request).request('/v1' + path, method, **kwargs)
    if response.status_code >= 400:
        raise _error(response)
    if response.status_code == 204 or not response.content:
        return {}
    return response.json()


def _error(response):
    """The API's error body; a proxy's page as its text."""
    try:
        error = response.json()['error']
        return APIError(error.get('code', response.status_code),
                        error.get('message', response.reason),
                        error.get('numbers'))
    except (ValueError, KeyError, TypeError):
        return APIError(response.status_code,
                        response.text.strip()[:500] or response.reason)


def _quote(segment):
    return urllib.parse.quote(segment, safe='')


def disk_list(request):
    """Every disk of the caller's project's instances, as the API shows."""
    return [Record(disk)
            for instance in _call(request, 'GET', '/instances')['instances']
            for disk in instance['disks']]


def instance_show(request, uuid):
    return Record(_call(request, 'GET',
                        '/instances/%s' % _quote(uuid))['instance'])


def disk_record(request, uuid, dev, since=None, until=None):
    """The disk's record by the minute (by default of the last hour)."""
    return Record(_call(request, 'GET', '/instances/%s/disks/%s/record' % (
        _quote(uuid), _quote(dev)), params={'since': since, 'until': until})
        ['record'])


def instance_set_tier(request, uuid, tier):
    """Choose ``tier`` for every disk of the instance (admission decides).

    Refused: :class:`APIError` with code 409 and the API's message.
    """
    return _call(request, 'PUT', '/instances/%s/tier' % _quote(uuid),
                 {'tier': tier})['instance']


def instance_unset_tier(request, uuid):
    _call(request, 'DELETE', '/instances/%s/tier' % _quote(uuid))


def tier_list(request):
    """The tiers the caller may choose (the admin: every tier)."""
    return [Record(t) for t in _call(request, 'GET', '/tiers')['tiers']]


def tier_show(request, name):
    return Record(_call(request, 'GET', '/tiers/%s' % _quote(name))['tier'])


def tier_create(request, **fields):
    """The admin's: the API checks the numbers (floors below ceilings)."""
    return Record(_call(request, 'POST', '/tiers', fields)['tier'])


def tier_update(request, name, **fields):
    return Record(_call(request, 'PATCH', '/tiers/%s' % _quote(name),
                        fields)['tier'])


def tier_delete(request, name):
    """Refused (409) while a disk or a tier choice uses the tier."""
    _call(request, 'DELETE', '/tiers/%s' % _quote(name))


def domain_list(request):
    return [Record(d) for d in _call(request, 'GET', '/domains')['domains']]


def domain_show(request, name):
    """One domain; the admin's view has capacity, commitments, utilisation."""
    return Record(_call(request, 'GET',
                        '/domains/%s' % _quote(name))['domain'])


def decision_list(request, limit=DECISIONS_SHOWN, **filters):
    """The newest ``limit`` decisions (one page), the newest first."""
    return [Record(d) for d in _call(
        request, 'GET', '/decisions',
        params=dict(filters, limit=limit))['decisions']]
