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

"""The assembled application without a database: auth and routing."""

import os

import fixtures
from keystonemiddleware import auth_token
from oslo_db import exception as db_exc
from oslo_middleware import http_proxy_to_wsgi
from sqlalchemy import exc as sa_exc
import webob

from iotguard.api import app
from iotguard.api import router
from iotguard.api import util
from iotguard import exception
from iotguard import service
from iotguard.tests import base


class NoDatabase:
    """Any query is a bug in these tests."""

    def __getattr__(self, name):
        raise AssertionError('unexpected DB call %s' % name)


class FailingDatabase:
    """A database whose every query raises ``error``."""

    def __init__(self, error):
        self.error = error

    def __getattr__(self, name):
        def fail(*args, **kwargs):
            raise self.error
        return fail


class AppTest(base.TestCase):

    def deploy(self, strategy):
        self.flags(group='api', auth_strategy=strategy)
        for group, options in auth_token.list_opts():
            self.conf.register_opts(options, group=group)
        self.flags(group='keystone_authtoken',
                   www_authenticate_uri='http://keystone.example/identity')
        return app.deploy(self.conf, db=NoDatabase())

    def test_keystone_without_token_is_401(self):
        application = self.deploy('keystone')
        response = webob.Request.blank('/v1/tiers').get_response(
            application)
        self.assertEqual(401, response.status_code)
        self.assertIn('keystone.example',
                      response.headers['WWW-Authenticate'])
        # Spoofed identity headers do not get past auth_token.
        req = webob.Request.blank('/v1/tiers', headers={
            'X-Project-Id': 'p', 'X-User-Id': 'u', 'X-Roles': 'admin'})
        self.assertEqual(401, req.get_response(application).status_code)

    def test_version_document_without_auth(self):
        response = webob.Request.blank('/').get_response(
            self.deploy('keystone'))
        self.assertEqual(200, response.status_code)
        self.assertEqual('v1', response.json['versions'][0]['id'])

    def test_proxy_headers(self):
        application = self.deploy('noauth')
        self.flags(group='oslo_middleware',
                   enable_proxy_headers_parsing=True)
        req = webob.Request.blank('/', headers={
            'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'api.example'})
        response = req.get_response(application)
        self.assertEqual('https://api.example/v1',
                         response.json['versions'][0]['links'][0]['href'])

    def test_failure_in_proxy_middleware_answers_json(self):
        application = self.deploy('noauth')

        def broken(self, req):
            raise RuntimeError('bad Forwarded header')

        self.patch(http_proxy_to_wsgi.HTTPProxyToWSGI, 'process_request',
                   broken)
        response = webob.Request.blank('/v1/tiers').get_response(
            application)
        self.assertEqual(500, response.status_code)
        self.assertEqual(500, response.json['error']['code'])
        self.assertEqual(response.headers['X-OpenStack-Request-Id'],
                         response.json['error']['request_id'])

    def test_every_route_has_a_compiled_pattern(self):
        self.assertEqual(len(router.ROUTES), len(router._TABLE))
        for template, methods in router.ROUTES.items():
            self.assertTrue(template.startswith('/v1'))
            self.assertTrue(set(methods) <= {'GET', 'POST', 'PUT', 'PATCH',
                                             'DELETE'})

    def test_uuid_with_a_final_newline_is_400(self):
        req = webob.Request.blank(
            '/v1/instances/aaaaaaaa-0000-4000-8000-00000000000a%0A',
            headers={'X-Project-Id': 'p', 'X-User-Id': 'u',
                     'X-Roles': 'reader'})
        response = req.get_response(self.deploy('noauth'))
        self.assertEqual(400, response.status_code)
        self.assertIn('not a UUID', response.json['error']['message'])

    def test_database_down_is_503(self):
        self.flags(group='api', auth_strategy='noauth')
        down = FailingDatabase(db_exc.DBConnectionError('refused'))
        application = app.deploy(self.conf, db=down)
        req = webob.Request.blank('/v1/tiers', headers={
            'X-Project-Id': 'p', 'X-User-Id': 'u', 'X-Roles': 'reader'})
        response = req.get_response(application)
        self.assertEqual(503, response.status_code)
        self.assertEqual(503, response.json['error']['code'])
        self.assertEqual('10', response.headers['Retry-After'])

    def test_a_service_away_is_503_with_retry_after(self):
        self.flags(group='api', auth_strategy='noauth')
        away = FailingDatabase(exception.Unavailable(service='Keystone'))
        req = webob.Request.blank('/v1/tiers', headers={
            'X-Project-Id': 'p', 'X-User-Id': 'u', 'X-Roles': 'reader'})
        response = req.get_response(app.deploy(self.conf, db=away))
        self.assertEqual(503, response.status_code)
        self.assertEqual('Keystone is unreachable; try again later.',
                         response.json['error']['message'])
        self.assertEqual(str(util.RETRY_AFTER_S),
                         response.headers['Retry-After'])

    def test_failure_in_auth_middleware_is_503_in_json(self):
        application = self.deploy('keystone')

        def broken(self, req):
            raise RuntimeError('identity endpoint missing')

        self.patch(auth_token.AuthProtocol, 'process_request', broken)
        req = webob.Request.blank('/v1/tiers', headers={
            'X-Auth-Token': 'token'})
        response = req.get_response(application)
        self.assertEqual(503, response.status_code)
        self.assertEqual('application/json', response.content_type)
        self.assertEqual(503, response.json['error']['code'])
        self.assertIn('Authentication is unavailable',
                      response.json['error']['message'])
        self.assertTrue(response.json['error']['request_id'])
        self.assertEqual(str(util.RETRY_AFTER_S),
                         response.headers['Retry-After'])

    def test_lock_conflict_is_409_not_500(self):
        self.flags(group='api', auth_strategy='noauth')
        for error in (db_exc.DBDeadlock(),
                      db_exc.DBError('(sqlite3.OperationalError) database '
                                     'is locked'),
                      sa_exc.OperationalError(
                          'DELETE', {}, Exception('database is locked')),
                      db_exc.DBError('(1205, Lock wait timeout exceeded; '
                                     'try restarting transaction)'),
                      db_exc.DBReferenceError(
                          'disk_tiers', 'fk_disk_tiers_tier_id_tiers',
                          'tier_id', 'tiers', Exception('violates'))):
            application = app.deploy(self.conf, db=FailingDatabase(error))
            req = webob.Request.blank('/v1/tiers', headers={
                'X-Project-Id': 'p', 'X-User-Id': 'u', 'X-Roles': 'reader'})
            response = req.get_response(application)
            self.assertEqual(409, response.status_code)
            self.assertIn('Try again', response.json['error']['message'])

    def test_other_database_error_is_500_in_json(self):
        self.flags(group='api', auth_strategy='noauth')
        broken = FailingDatabase(db_exc.DBError('syntax error'))
        application = app.deploy(self.conf, db=broken)
        req = webob.Request.blank('/v1/tiers', headers={
            'X-Project-Id': 'p', 'X-User-Id': 'u', 'X-Roles': 'reader'})
        response = req.get_response(application)
        self.assertEqual(500, response.status_code)
        self.assertEqual(500, response.json['error']['code'])


class ConfTest(base.TestCase):
    """iotguard-api opens its database without oslo.db's startup retries."""

    def _config_file(self, text):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'iotguard.conf')
        with open(path, 'w') as f:
            f.write(text)
        return [path]

    def test_api_makes_no_connection_retries_by_default(self):
        files = self._config_file('')
        self.assertEqual(0, app.prepare_conf([], files).database.max_retries)
        # The other services keep oslo.db's default: they wait.
        self.assertEqual(10, service.prepare_service(
            [], files).database.max_retries)

    def test_configured_max_retries_wins(self):
        files = self._config_file('[database]\nmax_retries = 3\n')
        self.assertEqual(3, app.prepare_conf([], files).database.max_retries)
