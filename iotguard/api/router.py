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

"""URL -> handler, in one table, and the dispatcher with the fault wrap."""

import re

from oslo_context import context
from oslo_db import exception as db_exc
from oslo_log import log
from sqlalchemy import exc as sa_exc
import webob
import webob.dec

from iotguard.api.handlers import agent
from iotguard.api.handlers import common
from iotguard.api.handlers import decision
from iotguard.api.handlers import domain
from iotguard.api.handlers import instance
from iotguard.api.handlers import record
from iotguard.api.handlers import root
from iotguard.api.handlers import tier
from iotguard.api.schemas import common as common_schema
from iotguard.api import util
from iotguard.db import api as db_api
from iotguard import exception

LOG = log.getLogger(__name__)

#: Set in the WSGI environment once the router has the request: an error
#: answered without it came from the middleware in front.
ROUTED = 'iotguard.routed'

ROUTES: dict[str, dict[str, util.Handler]] = {
    '/v1': {'GET': root.show_version},
    '/v1/tiers': {'GET': tier.list_tiers, 'POST': tier.create_tier},
    '/v1/tiers/{name}': {'GET': tier.show_tier, 'PATCH': tier.update_tier,
                         'DELETE': tier.delete_tier},
    '/v1/instances': {'GET': instance.list_instances},
    '/v1/instances/{uuid}': {'GET': instance.show_instance},
    '/v1/instances/{uuid}/tier': {'PUT': instance.set_instance_tier,
                                  'DELETE': instance.unset_instance_tier},
    '/v1/instances/{uuid}/disks/{dev}/record': {'GET': record.show_record},
    '/v1/domains': {'GET': domain.list_domains},
    '/v1/domains/{name}': {'GET': domain.show_domain,
                           'PATCH': domain.update_domain},
    '/v1/decisions': {'GET': decision.list_decisions},
    '/v1/decisions/{decision_id}': {'GET': decision.show_decision},
    '/v1/agents': {'GET': agent.list_agents},
}


def _compile(template: str) -> re.Pattern[str]:
    pattern = re.sub(r'\{(\w+)\}', r'(?P<\1>[^/]+)', template)
    # \Z, not $: $ also matches before a final newline (/v1/tiers/%0A).
    return re.compile(r'^%s/?\Z' % pattern)


_TABLE = [(_compile(t), methods) for t, methods in ROUTES.items()]
#: The handlers that take query parameters (and check them); any query
#: parameter on the others is a 400.
_READS_QUERY = {decision.list_decisions, instance.list_instances,
                agent.list_agents, record.show_record}
#: What the databases say when a lock wait ends without the lock.
_LOCK_MESSAGES = ('database is locked', 'lock timeout',
                  'Lock wait timeout exceeded')


def _database_error(exc: Exception,
                    request_id: str | None) -> webob.Response:
    """The answer to a database error: 409 for races, 503 if it is away."""
    if isinstance(exc, db_exc.DBReferenceError):
        # A row this request refers to (a tier) went away meanwhile.
        LOG.warning('Request %s: reference conflict: %s', request_id, exc)
        return util.error_response(
            409, 'A concurrent request removed a record this one refers '
                 'to; nothing was written. Try again.', request_id)
    if (isinstance(exc, db_exc.DBDeadlock)
            or any(m in str(exc) for m in _LOCK_MESSAGES)):
        LOG.warning('Request %s: lock conflict: %s', request_id, exc)
        return util.error_response(
            409, 'A concurrent request was changing the same records; '
                 'nothing was written. Try again.', request_id)
    away = db_api.unreachable(exc)
    if away is not None:
        LOG.error('Request %s: database unreachable: %s', request_id, away)
        return util.retry_later(
            'The database is unreachable; try again later.', request_id)
    return _internal_error(request_id)


def _internal_error(request_id: str | None) -> webob.Response:
    LOG.exception('Unexpected error in request %s', request_id)
    return util.error_response(
        500, 'Internal error; the operator will find request %s in the '
             'log.' % request_id, request_id)


class Router:
    """The /v1 application: context, dispatch, errors as JSON."""

    def __init__(self, state: common.State) -> None:
        self.state = state

    @webob.dec.wsgify
    def __call__(self, req: webob.Request) -> webob.Response:
        request_id = req.environ.get('openstack.request_id')
        req.environ[ROUTED] = True
        try:
            return self._dispatch(req)
        except exception.IotguardException as exc:
            if exc.code >= 500:
                LOG.error('Request %s failed: %s', request_id, exc.message)
            if isinstance(exc, exception.Unavailable):
                return util.retry_later(exc.message, request_id)
            return util.exception_response(exc, request_id)
        except (db_exc.DBError, sa_exc.SQLAlchemyError) as exc:
            return _database_error(exc, request_id)
        except Exception:
            return _internal_error(request_id)

    def _dispatch(self, req: webob.Request) -> webob.Response:
        for regex, methods in _TABLE:
            match = regex.match(req.path_info)
            if match is None:
                continue
            handler = util.handler_for(req, methods)
            if handler not in _READS_QUERY:
                util.read_query(req, common_schema.NO_QUERY)
            req.environ['iotguard.state'] = self.state
            req.environ['iotguard.context'] = (
                context.RequestContext.from_environ(req.environ))
            return handler(req, **match.groupdict())
        raise exception.NotFound(what=req.path_info[:200])
