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

import http.client
import json
import socketserver
import threading
from wsgiref import simple_server


from iotguard.tests.fixtures import database
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


class NothingWritten:
    """Each bad request fails with a 4xx and leaves every table as it was."""

    def test_bad_requests_write_nothing(self):
        dump = base.Dump(self.db.get_engine())
        before = dump()
        self.assertTrue(before['tiers'])
        for method, path, raw, who, environ in BAD_REQUESTS:
            response = self.call(method, path, raw=raw, who=who,
                                 environ=environ)
            self.assertTrue(400 <= response.status_code < 500,
                            (path, raw, response.status_code,
                             response.text))
            self.assertEqual(before, dump(), (method, path, raw))


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


class _ThreadingServer(socketserver.ThreadingMixIn,
                       simple_server.WSGIServer):
    daemon_threads = True


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


class Races:
    """A tier deleted while members choose it, over a threaded server.

    Each round: a new tier, then at once its DELETE and a PUT of it as the
    tier of each of ``CHOOSERS`` instances. Either the delete wins (204,
    the choices 404 or 409) or a choice does (the delete 409); never a 5xx,
    never both, and the database says the same as the answers.
    """

    ROUNDS = 20
    CHOOSERS = [test_api.A1, test_api.A2, test_api.A3]

    def setUp(self):
        super().setUp()
        self.db.domain_create('local:cn1', 'local', iops_4k=10000.0,
                              bytes_sec=400e6)
        for uuid in self.CHOOSERS:
            self.db.disk_upsert(uuid, 'vda', 'cn1', 'local:cn1', 'proj-a')
        server = simple_server.make_server(
            '127.0.0.1', 0, self.app, server_class=_ThreadingServer,
            handler_class=_QuietHandler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.port = server.server_port

    def _http(self, method, path, body, who, barrier, results, key):
        connection = http.client.HTTPConnection('127.0.0.1', self.port,
                                                timeout=60)
        headers = {'X-User-Id': 'u', 'X-Project-Id': who['project'],
                   'X-Roles': who['roles'],
                   'Content-Type': 'application/json'}
        barrier.wait()
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            results[key] = (response.status, response.read())
        finally:
            connection.close()

    def _round(self, name):
        results, calls = {}, [('delete', 'DELETE', '/v1/tiers/' + name,
                               None, ADMIN)]
        calls += [(uuid, 'PUT', '/v1/instances/%s/tier' % uuid,
                   json.dumps({'tier': name}), MEMBER_A)
                  for uuid in self.CHOOSERS]
        barrier = threading.Barrier(len(calls))
        threads = [threading.Thread(target=self._http, args=(
            method, path, body, who, barrier, results, key))
            for key, method, path, body, who in calls]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return results

    def test_delete_tier_while_members_choose_it(self):
        for n in range(self.ROUNDS):
            name = 'race-%d' % n
            self.db.tier_create(database.tier_values(name))
            results = self._round(name)
            statuses = {k: status for k, (status, _b) in results.items()}
            for key, (status, body) in results.items():
                self.assertLess(status, 500, (n, key, body))
                if status >= 400:
                    self.assertEqual(status,
                                     json.loads(body)['error']['code'])
            chosen = {uuid for uuid in self.CHOOSERS
                      if statuses[uuid] == 200}
            self.assertIn(statuses['delete'], (204, 409), results)
            self.assertTrue(statuses['delete'] == 204 or chosen, results)
            self.assertFalse(statuses['delete'] == 204 and chosen, results)
            self.assertEqual(statuses['delete'] != 204, name in [
                t.name for t in self.db.tier_list()])
            for uuid in self.CHOOSERS:
                tier = self.db.disk_list(instance_uuid=uuid)[0]['tier']
                self.assertEqual(uuid in chosen,
                                 tier is not None and tier.name == name,
                                 (n, uuid, results))
                self.db.instance_tier_unset(uuid)


class RacesSqlite(Races, base.APITestCase):
    backend = 'sqlite'


class RacesPostgresql(Races, base.APITestCase):
    backend = 'postgresql'


class RacesMysql(Races, base.APITestCase):
    backend = 'mysql'
