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

"""Every call and every error code of /v1, over a real database."""

import datetime
import logging

import fixtures
from keystoneauth1 import loading as ks_loading
from keystonemiddleware import auth_token
from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslo_limit import fixture as limit_fixture
from oslo_middleware import http_proxy_to_wsgi
import webob

from iotguard.api import app
from iotguard.api.handlers import disk as disk_view
from iotguard.api import limits
from iotguard.policy import estimator
from iotguard.tests import base as test_base
from iotguard.tests import dbrows
from iotguard.tests.fixtures import database
from iotguard.tests.fixtures import ports
from iotguard.tests.functional.api import base
from iotguard.wire import caps
from iotguard.wire import rates

A1 = 'aaaaaaaa-0000-4000-8000-000000000001'
A2 = 'aaaaaaaa-0000-4000-8000-000000000002'
A3 = 'aaaaaaaa-0000-4000-8000-000000000003'
B1 = 'bbbbbbbb-0000-4000-8000-000000000001'
VOL = 'cccccccc-0000-4000-8000-000000000001'
T0 = datetime.datetime(2026, 11, 22, 3, 0, 0)

ADMIN, MEMBER_A, READER_A = base.ADMIN, base.MEMBER_A, base.READER_A
NOROLE_A, MEMBER_B = base.NOROLE_A, base.MEMBER_B


def seed(db):
    """Tiers, domains, disks, rates, decisions and a cap; the decisions."""
    db.tier_create(database.tier_values('bronze', min_iops=100.0))
    db.tier_create(database.tier_values('gold', min_iops=2000.0,
                                        max_iops=5000.0, weight=4.0))
    db.tier_create(database.tier_values('private-b', is_public=False,
                                        min_iops=10.0),
                   projects=['proj-b'])
    db.domain_create('local:cn1', 'local', iops_4k=10000.0,
                     bytes_sec=400e6)
    db.domain_create('ceph:new', 'ceph')
    for uuid, dev, domain, project in (
            (A1, 'vda', 'local:cn1', 'proj-a'),
            (A1, 'vdb', 'local:cn1', 'proj-a'),
            (A3, 'vda', 'local:cn1', 'proj-a'),
            (A3, 'vdb', 'local:cn1', 'proj-a'),
            (B1, 'vda', 'local:cn1', 'proj-b'),
            (A2, 'vda', 'ceph:new', 'proj-a')):
        db.disk_upsert(uuid, dev, 'cn1', domain, project,
                       volume_id=VOL if dev == 'vdb' and uuid == A1
                       else None)
    db.instance_tier_set(B1, 'gold', lambda *a: {})
    dbrows.disk_update_rates(db, A1, 'vda', T0, read_iops=300.0,
                             write_iops=100.0, read_bytes_sec=4e6,
                             write_bytes_sec=1e6, latency_ms=2.5)
    decisions = []
    for i in range(7):
        uuid, project = (A1, 'proj-a') if i < 5 else (B1, 'proj-b')
        decisions.append(dbrows.decision_create(
            db, 'local:cn1', 'guarantee', uuid, 'vda', project, 'cap', {},
            {'total_iops_sec': 100 + i}, 'reason %d' % i, {'u': 0.5},
            created_at=T0 + datetime.timedelta(seconds=i)))
    dbrows.cap_set(db, A1, 'vda', {'total_iops_sec': 104},
                   T0 + datetime.timedelta(seconds=30), decisions[4])
    return decisions


#: Path parameters of resources :func:`seed` makes, by (parameter, path).
EXISTING = {
    ('name', '/v1/tiers'): [{'name': n} for n in ('bronze', 'gold',
                                                  'private-b')],
    ('name', '/v1/domains'): [{'name': n} for n in ('local:cn1',
                                                    'ceph:new')],
    ('uuid', '/v1/instances'): [{'uuid': u} for u in (A1, A2, A3, B1)],
    ('decision_id', '/v1/decisions'): [{'decision_id': str(i)}
                                       for i in range(1, 8)],
}


class APITests:

    def setUp(self):
        super().setUp()
        self.decisions = seed(self.db)

    # -- root, auth, routing -------------------------------------------------

    def test_version_document_needs_no_auth(self):
        response = self.call('GET', '/')
        self.assertEqual(200, response.status_code)
        version = response.json['versions'][0]
        self.assertEqual(('v1', 'CURRENT'),
                         (version['id'], version['status']))
        self.assertEqual('http://localhost/v1', version['links'][0]['href'])
        self.assertTrue(response.headers['x-openstack-request-id'])
        response = self.call('POST', '/')
        error = self.assertError(response, 405)
        self.assertTrue(error['request_id'])
        self.assertEqual('GET, HEAD, OPTIONS', response.headers['Allow'])
        head = self.call('HEAD', '/')
        self.assertEqual((200, b''), (head.status_code, head.body))

    def test_v1_version(self):
        response = self.call('GET', '/v1', who=READER_A)
        self.assertEqual('v1', response.json['version']['id'])

    def test_healthcheck(self):
        response = self.call('GET', '/healthcheck')
        self.assertEqual(200, response.status_code)

    def test_no_identity_is_401(self):
        error = self.assertError(self.call('GET', '/v1/tiers'), 401)
        self.assertIn('X-Project-Id', error['message'])
        for project in ('p\x00', 'p q', 'p' * 65):
            self.assertError(self.call('GET', '/v1/tiers', headers={
                'X-User-Id': 'u', 'X-Project-Id': project}), 401)

    def test_unknown_path_and_method(self):
        self.assertError(self.call('GET', '/v1/nope', who=ADMIN), 404)
        response = self.call('POST', '/v1/decisions', who=ADMIN, body={})
        self.assertError(response, 405, 'GET')
        self.assertEqual('GET, HEAD, OPTIONS', response.headers['Allow'])
        # A final newline is a path segment of its own (a name that is
        # not valid), not the end of /v1/tiers/.
        self.assertError(self.call('PATCH', '/v1/tiers/%0A', who=ADMIN,
                                   body={'weight': 2}), 400, 'tier name')

    def test_head_and_options(self):
        got = self.call('GET', '/v1/tiers/gold', who=READER_A)
        head = self.call('HEAD', '/v1/tiers/gold', who=READER_A)
        self.assertEqual((200, b''), (head.status_code, head.body))
        self.assertEqual(got.headers['Content-Length'],
                         head.headers['Content-Length'])
        self.assertEqual('application/json', head.content_type)
        missing = self.call('HEAD', '/v1/tiers/nope', who=READER_A)
        self.assertEqual((404, b''), (missing.status_code, missing.body))
        for path, allowed in (
                ('/v1/tiers/gold', 'GET, PATCH, DELETE, HEAD, OPTIONS'),
                ('/v1/instances/%s/tier' % A1, 'PUT, DELETE, OPTIONS'),
                ('/v1/instances', 'GET, HEAD, OPTIONS')):
            response = self.call('OPTIONS', path, who=READER_A)
            self.assertEqual(204, response.status_code, response.text)
            self.assertEqual(allowed, response.headers['Allow'])
            self.assertEqual(b'', response.body)

    def test_unknown_query_parameters_are_400(self):
        for path in ('/v1/tiers', '/v1/tiers/gold', '/v1/domains',
                     '/v1/instances/%s' % A1, '/v1', '/v1/instances',
                     '/v1/decisions/%d' % self.decisions[0], '/v1/agents'):
            self.assertError(self.call('GET', path + '?color=red',
                                       who=ADMIN), 400, 'color')
        self.assertError(self.call('PUT', '/v1/instances/%s/tier?dev=vda'
                                   % A1, who=MEMBER_A,
                                   body={'tier': 'bronze'}), 400, 'dev')
        self.assertEqual([None, None], [
            d['tier'] for d in self.db.disk_list(instance_uuid=A1)])
        self.assertEqual(200, self.call('GET', '/v1/decisions?limit=1',
                                        who=ADMIN).status_code)

    def test_media_type_any_case_utf8_only(self):
        for content_type in ('APPLICATION/JSON', 'Application/Json',
                             'application/json; charset=UTF-8',
                             'application/json;charset="utf-8"'):
            response = self.call('PATCH', '/v1/tiers/bronze', who=ADMIN,
                                 raw=b'{"weight": 2}',
                                 content_type=content_type)
            self.assertEqual(200, response.status_code, content_type)
        self.assertError(self.call('PATCH', '/v1/tiers/bronze', who=ADMIN,
                                   raw=b'{"weight": 3}',
                                   content_type='application/json; '
                                                'charset=latin-1'),
                         415, 'latin-1')
        self.assertEqual(2.0, self.db.tier_get('bronze').weight)

    def test_bytes_that_are_not_text_are_json_400(self):
        """Before auth or after: the JSON error with its request id."""
        for who in (None, READER_A):
            for environ in ({'PATH_INFO': '/v1/tiers/\xff'},
                            {'PATH_INFO': '/v1/tiers/\xed\xa0\x80'},
                            {'PATH_INFO': '/v1/tiers/gold\x00'},
                            {'PATH_INFO': '/\xc3'},
                            {'PATH_INFO': '/v1/decisions',
                             'QUERY_STRING': 'since=%ff'},
                            {'PATH_INFO': '/v1/decisions',
                             'QUERY_STRING': 'domain=\xff'},
                            {'PATH_INFO': '/v1/decisions',
                             'QUERY_STRING': '%ed%a0%80=1'},
                            {'PATH_INFO': '/v1/decisions',
                             'QUERY_STRING': 'domain=a%00'}):
                error = self.assertError(self.call('GET', '/', who=who,
                                                   environ=environ), 400)
                self.assertTrue(error['request_id'], environ)

    def test_proxy_prefix_that_is_not_text_is_json_400(self):
        self.conf.register_opts(http_proxy_to_wsgi.OPTS,
                                group='oslo_middleware')
        self.flags(group='oslo_middleware', enable_proxy_headers_parsing=True)
        self.app = app.deploy(self.conf, db=self.db)
        response = self.call('POST', '/v1/tiers', who=ADMIN,
                             body={'name': 'silver'},
                             headers={'X-Forwarded-Prefix': '/api'})
        self.assertEqual('http://localhost/api/v1/tiers/silver',
                         response.location)
        for prefix in ('/\xff', '/a\x00'):
            error = self.assertError(self.call('GET', '/v1/tiers', headers={
                'X-Forwarded-Prefix': prefix}), 400, 'path')
            self.assertTrue(error['request_id'])

    def test_deep_bodies_are_400(self):
        for raw in (b'[' * 60000, b'{"name": ' + b'[' * 40 + b']' * 40
                    + b'}'):
            self.assertError(self.call('POST', '/v1/tiers', who=ADMIN,
                                       raw=raw), 400, 'deeper')
        self.assertEqual(3, len(self.db.tier_list()))

    # -- tiers ----------------------------------------------------------------

    def test_tier_list_is_per_project(self):
        names = [t['name'] for t in self.call(
            'GET', '/v1/tiers', who=READER_A).json['tiers']]
        self.assertEqual(['bronze', 'gold'], names)
        tiers = self.call('GET', '/v1/tiers', who=MEMBER_B).json['tiers']
        self.assertEqual(['bronze', 'gold', 'private-b'],
                         [t['name'] for t in tiers])
        self.assertNotIn('projects', tiers[2])
        tiers = self.call('GET', '/v1/tiers', who=ADMIN).json['tiers']
        self.assertEqual(['proj-b'], tiers[2]['projects'])
        self.assertError(self.call('GET', '/v1/tiers', who=NOROLE_A), 403)
        self.assertError(self.call('GET', '/v1/tiers?x=1', who=READER_A),
                         400, 'x')

    def test_tier_show(self):
        tier = self.call('GET', '/v1/tiers/gold', who=READER_A).json['tier']
        self.assertEqual((2000.0, 5000.0, 4.0), (
            tier['min_iops'], tier['max_iops'], tier['weight']))
        self.assertError(self.call('GET', '/v1/tiers/private-b',
                                   who=READER_A), 404)
        self.assertEqual(200, self.call('GET', '/v1/tiers/private-b',
                                        who=MEMBER_B).status_code)
        self.assertError(self.call('GET', '/v1/tiers/nope', who=ADMIN), 404)
        self.assertError(self.call('GET', '/v1/tiers/b%20d', who=ADMIN), 400)

    def test_tier_create_update_delete(self):
        body = {'name': 'silver', 'min_iops': 500, 'min_bytes_sec': 20e6,
                'max_iops': 1000, 'weight': 2, 'is_public': False,
                'projects': ['proj-a'], 'description': 'for databases'}
        response = self.call('POST', '/v1/tiers', body=body, who=ADMIN)
        self.assertEqual(201, response.status_code, response.text)
        self.assertEqual('http://localhost/v1/tiers/silver',
                         response.location)
        self.assertEqual(['proj-a'], response.json['tier']['projects'])
        self.assertEqual(500.0, response.json['tier']['min_iops'])
        self.assertIn('silver', [t['name'] for t in self.call(
            'GET', '/v1/tiers', who=READER_A).json['tiers']])
        response = self.call('PATCH', '/v1/tiers/silver', who=ADMIN,
                             body={'weight': 3, 'projects': []})
        self.assertEqual(200, response.status_code, response.text)
        self.assertEqual(3.0, response.json['tier']['weight'])
        self.assertEqual(20e6, response.json['tier']['min_bytes_sec'])
        self.assertNotIn('silver', [t['name'] for t in self.call(
            'GET', '/v1/tiers', who=READER_A).json['tiers']])
        response = self.call('DELETE', '/v1/tiers/silver', who=ADMIN)
        self.assertEqual(204, response.status_code)
        self.assertEqual(b'', response.body)
        self.assertError(self.call('GET', '/v1/tiers/silver', who=ADMIN),
                         404)
        self.assertError(self.call('DELETE', '/v1/tiers/silver', who=ADMIN),
                         404)
        self.assertError(self.call('PATCH', '/v1/tiers/silver', who=ADMIN,
                                   body={'weight': 1}), 404)

    def test_tier_changes_are_admin_only(self):
        for who in (MEMBER_A, READER_A, NOROLE_A):
            self.assertError(self.call('POST', '/v1/tiers', who=who,
                                       body={'name': 'x'}), 403)
            self.assertError(self.call('PATCH', '/v1/tiers/gold', who=who,
                                       body={'weight': 9}), 403)
            self.assertError(self.call('DELETE', '/v1/tiers/bronze',
                                       who=who), 403)
        self.assertEqual(4.0, self.db.tier_get('gold').weight)
        self.assertEqual(3, len(self.db.tier_list()))

    def test_tier_conflicts(self):
        self.assertError(self.call('POST', '/v1/tiers', who=ADMIN,
                                   body={'name': 'gold'}), 409,
                         'already exists')
        error = self.assertError(self.call('DELETE', '/v1/tiers/gold',
                                           who=ADMIN), 409, 'in use')
        self.assertNotIn('numbers', error)
        self.assertEqual('gold', self.db.tier_get('gold').name)

    def test_tier_bad_bodies(self):
        cases = [
            ({'name': 'x', 'colour': 'red'}, 'colour'),
            ({'name': 'x', 'min_iops': 'many'}, 'min_iops'),
            ({'name': 'x', 'min_iops': -1}, 'min_iops'),
            ({'name': 'x', 'weight': 0}, 'weight'),
            ({'name': 'x', 'min_iops': 10, 'max_iops': 5}, 'above'),
            ({'name': 'x', 'is_public': 'yes'}, 'is_public'),
            ({'name': 'x' * 65}, 'name'),
            ({'name': 'a/b'}, 'name'),
            ({'min_iops': 1}, 'name'),
            ({'name': 'x', 'projects': ['p', 'p']}, 'projects'),
            ([], 'object'),
        ]
        for body, part in cases:
            self.assertError(self.call('POST', '/v1/tiers', who=ADMIN,
                                       body=body), 400, part)
        self.assertError(self.call('PATCH', '/v1/tiers/gold', who=ADMIN,
                                   body={}), 400)
        self.assertError(self.call('PATCH', '/v1/tiers/gold', who=ADMIN,
                                   body={'name': 'platinum'}), 400, 'name')
        self.assertError(self.call('PATCH', '/v1/tiers/gold', who=ADMIN,
                                   body={'max_iops': 1000}), 400, 'above')
        self.assertEqual(3, len(self.db.tier_list()))

    def test_strings_the_database_cannot_hold_are_400(self):
        """Nothing is written, and a retry is not a 409."""
        for raw, part in (
                (br'{"name": "x\n"}', 'name'),
                (b'{"name": "."}', 'name'), (b'{"name": ".."}', 'name'),
                (br'{"name": "x", "description": "a\u0000b"}', 'U+0000'),
                (br'{"name": "x", "description": "\ud800"}', 'U+D800'),
                (br'{"name": "x", "projects": ["p\u0000"]}', 'U+0000'),
                (br'{"name": "x", "projects": ["p\udfff"]}', 'U+DFFF'),
                (br'{"name": "x", "\ud800": 1}', 'U+D800')):
            for _attempt in range(2):
                self.assertError(self.call('POST', '/v1/tiers', who=ADMIN,
                                           raw=raw), 400, part)
        self.assertError(self.call('PATCH', '/v1/tiers/gold', who=ADMIN,
                                   raw=br'{"description": "\u0000"}'), 400,
                         'U+0000')
        self.assertError(self.call('PUT', '/v1/instances/%s/tier' % A1,
                                   who=MEMBER_A, raw=br'{"tier": "gold\n"}'),
                         400, 'tier')
        self.assertEqual(['bronze', 'gold', 'private-b'],
                         [t.name for t in self.db.tier_list()])
        self.assertEqual('', self.db.tier_get('gold').description)
        self.assertEqual([None, None], [
            d['tier'] for d in self.db.disk_list(instance_uuid=A1)])
        for name, code in (('.', 400), ('..', 400), ('x.', 201),
                           ('..x', 201), ('...', 201)):
            self.assertEqual(code, self.call('POST', '/v1/tiers', who=ADMIN,
                                             body={'name': name}).status_code,
                             name)

    def test_malformed_requests(self):
        for raw, part in ((b'{"name": ', 'JSON'), (b'\xff\xfe', 'JSON'),
                          (b'{"name": "x", "min_iops": NaN}', 'NaN'),
                          (b'', 'JSON')):
            self.assertError(self.call('POST', '/v1/tiers', who=ADMIN,
                                       raw=raw), 400, part)
        self.assertError(self.call('POST', '/v1/tiers', who=ADMIN,
                                   raw=b'name=x',
                                   content_type='text/plain'), 415)
        big = b'{"name": "x", "description": "%s"}' % (b'a' * 70000)
        self.assertError(self.call('POST', '/v1/tiers', who=ADMIN, raw=big),
                         413)
        self.assertEqual(3, len(self.db.tier_list()))

    # -- instances ------------------------------------------------------------

    def test_show_own_instance(self):
        response = self.call('GET', '/v1/instances/%s' % A1, who=READER_A)
        self.assertEqual(200, response.status_code, response.text)
        instance = response.json['instance']
        self.assertEqual((A1, 'proj-a'), (instance['uuid'],
                                          instance['project_id']))
        vda, vdb = instance['disks']
        # where the disk lives is the admin's: the reader gets an opaque id
        self.assertEqual(('vda', disk_view.domain_id('proj-a', 'local:cn1')),
                         (vda['dev'], vda['domain_id']))
        for path in ('/v1/instances', '/v1/instances/' + A1,
                     '/v1/decisions'):
            text = self.call('GET', path, who=READER_A).text
            for leak in ('cn1', '"host"', '"domain"'):
                self.assertNotIn(leak, text, path)
        admin = self.call('GET', '/v1/instances/%s' % A1,
                          who=ADMIN).json['instance']['disks'][0]
        self.assertEqual(('local:cn1', 'cn1'),
                         (admin['domain'], admin['host']))
        self.assertEqual(VOL, vdb['volume_id'])
        self.assertEqual(300.0, vda['rates']['read_iops'])
        self.assertEqual(2.5, vda['rates']['latency_ms'])
        self.assertEqual('2026-11-22T03:00:00Z', vda['rates']['sampled_at'])
        self.assertIsNone(vdb['rates'])
        self.assertEqual({'total_iops_sec': 104}, vda['cap']['limits'])
        self.assertEqual('reason 4', vda['cap']['reason'])
        self.assertEqual(self.decisions[4], vda['cap']['decision_id'])
        self.assertIsNone(vdb['cap'])
        self.assertIsNone(vda['tier'])
        self.assertEqual({'min_iops': 0.0, 'min_bytes_sec': 0.0},
                         vda['floor'])
        gold = self.call('GET', '/v1/instances/%s' % B1,
                         who=MEMBER_B).json['instance']['disks'][0]
        self.assertEqual(('gold', 'api', 2000.0, 5000.0), (
            gold['tier'], gold['tier_source'], gold['floor']['min_iops'],
            gold['ceiling']['max_iops']))

    def test_instance_isolation(self):
        for path in ('/v1/instances/%s' % A1,
                     '/v1/instances/%s' % A1.upper()):
            response = self.call('GET', path, who=MEMBER_B)
            self.assertError(response, 404)
            self.assertNotIn('vda', response.text)
            self.assertNotIn('proj-a', response.text)
        self.assertError(self.call('GET', '/v1/instances/%s' % A1,
                                   who=NOROLE_A), 403)
        response = self.call('GET', '/v1/instances/%s' % A1, who=ADMIN)
        self.assertEqual(2, len(response.json['instance']['disks']))

    def test_disk_record(self):
        minute = datetime.timedelta(minutes=1)
        dbrows.minute_add(self.db, A1, 'vda', T0, floor_kept_s=45.0,
                          capped_s=30.0, iops=400.0,
                          cap_reason='capped at 300 IOPS: its own numbers',
                          floor_iops=100.0, cap_iops=300.0)
        dbrows.minute_add(self.db, A1, 'vda', T0 + minute)
        dbrows.minute_add(self.db, B1, 'vda', T0, floor_kept_s=1.0)
        path = '/v1/instances/%s/disks/vda/record' % A1
        window = '?since=2026-11-22T03:00:00Z&until=2026-11-22T04:00:00Z'
        response = self.call('GET', path + window, who=READER_A)
        self.assertEqual(200, response.status_code, response.text)
        record = response.json['record']
        self.assertEqual((120.0, 105 / 120, 30.0), (
            record['floor_due_s'], record['floor_kept_ratio'],
            record['capped_s']))
        self.assertEqual([0.75, 1.0], [m['floor_kept_ratio']
                                       for m in record['minutes']])
        self.assertEqual('capped at 300 IOPS: its own numbers',
                         record['minutes'][0]['cap_reason'])
        self.assertEqual([(100.0, None, 300.0, None), (None,) * 4], [
            (m['floor_iops'], m['floor_bytes_sec'], m['cap_iops'],
             m['cap_bytes_sec']) for m in record['minutes']])
        # never where the disk lives nor another disk's numbers
        for leak in ('cn1', 'local:cn1', 'proj-b', 'disk_id', 'domain'):
            self.assertNotIn(leak, response.text)
        # the last hour by default: T0 is just out of it, T0 + 1 min in
        self.at(T0 + datetime.timedelta(hours=1, seconds=30))
        self.assertEqual(['2026-11-22T03:01:00Z'], [
            m['minute'] for m in self.call('GET', path, who=READER_A)
            .json['record']['minutes']])
        # another project's disk, an unknown disk: 404; the admin sees any
        self.assertError(self.call('GET', path + window, who=MEMBER_B), 404)
        self.assertError(self.call(
            'GET', '/v1/instances/%s/disks/vdz/record' % A1, who=READER_A),
            404)
        self.assertEqual(1, len(self.call(
            'GET', '/v1/instances/%s/disks/vda/record%s' % (B1, window),
            who=ADMIN).json['record']['minutes']))
        self.assertError(self.call('GET', path, who=NOROLE_A), 403)
        # bad windows and parameters: 400, saying why
        for query, part in (
                ('?since=2026-11-22T04:00:00Z&until=2026-11-22T03:00:00Z',
                 'before until'),
                ('?since=2026-11-20T00:00:00Z&until=2026-11-22T03:00:00Z',
                 'at most 24 hours'),
                ('?since=yesterday', 'since'),
                ('?since=2026-13-40T00:00:00', 'since'),
                ('?limit=3', 'limit')):
            self.assertError(self.call('GET', path + query, who=READER_A),
                             400, part)
        self.assertError(self.call(
            'GET', '/v1/instances/%s/disks/%s/record' % (A1, 'x' * 70),
            who=READER_A), 400, 'dev')

    def test_instance_bad_and_unknown_uuid(self):
        for bad in ('not-a-uuid', 'aaaaaaaa00004000800000000000000z',
                    'x' * 300):
            self.assertError(self.call('GET', '/v1/instances/%s' % bad,
                                       who=READER_A), 400, 'UUID')
            self.assertError(self.call('PUT', '/v1/instances/%s/tier' % bad,
                                       who=MEMBER_A, body={'tier': 'gold'}),
                             400, 'UUID')
        self.assertError(self.call(
            'GET', '/v1/instances/dddddddd-0000-4000-8000-000000000000',
            who=ADMIN), 404)

    # -- GET /v1/instances ---------------------------------------------------

    def list_instances(self, who, query=''):
        response = self.call('GET', '/v1/instances' + query, who=who)
        self.assertEqual(200, response.status_code, response.text)
        return response.json['instances']

    def test_list_own_instances(self):
        instances = self.list_instances(READER_A)
        self.assertEqual([A1, A2, A3], [i['uuid'] for i in instances])
        self.assertEqual({'proj-a'}, {i['project_id'] for i in instances})
        # The same disk view as GET /v1/instances/{uuid}.
        shown = self.call('GET', '/v1/instances/%s' % A1,
                          who=READER_A).json['instance']
        self.assertEqual(shown, instances[0])
        self.assertEqual([], self.list_instances(
            {'project': 'proj-c', 'roles': 'reader'}))
        # The admin lists its own project's unless asking for more.
        self.assertEqual([], self.list_instances(ADMIN))
        b1 = self.list_instances(MEMBER_B)[0]['disks'][0]
        self.assertEqual(('gold', 'api', {'min_iops': 2000.0,
                                          'min_bytes_sec': 0.0}),
                         (b1['tier'], b1['tier_source'], b1['floor']))

    def test_list_all_projects_is_the_admins(self):
        everyone = self.list_instances(ADMIN, '?all_projects=True')
        self.assertEqual([A1, A2, A3, B1], [i['uuid'] for i in everyone])
        self.assertEqual([B1], [i['uuid'] for i in self.list_instances(
            ADMIN, '?project_id=proj-b')])
        self.assertEqual([B1], [i['uuid'] for i in self.list_instances(
            ADMIN, '?all_projects=true&project_id=proj-b')])
        self.assertEqual(3, len(self.list_instances(
            READER_A, '?all_projects=0&project_id=proj-a')))
        for query in ('?all_projects=true', '?project_id=proj-b',
                      '?all_projects=false&project_id=proj-b'):
            response = self.call('GET', '/v1/instances' + query,
                                 who=MEMBER_A)
            self.assertError(response, 403, 'iotguard:instance:all_projects')
            self.assertNotIn(B1, response.text)
        self.assertError(self.call('GET', '/v1/instances', who=NOROLE_A),
                         403, 'iotguard:instance:list')

    def test_list_bad_queries(self):
        for query, part in (('all_projects=maybe', 'all_projects'),
                            ('all_projects=', 'all_projects'),
                            ('project_id=a%20b', 'project_id'),
                            ('project_id=' + 'p' * 65, 'project_id'),
                            ('limit=1', 'limit'),
                            ('all_projects=1&all_projects=0',
                             'more than once')):
            self.assertError(self.call('GET', '/v1/instances?' + query,
                                       who=ADMIN), 400, part)

    # -- DELETE /v1/instances/{uuid}/tier ------------------------------------

    def test_unset_tier_falls_back(self):
        # A1's flavor names bronze (its image disk only: vdb is a volume).
        self.db.disk_tier_set(A1, '*', 'bronze', 'flavor', 'proj-a')
        self.call('PUT', '/v1/instances/%s/tier' % A1, who=MEMBER_A,
                  body={'tier': 'gold'})
        disks = self.db.disk_list(instance_uuid=A1)
        self.assertEqual([('gold', 'api')] * 2,
                         [(d['tier'].name, d['tier_source'])
                          for d in disks])
        response = self.call('DELETE', '/v1/instances/%s/tier' % A1.upper(),
                             who=MEMBER_A)
        self.assertEqual(204, response.status_code, response.text)
        self.assertEqual(b'', response.body)
        vda, vdb = self.call('GET', '/v1/instances/%s' % A1,
                             who=READER_A).json['instance']['disks']
        self.assertEqual(('bronze', 'flavor', 100.0),
                         (vda['tier'], vda['tier_source'],
                          vda['floor']['min_iops']))
        self.assertEqual((None, None), (vdb['tier'], vdb['tier_source']))
        self.assertEqual([(A1, 'gold'), (A1, None)],
                         self.nova_calls)
        # Again: nothing left to drop, still 204.
        self.assertEqual(204, self.call('DELETE', '/v1/instances/%s/tier'
                                        % A1, who=MEMBER_A).status_code)

    def test_unset_tier_isolation_and_roles(self):
        path = '/v1/instances/%s/tier' % B1
        for who, code in ((MEMBER_A, 404), (READER_A, 403),
                          ({'project': 'proj-b', 'roles': 'reader'}, 403),
                          (NOROLE_A, 403)):
            self.assertError(self.call('DELETE', path, who=who), code)
        self.assertEqual('gold', self.db.disk_list(
            instance_uuid=B1)[0]['tier'].name)
        self.assertEqual([], self.nova_calls)
        self.assertEqual(204, self.call('DELETE', path,
                                        who=ADMIN).status_code)
        self.assertIsNone(self.db.disk_list(instance_uuid=B1)[0]['tier'])
        self.assertEqual([(B1, None)], self.nova_calls)

    def test_unset_tier_bad_and_unknown_uuid(self):
        self.assertError(self.call('DELETE', '/v1/instances/nope/tier',
                                   who=MEMBER_A), 400, 'UUID')
        self.assertError(self.call(
            'DELETE', '/v1/instances/dddddddd-0000-4000-8000-000000000000/'
            'tier', who=ADMIN), 404, 'dddddddd')
        self.assertError(self.call('DELETE', '/v1/instances/%s/tier?x=1'
                                   % A1, who=MEMBER_A), 400, 'x')
        self.assertEqual([], self.nova_calls)

    def test_set_tier_admitted(self):
        response = self.call('PUT', '/v1/instances/%s/tier' % A1,
                             who=MEMBER_A, body={'tier': 'gold'})
        self.assertEqual(200, response.status_code, response.text)
        instance = response.json['instance']
        self.assertEqual('synced', instance['nova_metadata'])
        # A member sees the verdict, not the domain's numbers (they add up
        # other projects' floors) nor its name, only its opaque id.
        self.assertEqual([{'domain_id': disk_view.domain_id(
            'proj-a', 'local:cn1'), 'tier': 'gold'}], instance['admission'])
        self.assertEqual([(A1, 'gold')], self.nova_calls)
        disks = self.call('GET', '/v1/instances/%s' % A1,
                          who=READER_A).json['instance']['disks']
        self.assertEqual(['gold', 'gold'], [d['tier'] for d in disks])
        # The admin sees them: B1 has gold (0.22048), A1 two gold disks.
        response = self.call('PUT', '/v1/instances/%s/tier' % A1,
                             who=ADMIN, body={'tier': 'gold'})
        numbers = response.json['instance']['admission'][0]
        self.assertAlmostEqual(3 * 0.22048, numbers['committed_before'])
        self.assertAlmostEqual(3 * 0.22048, numbers['committed_after'])
        self.assertEqual(0.9, numbers['max_commit_ratio'])

    def test_set_tier_refused_writes_nothing(self):
        self.call('PUT', '/v1/instances/%s/tier' % A1, who=MEMBER_A,
                  body={'tier': 'gold'})
        self.nova_calls.clear()
        response = self.call('PUT', '/v1/instances/%s/tier' % A3,
                             who=MEMBER_A, body={'tier': 'gold'})
        error = self.assertError(response, 409, disk_view.domain_id(
            'proj-a', 'local:cn1'))
        self.assertNotIn('cn1', error['message'])
        self.assertNotIn('numbers', error)
        self.assertNotIn('0.', error['message'])
        error = self.assertError(
            self.call('PUT', '/v1/instances/%s/tier' % A3, who=ADMIN,
                      body={'tier': 'gold'}), 409, 'local:cn1')
        self.assertAlmostEqual(5 * 0.22048,
                               error['numbers']['committed_after'])
        self.assertAlmostEqual(3 * 0.22048,
                               error['numbers']['committed_before'])
        self.assertEqual([], self.nova_calls)
        disks = self.db.disk_list(instance_uuid=A3)
        self.assertEqual([None, None], [d['tier'] for d in disks])
        # A smaller tier still fits.
        response = self.call('PUT', '/v1/instances/%s/tier' % A3,
                             who=MEMBER_A, body={'tier': 'bronze'})
        self.assertEqual(200, response.status_code, response.text)

    def test_set_tier_on_uncalibrated_domain(self):
        self.assertError(self.call('PUT', '/v1/instances/%s/tier' % A2,
                                   who=MEMBER_A, body={'tier': 'gold'}),
                         409, 'calibrate')
        self.assertIsNone(self.db.disk_list(instance_uuid=A2)[0]['tier'])

    def test_set_tier_within_unified_limits(self):
        """Keystone's limits of floor units (oslo.limit's fixture)."""
        self.flags(group='admission', unified_limits=True)
        global_conf = self.useFixture(config_fixture.Config(cfg.CONF))
        global_conf.config(group='oslo_limit', endpoint_id='iotguard')
        # A floor unit is 1 IOPS or 64 KiB/s: gold's 2000 IOPS of 4 KiB
        # are 2125 units, bronze's 100 are 107 (106.25 rounded up).
        self.useFixture(limit_fixture.LimitFixture(
            {limits.LOCAL: 4250, limits.SHARED: 0},
            {'proj-b': {limits.LOCAL: 0}}))
        self.app = self.deploy(self.db)

        def choose(uuid, tier, who=MEMBER_A):
            return self.call('PUT', '/v1/instances/%s/tier' % uuid,
                             who=who, body={'tier': tier})

        # A1's two disks: 4250 units, the registered limit's all.
        self.assertEqual(200, choose(A1, 'gold').status_code)
        for who in (MEMBER_A, ADMIN):
            self.assertError(
                choose(A3, 'bronze', who), 409,
                'iotguard_floor_units_local: limit 4250, committed 4250, '
                'this choice 214 more')
        self.assertEqual([None, None], [
            d['tier'] for d in self.db.disk_list(instance_uuid=A3)])
        self.assertEqual([(A1, 'gold')], self.nova_calls)
        # Any shared domain's floors: none allowed.
        self.assertError(choose(A2, 'bronze'), 409,
                         'iotguard_floor_units_shared: limit 0')
        # proj-b's own limit of 0 does not refuse what raises nothing.
        self.assertEqual(200, choose(B1, 'gold', MEMBER_B).status_code)
        # Lower first, then A3 fits: 214 + 214 units.
        self.assertEqual(200, choose(A1, 'bronze').status_code)
        self.assertEqual(200, choose(A3, 'bronze').status_code)
        self.assertEqual(['bronze', 'bronze'], [
            d['tier'].name for d in self.db.disk_list(instance_uuid=A3)])

    def test_set_tier_isolation_and_roles(self):
        response = self.call('PUT', '/v1/instances/%s/tier' % A1,
                             who=MEMBER_B, body={'tier': 'bronze'})
        self.assertError(response, 404)
        self.assertNotIn('proj-a', response.text)
        self.assertError(self.call('PUT', '/v1/instances/%s/tier' % A1,
                                   who=READER_A, body={'tier': 'bronze'}),
                         403)
        self.assertError(self.call('PUT', '/v1/instances/%s/tier' % A1,
                                   who=MEMBER_A,
                                   body={'tier': 'private-b'}), 404)
        self.assertError(self.call('PUT', '/v1/instances/%s/tier' % A1,
                                   who=MEMBER_A, body={'tier': 'nope'}), 404)
        self.assertEqual([None, None], [
            d['tier'] for d in self.db.disk_list(instance_uuid=A1)])
        self.assertEqual([], self.nova_calls)
        response = self.call('PUT', '/v1/instances/%s/tier' % A1, who=ADMIN,
                             body={'tier': 'bronze'})
        self.assertEqual(200, response.status_code, response.text)
        self.assertEqual('proj-a', response.json['instance']['project_id'])

    def test_set_tier_bad_bodies(self):
        for body in ({}, {'tier': 5}, {'tier': 'gold', 'dev': 'vda'},
                     {'tier': ''}, ['gold']):
            self.assertError(self.call('PUT', '/v1/instances/%s/tier' % A1,
                                       who=MEMBER_A, body=body), 400)
        self.assertEqual([], self.nova_calls)

    # -- domains --------------------------------------------------------------

    def test_domains_for_the_admin(self):
        self.at(T0 + datetime.timedelta(seconds=1))
        domains = self.call('GET', '/v1/domains', who=ADMIN).json['domains']
        self.assertEqual(['ceph:new', 'local:cn1'],
                         [d['name'] for d in domains])
        self.assertIsNone(domains[0]['profile'])
        self.assertEqual({'iops_4k': 10000.0, 'bytes_sec': 400e6,
                          'form': 'additive', 'source': 'manual'},
                         domains[1]['profile'])
        domain = self.call('GET', '/v1/domains/local:cn1',
                           who=ADMIN).json['domain']
        self.assertAlmostEqual(0.22048, domain['committed'])
        # A1 vda: 400 IOPS and 5e6 B/s.
        self.assertAlmostEqual(400 / 10000.0 + 5e6 / 400e6,
                               domain['utilisation'])
        self.assertEqual(5, len(domain['disks']))
        self.assertEqual('guarantee', domain['policy'])
        self.assertError(self.call('GET', '/v1/domains/nope', who=ADMIN),
                         404)

    def test_domain_load_at_max_rate_is_finite(self):
        self.at(T0 + datetime.timedelta(seconds=1))
        # Every disk of local:cn1 at the largest rates a sample may carry.
        for uuid, dev in ((A1, 'vda'), (A1, 'vdb'), (A3, 'vda'),
                          (A3, 'vdb'), (B1, 'vda')):
            dbrows.disk_update_rates(
                self.db, uuid, dev, T0, read_iops=caps.MAX_RATE,
                write_iops=caps.MAX_RATE, read_bytes_sec=caps.MAX_RATE,
                write_bytes_sec=caps.MAX_RATE)
        response = self.call('GET', '/v1/domains/local:cn1', who=ADMIN)
        self.assertEqual(200, response.status_code, response.text)
        self.assertAlmostEqual(
            5 * (2e15 / 10000.0 + 2e15 / 400e6),
            response.json['domain']['utilisation'], delta=1.0)

    def test_domain_load_that_overflows_is_unknown(self):
        self.at(T0 + datetime.timedelta(seconds=1))
        # Rates stored before caps.MAX_RATE: each finite, their sum not.
        logs = self.useFixture(fixtures.FakeLogger(level=logging.WARNING))
        for dev in ('vda', 'vdb'):
            dbrows.disk_update_rates(self.db, A3, dev, T0, read_iops=1.7e308,
                                     write_iops=1.7e308)
        response = self.call('GET', '/v1/domains/local:cn1', who=ADMIN)
        self.assertEqual(200, response.status_code, response.text)
        self.assertIsNone(response.json['domain']['utilisation'])
        self.assertIn('load of domain local:cn1 overflows', logs.output)

    def test_domains_for_a_project(self):
        domains = self.call('GET', '/v1/domains',
                            who=MEMBER_B).json['domains']
        # The domain by its opaque id, as the project's disks show it.
        b_cn1 = disk_view.domain_id('proj-b', 'local:cn1')
        self.assertEqual([{'domain_id': b_cn1, 'kind': 'local'}], domains)
        self.assertNotEqual(b_cn1, disk_view.domain_id('proj-a', 'local:cn1'))
        response = self.call('GET', '/v1/domains/' + b_cn1, who=MEMBER_B)
        self.assertEqual(200, response.status_code, response.text)
        domain = response.json['domain']
        self.assertEqual([B1], [d['instance_uuid'] for d in domain['disks']])
        self.assertEqual({b_cn1}, {d['domain_id'] for d in domain['disks']})
        for secret in ('name', 'committed', 'utilisation', 'profile',
                       'params'):
            self.assertNotIn(secret, domain)
        self.assertNotIn(A1, response.text)
        self.assertNotIn('cn1', response.text.replace(b_cn1, ''))
        # Its real name, or another project's id for it, names nothing.
        for name in ('local:cn1', disk_view.domain_id('proj-a', 'local:cn1'),
                     'ceph:new', disk_view.domain_id('proj-b', 'ceph:new')):
            self.assertError(self.call('GET', '/v1/domains/' + name,
                                       who=MEMBER_B), 404)
        self.assertError(self.call('GET', '/v1/domains/nope',
                                   who=MEMBER_B), 404)
        self.assertError(self.call('GET', '/v1/domains', who=NOROLE_A), 403)

    def test_domain_update(self):
        response = self.call('PATCH', '/v1/domains/ceph:new', who=ADMIN,
                             body={'iops_4k': 20000, 'bytes_sec': 1e9,
                                   'policy': 'none', 'params': {}})
        self.assertEqual(200, response.status_code, response.text)
        profile = response.json['domain']['profile']
        manual = {'iops_4k': 20000.0, 'bytes_sec': 1e9, 'form': 'additive'}
        self.assertEqual(dict(manual, source='manual', manual=manual,
                              learned=None), profile)
        self.assertIsInstance(profile['iops_4k'], float)
        self.assertEqual('none', self.db.domain_get('ceph:new').policy)
        # Now calibrated, the domain admits a floor.
        self.assertEqual(200, self.call(
            'PUT', '/v1/instances/%s/tier' % A2, who=MEMBER_A,
            body={'tier': 'bronze'}).status_code)

    def test_domain_update_refusals(self):
        for body, code, part in (
                ({'iops_4k': -5}, 400, 'iops_4k'),
                ({'iops_4k': 0}, 400, 'iops_4k'),
                ({'iops_4k': 1e-306}, 400, 'iops_4k'),
                ({'iops_4k': 0.5}, 400, 'iops_4k'),
                ({'iops_4k': 2e9}, 400, 'iops_4k'),
                ({'bytes_sec': 4095}, 400, 'bytes_sec'),
                ({'bytes_sec': 1e-300}, 400, 'bytes_sec'),
                ({'bytes_sec': 2e15}, 400, 'bytes_sec'),
                ({'policy': 'ntt', 'params': {'cap_time': 1e300}}, 400,
                 'cap_time'),
                ({'policy': 'magic'}, 400, 'magic'),
                ({'policy': 'none', 'params': {'bogus': 1}}, 400, 'bogus'),
                ({'kind': 'ceph'}, 400, 'kind'),
                ({}, 400, None)):
            self.assertError(self.call('PATCH', '/v1/domains/local:cn1',
                                       who=ADMIN, body=body), code, part)
        self.assertError(self.call('PATCH', '/v1/domains/local:cn1',
                                   who=MEMBER_A, body={'iops_4k': 1}), 403)
        self.assertError(self.call('PATCH', '/v1/domains/nope', who=ADMIN,
                                   body={'iops_4k': 1}), 404)
        self.assertError(self.call('PATCH', '/v1/domains/local:cn1',
                                   who=ADMIN, raw=b'{"params": {"x": 1e999}}'),
                         400, 'out of range')
        domain = self.db.domain_get('local:cn1')
        self.assertEqual((10000.0, None), (domain.iops_4k, domain.policy))
        self.assertEqual(200, self.call('GET', '/v1/domains/local:cn1',
                                        who=ADMIN).status_code)

    def learn(self, **fields):
        """Store a fit of local:cn1 and return it.

        By default: max form, 12000 IOPS, 5e8 B/s, both identified.
        """
        fit = dict({'form': 'max', 'iops_4k': 12000.0, 'bytes_sec': 5e8,
                    'error': 0.02,
                    'identified': ['iops_4k', 'bytes_sec']}, **fields)
        self.db.domain_learned('local:cn1', estimator.Fit(**dict(
            fit, identified=tuple(fit['identified']))), {'saturated': []})
        return fit

    def test_learned_profile_shown_and_chosen(self):
        fit = self.learn(intervals=60, mixes=3, confidence=1.0)
        domain = self.call('GET', '/v1/domains/local:cn1',
                           who=ADMIN).json['domain']
        profile = domain['profile']
        # pinned to the manual profile until the admin lets it learn
        self.assertEqual(('manual', 10000.0, 'additive'), (
            profile['source'], profile['iops_4k'], profile['form']))
        learned = profile['learned']
        self.assertEqual(dict(fit, margined={
            'iops_4k': 12000.0, 'bytes_sec': 5e8, 'form': 'max'}),
            {k: v for k, v in learned.items() if k != 'learned_at'})
        self.assertIsNotNone(learned['learned_at'])
        response = self.call('PATCH', '/v1/domains/local:cn1', who=ADMIN,
                             body={'profile_source': 'learned'})
        self.assertEqual(200, response.status_code, response.text)
        domain = response.json['domain']
        self.assertEqual(('learned', 12000.0, 'max'), (
            domain['profile']['source'], domain['profile']['iops_4k'],
            domain['profile']['form']))
        # the committed floors are priced with the learned profile
        self.assertLess(domain['committed'], 0.22048)
        for body in ({'profile_source': 'guess'}, {'form': 'min'}):
            self.assertError(self.call('PATCH', '/v1/domains/local:cn1',
                                       who=ADMIN, body=body), 400)
        response = self.call('PATCH', '/v1/domains/local:cn1', who=ADMIN,
                             body={'profile_source': 'manual',
                                   'form': 'max'})
        self.assertEqual({'iops_4k': 10000.0, 'bytes_sec': 400e6,
                          'form': 'max'},
                         response.json['domain']['profile']['manual'])

    def test_stale_rates_are_not_in_the_utilisation(self):
        # A1 vda's rates (400 IOPS, 5e6 B/s) were sampled at T0; they are
        # stale once a rates write interval and STALE_INTERVALS decision
        # intervals have passed (a disk that went away keeps its last
        # rates stored).
        horizon = (self.conf.controller.rates_write_interval
                   + rates.STALE_INTERVALS
                   * self.conf.controller.decision_interval)
        for after, utilisation in ((horizon - 1, 400 / 10000.0 + 5e6 / 400e6),
                                   (horizon + 1, 0.0)):
            self.at(T0 + datetime.timedelta(seconds=after))
            domain = self.call('GET', '/v1/domains/local:cn1',
                               who=ADMIN).json['domain']
            self.assertAlmostEqual(utilisation, domain['utilisation'])
            # the disk still shows its last rates, with their time
            disk = [d for d in domain['disks']
                    if (d['instance_uuid'], d['dev']) == (A1, 'vda')][0]
            self.assertEqual(400.0, disk['rates']['read_iops']
                             + disk['rates']['write_iops'])

    def test_utilisation_is_read_against_the_fit_without_its_margin(self):
        self.at(T0 + datetime.timedelta(seconds=1))
        # Half confident: decisions and admission use the fit shrunk by
        # 10 %, the utilisation is the device's load on the fit itself.
        self.learn(intervals=30, mixes=2, confidence=0.5)
        response = self.call('PATCH', '/v1/domains/local:cn1', who=ADMIN,
                             body={'profile_source': 'learned'})
        self.assertEqual(200, response.status_code, response.text)
        domain = response.json['domain']
        self.assertAlmostEqual(12000.0 * 0.9, domain['profile']['iops_4k'])
        # A1 vda: 400 IOPS and 5e6 B/s, its IOPS bind
        self.assertAlmostEqual(400 / 12000.0, domain['utilisation'])

    def test_overcommitment_shown_against_the_fit_without_its_margin(self):
        # The floors were admitted at 0.22 of the typed profile; the
        # storage is learned to serve a tenth of it (half confident: the
        # margin shrinks the profile in use, never the verdict).
        fit = self.learn(form='additive', iops_4k=1000.0, bytes_sec=40e6,
                         intervals=30, mixes=2, confidence=0.5)
        domain = self.call('GET', '/v1/domains/local:cn1',
                           who=ADMIN).json['domain']
        self.assertAlmostEqual(0.22048, domain['committed'])
        self.assertAlmostEqual(2.2048, domain['committed_learned'])
        self.assertEqual(0.9, domain['max_commit_ratio'])
        self.assertIs(True, domain['overcommitted'])
        self.assertIs(True, domain['beyond_capacity'])
        # under what the storage serves: 0.73 of it
        self.learn(**dict(fit, iops_4k=3000.0, bytes_sec=120e6))
        domain = self.call('GET', '/v1/domains/local:cn1',
                           who=ADMIN).json['domain']
        self.assertAlmostEqual(0.22048 / 0.3, domain['committed_learned'])
        self.assertIs(False, domain['overcommitted'])
        self.assertIs(False, domain['beyond_capacity'])
        # a fit that identified one parameter gives no verdict
        self.learn(**dict(fit, identified=['bytes_sec']))
        domain = self.call('GET', '/v1/domains/local:cn1',
                           who=ADMIN).json['domain']
        self.assertAlmostEqual(2.2048, domain['committed_learned'])
        self.assertIsNone(domain['overcommitted'])
        self.assertIsNone(domain['beyond_capacity'])
        # a project never sees it
        domain = self.call('GET', '/v1/domains/' + disk_view.domain_id(
            'proj-a', 'local:cn1'), who=MEMBER_A).json['domain']
        for secret in ('committed_learned', 'overcommitted'):
            self.assertNotIn(secret, domain)

    def test_domain_profile_at_the_bounds(self):
        for profile in ({'iops_4k': 1, 'bytes_sec': 4096},
                        {'iops_4k': 1e9, 'bytes_sec': 1e15}):
            response = self.call('PATCH', '/v1/domains/local:cn1', who=ADMIN,
                                 body=profile)
            self.assertEqual(200, response.status_code, response.text)
            self.assertEqual(200, self.call('GET', '/v1/domains/local:cn1',
                                            who=ADMIN).status_code)
        # Admission still refuses: gold's floor on a tiny device.
        self.call('PATCH', '/v1/domains/local:cn1', who=ADMIN,
                  body={'iops_4k': 1, 'bytes_sec': 4096})
        self.assertError(self.call('PUT', '/v1/instances/%s/tier' % A1,
                                   who=MEMBER_A, body={'tier': 'gold'}), 409)

    # -- decisions ------------------------------------------------------------

    def test_decisions_paginate(self):
        seen, path = [], '/v1/decisions?limit=3'
        while path:
            response = self.call('GET', path, who=ADMIN)
            self.assertEqual(200, response.status_code, response.text)
            seen.extend(d['id'] for d in response.json['decisions'])
            links = response.json.get('links')
            path = links[0]['href'].replace('http://localhost', '') \
                if links else None
        self.assertEqual(self.decisions[::-1], seen)

    def test_decisions_are_per_project(self):
        decisions = self.call('GET', '/v1/decisions',
                              who=READER_A).json['decisions']
        self.assertEqual(self.decisions[:5][::-1],
                         [d['id'] for d in decisions])
        self.assertEqual({'proj-a'}, {d['project_id'] for d in decisions})
        response = self.call('GET', '/v1/decisions?instance=%s' % B1,
                             who=READER_A)
        self.assertEqual([], response.json['decisions'])
        self.assertError(self.call(
            'GET', '/v1/decisions?marker=%d' % self.decisions[6],
            who=READER_A), 404)
        # A project filters by the domain_id it was shown, never by the
        # real name.
        response = self.call('GET', '/v1/decisions?domain=%s' % (
            disk_view.domain_id('proj-a', 'local:cn1')), who=READER_A)
        self.assertEqual(self.decisions[:5][::-1],
                         [d['id'] for d in response.json['decisions']])
        for name in ('local:cn1', disk_view.domain_id('proj-b', 'local:cn1')):
            response = self.call('GET', '/v1/decisions?domain=' + name,
                                 who=READER_A)
            self.assertEqual([], response.json['decisions'])
        self.assertError(self.call('GET', '/v1/decisions', who=NOROLE_A),
                         403)

    def test_decisions_filters(self):
        response = self.call('GET', '/v1/decisions?instance=%s' % B1,
                             who=ADMIN)
        self.assertEqual(self.decisions[5:][::-1],
                         [d['id'] for d in response.json['decisions']])
        response = self.call(
            'GET', '/v1/decisions?since=2026-11-22T03:00:04Z', who=ADMIN)
        self.assertEqual(self.decisions[4:][::-1],
                         [d['id'] for d in response.json['decisions']])
        response = self.call(
            'GET', '/v1/decisions?since=2026-11-22T04:00:04%2B01:00',
            who=ADMIN)
        self.assertEqual(3, len(response.json['decisions']))
        response = self.call('GET', '/v1/decisions?domain=ceph:new',
                             who=ADMIN)
        self.assertEqual([], response.json['decisions'])
        decision = self.call('GET', '/v1/decisions?limit=1',
                             who=ADMIN).json['decisions'][0]
        self.assertEqual(('reason 6', {'total_iops_sec': 106}, {'u': 0.5}),
                         (decision['reason'], decision['new_limits'],
                          decision['numbers']))

    def test_show_decision(self):
        wanted = self.decisions[3]
        response = self.call('GET', '/v1/decisions/%d' % wanted,
                             who=READER_A)
        self.assertEqual(200, response.status_code, response.text)
        decision = response.json['decision']
        listed = [d for d in self.call('GET', '/v1/decisions',
                                       who=READER_A).json['decisions']
                  if d['id'] == wanted]
        self.assertEqual(listed, [decision])
        self.assertEqual(('reason 3', '2026-11-22T03:00:03Z'),
                         (decision['reason'], decision['created_at']))
        self.assertEqual(200, self.call('GET', '/v1/decisions/%d'
                                        % self.decisions[6],
                                        who=ADMIN).status_code)

    def test_show_decision_scoping_and_errors(self):
        other = '/v1/decisions/%d' % self.decisions[6]
        response = self.call('GET', other, who=READER_A)
        self.assertError(response, 404)
        self.assertNotIn('proj-b', response.text)
        self.assertError(self.call('GET', '/v1/decisions/%d'
                                   % (max(self.decisions) + 1), who=ADMIN),
                         404, 'decision')
        for bad in ('x', '-1', '1.5', '9' * 12):
            self.assertError(self.call('GET', '/v1/decisions/' + bad,
                                       who=ADMIN), 400, 'decision id')
        self.assertError(self.call('GET', other, who=NOROLE_A), 403,
                         'iotguard:decision:show')

    def test_decisions_bad_queries(self):
        for query, part in (('limit=0', 'limit'), ('limit=-1', 'limit'),
                            ('limit=ten', 'limit'), ('marker=x', 'marker'),
                            ('since=yesterday', 'since'),
                            ('since=2026-13-45', 'since'),
                            ('instance=nope', 'instance'),
                            ('colour=red', 'colour'),
                            ('limit=1&limit=2', 'more than once'),
                            ('since=0001-01-01T00:00:00%2B01:00', 'range'),
                            ('since=9999-12-31T23:59:59-01:00', 'range')):
            self.assertError(self.call('GET', '/v1/decisions?' + query,
                                       who=ADMIN), 400, part)

    # -- agents ---------------------------------------------------------------

    def test_agents_for_the_admin(self):
        self.db.agent_heartbeat('cn2', 'libvirt', version='2.0',
                                interval_s=5.0, disks=3, caps=1,
                                clock_offset_s=-30.25)
        self.db.agent_heartbeat('cn1', 'simulated', now=T0)
        response = self.call('GET', '/v1/agents', who=ADMIN)
        self.assertEqual(200, response.status_code, response.text)
        cn1, cn2 = response.json['agents']
        self.assertEqual({
            'host': 'cn1', 'driver': 'simulated', 'version': None,
            'last_heartbeat': '2026-11-22T03:00:00Z', 'interval_s': None,
            'disks': None, 'caps': None, 'clock_offset_s': None,
            'alive': False, 'created_at': '2026-11-22T03:00:00Z'}, cn1)
        self.assertEqual(('cn2', '2.0', 5.0, 3, 1, -30.25, True),
                         (cn2['host'], cn2['version'], cn2['interval_s'],
                          cn2['disks'], cn2['caps'], cn2['clock_offset_s'],
                          cn2['alive']))
        for query, hosts in (('?alive=true', ['cn2']),
                             ('?alive=0', ['cn1']),
                             ('?host=cn1', ['cn1']),
                             ('?host=cn1&alive=yes', []),
                             ('?host=cn9', [])):
            response = self.call('GET', '/v1/agents' + query, who=ADMIN)
            self.assertEqual(hosts, [a['host'] for a in
                                     response.json['agents']], query)

    def test_agents_are_the_admins(self):
        self.db.agent_heartbeat('cn1', 'libvirt')
        for who in (READER_A, MEMBER_A, NOROLE_A):
            self.assertError(self.call('GET', '/v1/agents', who=who), 403)
        for query, part in (('alive=maybe', 'alive'), ('host=a/b', 'host'),
                            ('host=' + 'h' * 256, 'host'),
                            ('limit=1', 'limit'),
                            ('alive=1&alive=0', 'more than once')):
            self.assertError(self.call('GET', '/v1/agents?' + query,
                                       who=ADMIN), 400, part)


class APITestsSqlite(APITests, base.APITestCase):
    backend = 'sqlite'


class APITestsPostgresql(APITests, base.APITestCase):
    backend = 'postgresql'


class APITestsMysql(APITests, base.APITestCase):
    backend = 'mysql'


class DatabaseAwayTest(test_base.TestCase):
    """A PostgreSQL URL where nothing listens: 503, not 500."""

    def test_unreachable_database_is_503_with_retry_after(self):
        self.flags(group='api', auth_strategy='noauth')
        self.flags(group='database', max_retries=0,
                   connection='postgresql+psycopg2://postgres@127.0.0.1:%d'
                              '/test' % ports.free_port())
        application = app.deploy(self.conf)
        for method, path, body in (('GET', '/v1/tiers', None),
                                   ('POST', '/v1/tiers', b'{"name": "x"}')):
            req = webob.Request.blank(path, method=method, headers={
                'X-Project-Id': 'p', 'X-User-Id': 'u', 'X-Roles': 'admin'})
            if body:
                req.body, req.content_type = body, 'application/json'
            response = req.get_response(application)
            self.assertEqual(503, response.status_code, response.text)
            self.assertEqual(503, response.json['error']['code'])
            self.assertEqual('10', response.headers['Retry-After'])
            self.assertTrue(response.json['error']['request_id'])


class KeystoneAwayTest(test_base.TestCase):
    """keystonemiddleware with Keystone away or not configured: 503."""

    def _deploy(self, **authtoken):
        self.flags(group='api', auth_strategy='keystone')
        for group, opts in auth_token.list_opts():
            self.conf.register_opts(opts, group=group)
        self.conf.register_opts(
            ks_loading.get_auth_plugin_conf_options('password'),
            group='keystone_authtoken')
        self.flags(group='keystone_authtoken', **authtoken)
        return app.deploy(self.conf, db=object())

    def _get(self, application, token):
        headers = {'X-Auth-Token': token} if token else {}
        return webob.Request.blank('/v1/tiers', headers=headers).get_response(
            application)

    def assertUnavailable(self, response):
        self.assertEqual(503, response.status_code, response.text)
        error = response.json['error']
        self.assertEqual(503, error['code'])
        self.assertIn('Authentication is unavailable', error['message'])
        self.assertTrue(error['request_id'])
        self.assertEqual('10', response.headers['Retry-After'])

    def test_unreachable_keystone_is_503_with_retry_after(self):
        url = 'http://127.0.0.1:%d/v3' % ports.free_port()
        application = self._deploy(
            auth_type='password', auth_url=url, www_authenticate_uri=url,
            username='iotguard', password='secret', project_name='service',
            user_domain_name='Default', project_domain_name='Default',
            http_request_max_retries=0)
        self.assertUnavailable(self._get(application, 'a-token'))
        # No token: keystonemiddleware's 401, in iotguard's format.
        response = self._get(application, None)
        self.assertEqual(401, response.status_code)
        self.assertEqual(401, response.json['error']['code'])
        self.assertTrue(response.json['error']['request_id'])
        self.assertIn(url, response.headers['WWW-Authenticate'])

    def test_unconfigured_keystone_authtoken_is_503(self):
        application = self._deploy()
        for token in ('a-token', None):
            self.assertUnavailable(self._get(application, token))
