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

"""The served OpenAPI document, and schemathesis fuzzing from it.

The fuzz budget here is fixed for CI (``IOTGUARD_OPENAPI_EXAMPLES`` per
operation and mode, 25 by default); the long run is
``python -m iotguard.tests.functional.api.schemafuzz``.
"""

import os

import fixtures
import schemathesis
import webob

from iotguard.api import openapi
from iotguard.api import router
from iotguard.tests.fixtures import database
from iotguard.tests.functional.api import base
from iotguard.tests.functional.api import schemafuzz
from iotguard.tests.functional.api import test_api

EXAMPLES = int(os.environ.get('IOTGUARD_OPENAPI_EXAMPLES', '25'))


class DocumentTests(base.APITestCase):

    def test_every_route_and_method_is_documented(self):
        routes = {(path, method) for path, methods in router.ROUTES.items()
                  for method in methods}
        documented = {(path, method.upper())
                      for path, methods in
                      self.call('GET', '/openapi.json').json['paths'].items()
                      for method in methods}
        self.assertEqual(routes, documented)

    def test_served_without_auth_and_valid(self):
        response = self.call('GET', '/openapi.json')
        self.assertEqual(200, response.status_code)
        self.assertEqual('application/json', response.content_type)
        doc = response.json
        self.assertEqual('3.1.0', doc['openapi'])
        self.assertEqual([{'url': 'http://localhost'}], doc['servers'])
        # What the handler checks is what the document publishes.
        create = doc['paths']['/v1/tiers']['post']
        self.assertEqual(
            openapi.OPERATIONS['/v1/tiers']['POST'].body,
            create['requestBody']['content']['application/json']['schema'])
        self.assertIn('503', create['responses'])
        self.assertNotIn('404', create['responses'])
        schemathesis.openapi.from_dict(doc).validate()
        head = self.call('HEAD', '/openapi.json')
        self.assertEqual((200, b''), (head.status_code, head.body))
        error = self.assertError(self.call('POST', '/openapi.json'), 405)
        self.assertTrue(error['request_id'])

    def test_behind_a_proxy_the_server_url_follows(self):
        self.flags(group='oslo_middleware', enable_proxy_headers_parsing=True)
        response = self.call('GET', '/openapi.json', headers={
            'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'api.example',
            'X-Forwarded-Prefix': '/io'})
        self.assertEqual([{'url': 'https://api.example/io'}],
                         response.json['servers'])


class Fuzz:
    """Every operation, both modes, four callers.

    No 5xx, documented codes, schema breaks refused, refusals write
    nothing.
    """

    def test_schemathesis(self):
        # Every operation on a real database: longer than the suite's
        # 60 s per test on a busy machine (MariaDB's is the slowest).
        self.useFixture(fixtures.Timeout(240, gentle=True))
        test_api.seed(self.db)
        result = schemafuzz.fuzz(self.app, self.db.get_engine(),
                                 test_api.EXISTING, EXAMPLES, seed=0)
        summary = schemafuzz.report(result, self.backend, EXAMPLES)
        operations = sum(len(m) for m in openapi.OPERATIONS.values())
        self.assertGreaterEqual(result.requests, operations * 2, summary)
        self.assertEqual(0, result.server_errors, summary)
        self.assertEqual(0, result.failed, summary)
        # Both kinds of answer were reached: the positive cases aimed at
        # existing resources got through to the database.
        codes = set(result.statuses)
        self.assertTrue(codes & {200, 201, 204}, summary)
        self.assertTrue(codes & {400, 403, 404, 409}, summary)


class FuzzerSeesFaults(base.APITestCase):
    """The fuzz driver itself: a 5xx and a write before a refusal count."""

    def test_faults_are_reported(self):
        test_api.seed(self.db)
        db, application = self.db, self.app
        written = []

        def faulty(environ, start_response):
            if environ['PATH_INFO'].startswith('/v1/decisions/'):
                start_response('500 Internal Server Error',
                               [('Content-Type', 'application/json')])
                return [b'{}']
            response = webob.Request(environ).get_response(application)
            if response.status_code == 404 and not written:
                written.append(db.tier_create(
                    database.tier_values('written-before-404')))
            return response(environ, start_response)

        result = schemafuzz.fuzz(faulty, self.db.get_engine(),
                                 test_api.EXISTING, 3, seed=0)
        self.assertGreater(result.server_errors, 0)
        self.assertTrue(written)
        self.assertIn('a refused request changed the database',
                      [what for _, _, what in result.failures])


class FuzzSqlite(Fuzz, base.APITestCase):
    backend = 'sqlite'


class FuzzPostgresql(Fuzz, base.APITestCase):
    backend = 'postgresql'


class FuzzMysql(Fuzz, base.APITestCase):
    backend = 'mysql'
