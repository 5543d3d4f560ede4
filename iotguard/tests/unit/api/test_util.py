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

"""Body and query parsing, and the error format."""

import webob

from iotguard.api import schemas
from iotguard.api import util
from iotguard import exception
from iotguard.tests import base


def _req(raw, content_type='application/json'):
    req = webob.Request.blank('/', method='POST')
    req.body = raw
    req.content_type = content_type
    return req


class ReadJsonTest(base.TestCase):

    def test_valid(self):
        body = util.read_json(_req(b'{"name": "gold", "min_iops": 5}'),
                              schemas.TIER_CREATE, 1024)
        self.assertEqual({'name': 'gold', 'min_iops': 5}, body)

    def test_invalid(self):
        for raw in (b'{', b'{"name": "g", "x": 1}', b'{"name": Infinity}',
                    b'"gold"', b'{"name": "g", "weight": -1}'):
            self.assertRaises(exception.Invalid, util.read_json, _req(raw),
                              schemas.TIER_CREATE, 1024)

    def test_too_large(self):
        req = _req(b'{"name": "%s"}' % (b'x' * 2000))
        self.assertRaises(util.RequestTooLarge, util.read_json, req,
                          schemas.TIER_CREATE, 1024)

    def test_media_type(self):
        self.assertRaises(util.UnsupportedMediaType, util.read_json,
                          _req(b'{}', 'text/plain'), schemas.TIER_CREATE, 99)


class TextTest(base.TestCase):
    """What may reach the handlers: text that every database can hold."""

    def test_request_line_of_utf8_text_passes(self):
        for path, query in (('/v1/domains/caf\xc3\xa9', ''),
                            ('/v1/decisions', 'domain=caf%C3%A9&limit=1'),
                            ('/v1/decisions', 'domain=caf\xc3\xa9'),
                            ('/', 'a=%20&b&c=%2B')):
            util.check_request_line({'PATH_INFO': path,
                                     'QUERY_STRING': query})

    def test_request_line_not_text_is_invalid(self):
        for path, query in (('/\xff', ''), ('/\xed\xa0\x80', ''),
                            ('/a\x00', ''), ('/', 'a=%ff'), ('/', '%00'),
                            ('/', 'a=\xc3'), ('/', 'a=%ed%b0%80')):
            self.assertRaises(exception.Invalid, util.check_request_line,
                              {'PATH_INFO': path, 'QUERY_STRING': query})

    def test_body_depth_without_recursion(self):
        deep = []
        for _level in range(100000):
            deep = [deep]
        self.assertRaises(exception.Invalid, util._check_tree, deep)
        shallow = {'a': [[{'b': 'c'}] * 3] * 3}
        util._check_tree(shallow)

    def test_body_strings_keys_and_numbers(self):
        for body in ({'a': 'x\x00'}, {'\udc80': 1}, [['\ud800']],
                     {'a': float('inf')}, [float('nan')]):
            self.assertRaises(exception.Invalid, util._check_tree, body)
        util._check_tree({'a': 'caf\u00e9 \U0001f600\n', 'b': 1e308})

    def test_patterns_end_at_the_end(self):
        """JSON schema's ECMA 262 ``$``, not Python's (before a newline)."""
        schema = {'type': 'string', 'pattern': '^[a-z]+$'}
        util.validate('gold', schema, 'name')
        for name in ('gold\n', 'gold\nx', ''):
            self.assertRaises(exception.Invalid, util.validate, name,
                              schema, 'name')
        dollar = {'type': 'string', 'pattern': r'^a\$$'}
        util.validate('a$', dollar, 'name')


class QueryTest(base.TestCase):

    def test_repeated_and_unknown(self):
        req = webob.Request.blank('/?limit=1&limit=2')
        self.assertRaises(exception.Invalid, util.read_query, req,
                          schemas.DECISION_QUERY)
        req = webob.Request.blank('/?sort=id')
        self.assertRaises(exception.Invalid, util.read_query, req,
                          schemas.DECISION_QUERY)
        req = webob.Request.blank('/?limit=5&domain=local:cn1')
        self.assertEqual({'limit': '5', 'domain': 'local:cn1'},
                         util.read_query(req, schemas.DECISION_QUERY))

    def test_uuid(self):
        self.assertEqual('aaaaaaaa-0000-4000-8000-00000000000a',
                         util.check_uuid(
                             'AAAAAAAA-0000-4000-8000-00000000000A'))
        self.assertRaises(exception.Invalid, util.check_uuid, 'a' * 32)
        # $ of the schema's pattern ends the text, as in ECMA 262.
        self.assertRaises(exception.Invalid, util.check_uuid,
                          'aaaaaaaa-0000-4000-8000-00000000000a\n')


class ErrorTest(base.TestCase):

    def test_format(self):
        response = util.error_response(409, 'no room', 'req-1',
                                       numbers={'committed_after': 1.2})
        self.assertEqual(409, response.status_code)
        self.assertEqual({'error': {
            'code': 409, 'title': 'Conflict', 'message': 'no room',
            'request_id': 'req-1', 'numbers': {'committed_after': 1.2}}},
            response.json)
