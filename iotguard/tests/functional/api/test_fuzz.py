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

"""Property test: whatever a client sends, the API answers without a 5xx.

Bodies are built from the API's own JSON schemas (known keys with values of
every JSON type, plausible and not, plus unknown keys), queries and path
segments from arbitrary text. Every answer below 500, every error in the
OpenStack format. More examples: ``IOTGUARD_FUZZ_EXAMPLES=2000``.
"""

import json
import os
import urllib.parse

import hypothesis
from hypothesis import strategies as st

from iotguard.api import schemas
from iotguard.tests.functional.api import base
from iotguard.tests.functional.api import test_api

EXAMPLES = int(os.environ.get('IOTGUARD_FUZZ_EXAMPLES', '150'))
SETTINGS = hypothesis.settings(
    max_examples=EXAMPLES, deadline=None, database=None,
    suppress_health_check=list(hypothesis.HealthCheck))

NUMBERS = st.one_of(st.integers(min_value=-2 ** 70, max_value=2 ** 70),
                    st.floats(allow_nan=False, allow_infinity=False),
                    st.sampled_from([0, 1, 0.5, 1e15, 1e16, -0.0]))
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS,
                    st.text(max_size=80))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.text(max_size=10), inner, max_size=4)), max_leaves=10)


def bodies(schema):
    """Objects with the schema's keys (any value) and some unknown keys."""
    keys = st.sampled_from(sorted(schema['properties']))
    plausible = st.one_of(NUMBERS, st.text(alphabet='abcdefgh-_.', min_size=1,
                                           max_size=8), st.booleans(),
                          st.lists(st.text(max_size=5), max_size=3))
    known = st.dictionaries(keys, st.one_of(plausible, JSON), max_size=6)
    unknown = st.dictionaries(st.text(max_size=8), JSON, max_size=2)
    return st.one_of(known, st.builds(lambda a, b: dict(b, **a), known,
                                      unknown), JSON)


CALLS = st.one_of(
    st.tuples(st.just('POST'), st.just('/v1/tiers'),
              bodies(schemas.TIER_CREATE)),
    st.tuples(st.just('PATCH'), st.just('/v1/tiers/gold'),
              bodies(schemas.TIER_UPDATE)),
    st.tuples(st.just('PUT'), st.just('/v1/instances/%s/tier' % test_api.A1),
              bodies(schemas.SET_TIER)),
    st.tuples(st.just('PATCH'), st.just('/v1/domains/local:cn1'),
              bodies(schemas.DOMAIN_UPDATE)),
)

QUERY_KEYS = st.sampled_from(
    sorted(schemas.DECISION_QUERY['properties']) + ['x', 'marker '])
QUERIES = st.lists(st.tuples(QUERY_KEYS, st.one_of(
    st.text(max_size=30), st.integers().map(str),
    st.datetimes().map(lambda d: d.isoformat()))), max_size=4)
SEGMENTS = st.text(min_size=1, max_size=60)


class FuzzTests(test_api.APITests):
    """Only the fuzz tests, on the same seeded data as the API tests."""

    def check(self, response):
        self.assertLess(response.status_code, 500, response.text)
        if response.status_code >= 400 and response.status_code != 401:
            error = response.json['error']
            self.assertEqual(response.status_code, error['code'])
            self.assertTrue(error['message'])

    @hypothesis.given(call=CALLS, who=st.sampled_from(
        [base.ADMIN, base.MEMBER_A, base.MEMBER_B]))
    @SETTINGS
    def test_bodies(self, call, who):
        method, path, body = call
        self.check(self.call(method, path, raw=json.dumps(body).encode(),
                             who=who))

    @hypothesis.given(raw=st.binary(max_size=200))
    @SETTINGS
    def test_raw_bytes(self, raw):
        self.check(self.call('POST', '/v1/tiers', raw=raw, who=base.ADMIN))

    @hypothesis.given(query=QUERIES, who=st.sampled_from(
        [base.ADMIN, base.READER_A]))
    @SETTINGS
    def test_decision_queries(self, query, who):
        self.check(self.call('GET', '/v1/decisions?'
                             + urllib.parse.urlencode(query), who=who))

    @hypothesis.given(segment=SEGMENTS, template=st.sampled_from(
        ['/v1/tiers/%s', '/v1/instances/%s', '/v1/domains/%s',
         '/v1/instances/%s/tier', '/v1/%s']))
    @SETTINGS
    def test_path_segments(self, segment, template):
        path = template % urllib.parse.quote(segment, safe='')
        self.check(self.call('GET', path, who=base.MEMBER_A))

    @hypothesis.given(path=st.binary(max_size=60),
                      query=st.binary(max_size=60),
                      who=st.sampled_from([None, base.MEMBER_A]))
    @SETTINGS
    def test_raw_request_lines(self, path, query, who):
        """Any bytes as a server hands them over (latin-1 strings)."""
        self.check(self.call('GET', '/', who=who, environ={
            'PATH_INFO': ('/v1/tiers/'.encode() + path).decode('latin-1'),
            'QUERY_STRING': query.decode('latin-1')}))


for _name in [n for n in dir(test_api.APITests) if n.startswith('test_')]:
    setattr(FuzzTests, _name, None)


class FuzzTestsSqlite(FuzzTests, base.APITestCase):
    backend = 'sqlite'


class FuzzTestsPostgresql(FuzzTests, base.APITestCase):
    backend = 'postgresql'
