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

"""The OpenAPI 3.1 document of the v1 API, served at ``/openapi.json``.

:data:`OPERATIONS` lists the router's routes (a functional test holds the
two equal) with the very JSON schemas (draft 2020-12, OpenAPI 3.1's
dialect) the handlers check requests against, so what it publishes is
what the API enforces. The answers' bodies are described in the API
reference; here every error has the one documented error schema.
"""

import copy
import dataclasses
from typing import Any

from iotguard.api import schemas
from iotguard.api.schemas import common
from iotguard import version

#: The error body of every answer >= 400.
ERROR = {
    'type': 'object',
    'required': ['error'],
    'properties': {'error': {
        'type': 'object',
        'required': ['code', 'title', 'message'],
        'properties': {
            'code': {'type': 'integer'},
            'title': {'type': 'string'},
            'message': {'type': 'string'},
            'request_id': {'type': 'string'},
        },
    }},
}

_REASONS = {
    200: 'OK', 201: 'Created', 204: 'No content',
    400: 'The request is malformed or breaks a rule; nothing was written.',
    401: 'No valid authentication.',
    403: 'The policy forbids this to the caller.',
    404: 'No such resource (or not visible to the caller).',
    409: 'The request conflicts with the current state or a concurrent '
         'request; nothing was written.',
    413: 'The body is larger than [api] max_request_body_bytes.',
    415: 'The body is not application/json.',
    503: 'The database or the identity service is unreachable; try again '
         'after Retry-After seconds.',
}


@dataclasses.dataclass(frozen=True)
class Operation:
    """One method on one path, as the handler checks it."""

    summary: str
    ok: int = 200
    #: What the path's ``{parameters}`` must match.
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: The query string (every value a string); None: no parameter.
    query: dict[str, Any] | None = None
    #: The JSON body; None: no body.
    body: dict[str, Any] | None = None
    #: Errors beyond 400, 401, 403 and 503 (which every call may get).
    errors: tuple[int, ...] = ()


_TIER = {'name': common.NAME}
_DOMAIN = {'name': common.DOMAIN_NAME}
_INSTANCE = {'uuid': common.UUID}
_WRITE = (409, 413, 415)

#: Every operation of the router's table, by path and method.
OPERATIONS = {
    '/v1': {'GET': Operation('Show the v1 version document.')},
    '/v1/tiers': {
        'GET': Operation('List the tiers the caller can see.'),
        'POST': Operation('Create a tier (admin).', ok=201,
                          body=schemas.TIER_CREATE, errors=_WRITE),
    },
    '/v1/tiers/{name}': {
        'GET': Operation('Show a tier.', params=_TIER, errors=(404,)),
        'PATCH': Operation('Change a tier (admin).', params=_TIER,
                           body=schemas.TIER_UPDATE, errors=(404,) + _WRITE),
        'DELETE': Operation('Delete a tier no disk uses (admin).', ok=204,
                            params=_TIER, errors=(404, 409)),
    },
    '/v1/instances': {
        'GET': Operation('List the instances the caller can see, with '
                         'their disks.', query=schemas.INSTANCE_QUERY),
    },
    '/v1/instances/{uuid}': {
        'GET': Operation('Show an instance: its disks, tiers, caps and '
                         'rates.', params=_INSTANCE, errors=(404,)),
    },
    '/v1/instances/{uuid}/tier': {
        'PUT': Operation('Choose the tier of an instance\'s disks '
                         '(admission).', params=_INSTANCE,
                         body=schemas.SET_TIER, errors=(404,) + _WRITE),
        'DELETE': Operation('Drop the chosen tier of an instance.',
                            ok=204, params=_INSTANCE, errors=(404, 409)),
    },
    '/v1/instances/{uuid}/disks/{dev}/record': {
        'GET': Operation('A disk\'s record by the minute: its floor kept, '
                         'its caps and why.',
                         params=dict(_INSTANCE, dev=common.NAME),
                         query=schemas.RECORD_QUERY, errors=(404,)),
    },
    '/v1/domains': {
        'GET': Operation('List the storage domains (admin).'),
    },
    '/v1/domains/{name}': {
        'GET': Operation('Show a storage domain.', params=_DOMAIN,
                         errors=(404,)),
        'PATCH': Operation('Change a domain\'s profile or policy (admin).',
                           params=_DOMAIN, body=schemas.DOMAIN_UPDATE,
                           errors=(404,) + _WRITE),
    },
    '/v1/decisions': {
        'GET': Operation('List the throttling decisions, newest first.',
                         query=schemas.DECISION_QUERY, errors=(404,)),
    },
    '/v1/decisions/{decision_id}': {
        'GET': Operation('Show one decision.',
                         params={'decision_id': common.QUERY_INT},
                         errors=(404,)),
    },
    '/v1/agents': {
        'GET': Operation('List the agents and whether each is alive '
                         '(admin).', query=schemas.AGENT_QUERY),
    },
}


def _response(code: int) -> dict[str, Any]:
    if code == 204:
        return {'description': _REASONS[code]}
    schema = ({'$ref': '#/components/schemas/Error'} if code >= 400
              else {'type': 'object'})
    response = {'description': _REASONS[code],
                'content': {'application/json': {'schema': schema}}}
    if code == 503:
        response['headers'] = {'Retry-After': {
            'description': 'Seconds to wait before trying again.',
            'schema': {'type': 'integer'}}}
    return response


def _parameters(op: Operation) -> list[dict[str, Any]]:
    found = [{'name': name, 'in': 'path', 'required': True,
              'schema': copy.deepcopy(schema)}
             for name, schema in op.params.items()]
    for name, schema in (op.query or {}).get('properties', {}).items():
        found.append({'name': name, 'in': 'query', 'required': False,
                      'schema': copy.deepcopy(schema)})
    return found


def _operation(path: str, method: str, op: Operation) -> dict[str, Any]:
    codes = sorted({op.ok, 400, 401, 403, 503, *op.errors})
    result = {
        'operationId': '%s %s' % (method, path),
        'summary': op.summary,
        'parameters': _parameters(op),
        'responses': {str(c): _response(c) for c in codes},
    }
    if op.body is not None:
        result['requestBody'] = {'required': True, 'content': {
            'application/json': {'schema': copy.deepcopy(op.body)}}}
    return result


def document(server_url: str) -> dict[str, Any]:
    """The OpenAPI document (a new dict) for a server at ``server_url``."""
    return {
        'openapi': '3.1.0',
        'info': {
            'title': 'iotguard',
            'version': version.version_info.version_string(),
            'description': 'Per-disk I/O guarantees for OpenStack. The '
                           'API reference describes every answer.',
        },
        'paths': {path: {m.lower(): _operation(path, m, op)
                         for m, op in methods.items()}
                  for path, methods in OPERATIONS.items()},
        'components': {
            'schemas': {'Error': copy.deepcopy(ERROR)},
            'securitySchemes': {'keystone': {
                'type': 'apiKey', 'in': 'header', 'name': 'X-Auth-Token',
                'description': 'A Keystone token.'}},
        },
        'security': [{'keystone': []}],
        'servers': [{'url': server_url}],
    }
