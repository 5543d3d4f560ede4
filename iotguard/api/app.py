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

"""The iotguard-api WSGI application, middleware assembled in code.

Outermost first: request id, the fault wrapper (anything raised below
becomes a JSON error), proxy headers, the request line's check (bytes
that are not UTF-8: 400), then ``/`` (version document),
``/openapi.json`` and ``/healthcheck`` without authentication, everything
else through keystonemiddleware's auth_token (or noauth) into the router.
"""

import re
from wsgiref import types as wsgi

from keystonemiddleware import auth_token
from oslo_config import cfg
from oslo_log import log
from oslo_middleware import healthcheck
from oslo_middleware import http_proxy_to_wsgi
from oslo_middleware import request_id
import webob
import webob.dec

from iotguard.api.handlers import common
from iotguard.api.handlers import root
from iotguard.api import limits
from iotguard.api import nova
from iotguard.api import rbac
from iotguard.api import router
from iotguard.api import util
from iotguard.conf import database
from iotguard.db import api as db_api
from iotguard import exception
from iotguard import service

LOG = log.getLogger(__name__)
#: A user or project id noauth trusts.
_ID = re.compile(r'[A-Za-z0-9._-]{1,64}\Z')


class NoAuth:
    """Trust X-User-Id, X-Project-Id and X-Roles: tests, all-in-one."""

    def __init__(self, application: wsgi.WSGIApplication) -> None:
        self.application = application

    @webob.dec.wsgify
    def __call__(self, req: webob.Request) -> webob.Response:
        if not all(_ID.match(req.headers.get(h, ''))
                   for h in ('X-User-Id', 'X-Project-Id')):
            return util.error_response(
                401, 'noauth needs the X-User-Id and X-Project-Id headers '
                     '(letters, digits, . _ -).',
                req.environ.get('openstack.request_id'))
        req.environ['HTTP_X_IDENTITY_STATUS'] = 'Confirmed'
        return req.get_response(self.application)


class FaultWrapper:
    """The one error path outside the router, before or after auth."""

    def __init__(self, application: wsgi.WSGIApplication) -> None:
        self.application = application

    @webob.dec.wsgify
    def __call__(self, req: webob.Request) -> webob.Response:
        request_id = req.environ.get('openstack.request_id')
        try:
            return req.get_response(self.application)
        except exception.IotguardException as exc:
            return util.exception_response(exc, request_id)
        except Exception:
            LOG.exception('Request %s failed before the router', request_id)
            return util.error_response(
                500, 'The request failed inside iotguard-api; the error '
                'is logged under its request id.', request_id)


class AuthGuard:
    """What the auth middleware answers itself, in iotguard's format.

    Its refusals (401 ...) keep ``WWW-Authenticate``; when it cannot
    authenticate at all (no usable ``[keystone_authtoken]``, Keystone
    unreachable) the answer is 503 and the cause is logged.
    """

    KEEP = ('WWW-Authenticate',)

    def __init__(self, application: wsgi.WSGIApplication) -> None:
        self.application = application

    @webob.dec.wsgify
    def __call__(self, req: webob.Request) -> webob.Response:
        request_id = req.environ.get('openstack.request_id')
        try:
            response = req.get_response(self.application)
        except Exception as exc:
            if req.environ.get(router.ROUTED):
                raise
            LOG.exception('Request %s: authentication failed: %s',
                          request_id, exc)
            return self._unavailable(request_id)
        if req.environ.get(router.ROUTED) or response.status_code < 400:
            return response
        if response.status_code >= 500:
            LOG.error('Request %s: the auth middleware answered %s: %s',
                      request_id, response.status,
                      response.text[:500].strip())
            return self._unavailable(request_id)
        return util.error_response(
            response.status_code, self._message(response), request_id,
            headers={k: response.headers[k] for k in self.KEEP
                     if k in response.headers})

    @staticmethod
    def _message(response: webob.Response) -> str:
        try:
            return str(response.json['error']['message'])
        except Exception:
            return response.status

    @staticmethod
    def _unavailable(request_id: str | None) -> webob.Response:
        return util.retry_later(
            'Authentication is unavailable (the identity service cannot be '
            'reached or is not configured); try again later.', request_id)


class Dispatcher:
    """Public documents and ``/healthcheck`` skip auth; the rest: ``api``."""

    #: The documents anyone may read, by path.
    PUBLIC = {'': root.list_versions, '/': root.list_versions,
              '/openapi.json': root.show_openapi}

    def __init__(self, api: wsgi.WSGIApplication,
                 health: wsgi.WSGIApplication) -> None:
        self.api, self.health = api, health

    @webob.dec.wsgify
    def __call__(self, req: webob.Request) -> webob.Response:
        util.check_request_line(req.environ)
        public = self.PUBLIC.get(req.path_info)
        if public is not None:  # 405 and the others: FaultWrapper's
            return util.handler_for(req, {'GET': public})(req)
        if req.path_info == '/healthcheck':
            return req.get_response(self.health)
        return req.get_response(self.api)


def deploy(conf: cfg.ConfigOpts, db: db_api.Connection | None = None
           ) -> request_id.RequestId:
    """Build the application for ``conf`` (no I/O until a request)."""
    if conf.admission.unified_limits:
        limits.configure(conf)
    state = common.State(
        conf=conf, db=db if db is not None else db_api.Connection(conf),
        enforcer=rbac.make_enforcer(conf), nova=nova.Metadata(conf))
    api: wsgi.WSGIApplication = router.Router(state)
    if conf.api.auth_strategy == 'keystone':
        api = AuthGuard(auth_token.AuthProtocol(
            api, {'oslo_config_config': conf}))
    else:
        api = NoAuth(api)
    health = healthcheck.Healthcheck(None, conf)
    return request_id.RequestId(FaultWrapper(
        http_proxy_to_wsgi.HTTPProxyToWSGI(Dispatcher(api, health), conf)))


def prepare_conf(argv: list[str] | None = None,
                 config_files: list[str] | None = None) -> cfg.ConfigOpts:
    """iotguard-api's configuration: the service's, with the API's defaults.

    See :func:`iotguard.conf.database.set_api_defaults`.
    """
    conf = service.prepare_service(argv, config_files)
    database.set_api_defaults(conf)
    return conf


def init_application(argv: list[str] | None = None,
                     config_files: list[str] | None = None
                     ) -> request_id.RequestId:
    """What iotguard.wsgi.api exposes: the app for /etc/iotguard."""
    return deploy(prepare_conf(argv, config_files))
