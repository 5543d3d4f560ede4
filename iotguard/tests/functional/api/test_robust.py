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

"""What a failed request leaves behind (nothing), and races over HTTP."""

import sqlalchemy as sa

from iotguard.tests.functional.api import base
from iotguard.tests.functional.api import test_api

A1, ADMIN, MEMBER_A = test_api.A1, base.ADMIN, base.MEMBER_A

#: Requests that fail (4xx), some of which wrote before failing once:
#: (method, path, raw body or None, who, WSGI environ overrides).
BAD_REQUESTS = [
    ('POST', '/v1/tiers', br'{"name": "x\n"}', ADMIN, None),
    ('POST', '/v1/tiers', b'{"name": ".."}', ADMIN, None),
    ('POST', '/v1/tiers', br'{"name": "x", "description": "\u0000"}',
     ADMIN, None),
    ('POST', '/v1/tiers', br'{"name": "x", "description": "\ud800"}',
     ADMIN, None),
    ('POST', '/v1/tiers', br'{"name": "x", "projects": ["p\u0000"]}',
     ADMIN, None),
    ('POST', '/v1/tiers', b'{"name": "x", "min_iops": 9, "max_iops": 1}',
     ADMIN, None),
    ('POST', '/v1/tiers', b'{"name": "x", "weight": 1e999}', ADMIN, None),
    ('POST', '/v1/tiers', b'[' * 60000, ADMIN, None),
    ('POST', '/v1/tiers', b'{"name": "gold"}', ADMIN, None),
    ('POST', '/v1/tiers', b'{"name": "x"}', ADMIN,
     {'PATH_INFO': '/v1/tiers/\xff'}),
    ('POST', '/v1/tiers', b'{"name": "x"}', ADMIN,
     {'QUERY_STRING': 'x=%ff'}),
    ('PATCH', '/v1/tiers/gold', b'{"max_iops": 1}', ADMIN, None),
    ('PATCH', '/v1/tiers/gold', br'{"description": "\u0000"}', ADMIN,
     None),
    ('PATCH', '/v1/tiers/gold', b'{"projects": ["a", "a"]}', ADMIN, None),
    ('DELETE', '/v1/tiers/gold', None, ADMIN, None),
    ('DELETE', '/v1/tiers/gold', None, MEMBER_A, None),
    ('PATCH', '/v1/domains/local:cn1', b'{"iops_4k": 1e-306}', ADMIN,
     None),
    ('PATCH', '/v1/domains/local:cn1', b'{"bytes_sec": 1e16}', ADMIN,
     None),
    ('PATCH', '/v1/domains/local:cn1',
     b'{"policy": "ntt", "params": {"cap_time": 1e300}}', ADMIN, None),
    ('PATCH', '/v1/domains/local:cn1',
     b'{"iops_4k": 20000, "policy": "magic"}', ADMIN, None),
    ('PUT', '/v1/instances/%s/tier' % A1, br'{"tier": "gold\n"}', MEMBER_A,
     None),
    ('PUT', '/v1/instances/%s/tier' % A1, b'{"tier": "nope"}', MEMBER_A,
     None),
    ('PUT', '/v1/instances/%s/tier' % A1, b'{"tier": "private-b"}',
     MEMBER_A, None),
    ('PUT', '/v1/instances/%s/tier?dev=vda' % A1, b'{"tier": "bronze"}',
     MEMBER_A, None),
    ('PUT', '/v1/instances/%s/tier' % test_api.A2, b'{"tier": "gold"}',
     MEMBER_A, None),
    ('PUT', '/v1/instances/%s/tier' % test_api.B1, b'{"tier": "bronze"}',
     MEMBER_A, None),
    ('DELETE', '/v1/instances/%s/tier' % test_api.B1, None, MEMBER_A,
     None),
]


def dump(engine):
    """Every row of every table, by table name (SQLAlchemy reflection)."""
    metadata = sa.MetaData()
    metadata.reflect(engine)
    with engine.connect() as connection:
        return {name: connection.execute(
            sa.select(table).order_by(*table.columns)).all()
            for name, table in metadata.tables.items()}


class NothingWritten:
    """Each bad request fails with a 4xx and leaves every table as it was."""

    def test_bad_requests_write_nothing(self):
        engine = self.db.get_engine()
        before = dump(engine)
        self.assertTrue(before['tiers'])
        for method, path, raw, who, environ in BAD_REQUESTS:
            response = self.call(method, path, raw=raw, who=who,
                                 environ=environ)
            self.assertTrue(400 <= response.status_code < 500,
                            (path, raw, response.status_code,
                             response.text))
            self.assertEqual(before, dump(engine), (method, path, raw))


for _name in [n for n in dir(test_api.APITests) if n.startswith('test_')]:
    setattr(NothingWritten, _name, None)


class NothingWrittenSqlite(NothingWritten, test_api.APITests,
                           base.APITestCase):
    backend = 'sqlite'


class NothingWrittenPostgresql(NothingWritten, test_api.APITests,
                               base.APITestCase):
    backend = 'postgresql'


class NothingWrittenMysql(NothingWritten, test_api.APITests,
                          base.APITestCase):
    backend = 'mysql'
