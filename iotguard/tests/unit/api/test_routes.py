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

"""GET /v1/instances, DELETE /v1/instances/{uuid}/tier, GET
/v1/decisions/{id}, GET /v1/agents: validation, policy and scoping, with a
recording database (the functional API tests run them on real
databases)."""

import datetime
import types

import fixtures
from oslo_utils import timeutils
import webob

from iotguard.api import app
from iotguard.api.handlers import disk as disk_view
from iotguard import exception
from iotguard.policy import admission
from iotguard.policy import base as base_policy
from iotguard.policy import estimator
from iotguard.tests import base

A1 = 'aaaaaaaa-0000-4000-8000-000000000001'
A2 = 'aaaaaaaa-0000-4000-8000-000000000002'
ADMIN = ('admin-proj', 'admin,member,reader')
MEMBER = ('proj-a', 'member,reader')
READER = ('proj-a', 'reader')


def disk(uuid, dev, project='proj-a'):
    """A disk as db.api's disk_list returns it."""
    return {'instance_uuid': uuid, 'dev': dev, 'host': 'cn1',
            'domain': 'local:cn1', 'volume_id': None, 'project_id': project,
            'tier': base_policy.Tier('gold', min_iops=2000.0),
            'tier_source': 'api', 'tier_refused': None, 'sampled_at': None,
            'cap': None}


class RecordingDB:
    """Answers from ``answers[method]``; records ``(method, kwargs)``."""

    def __init__(self, **answers):
        self.answers, self.calls = answers, []

    def __getattr__(self, method):
        def call(*args, **kwargs):
            self.calls.append((method, args, kwargs))
            answer = self.answers[method]
            if isinstance(answer, Exception):
                raise answer
            return answer
        return call


class RouteTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(group='api', auth_strategy='noauth')
        self.nova = []
        compute = types.SimpleNamespace(
            set_server_metadata=lambda *a, **md: self.nova.append(a),
            delete_server_metadata=lambda *a: self.nova.append(a[:1]))
        self.useFixture(fixtures.MockPatch(
            'iotguard.clients.get_connection',
            return_value=types.SimpleNamespace(compute=compute)))

    def call(self, method, path, who, body=None, **answers):
        self.db = RecordingDB(**answers)
        application = app.deploy(self.conf, db=self.db)
        project, roles = who
        req = webob.Request.blank(path, method=method, headers={
            'X-User-Id': 'u', 'X-Project-Id': project, 'X-Roles': roles})
        if body is not None:
            req.json_body = body
            req.content_type = 'application/json'
        return req.get_response(application)

    def assertError(self, response, code, part):
        self.assertEqual(code, response.status_code, response.text)
        self.assertIn(part, response.json['error']['message'])
        self.assertEqual([], self.db.calls)


class TestListInstances(RouteTest):

    def test_grouped_by_instance_with_the_disk_view(self):
        disks = [disk(A1, 'vda'), disk(A1, 'vdb'), disk(A2, 'vda')]
        response = self.call('GET', '/v1/instances', READER,
                             disk_list=disks)
        self.assertEqual(200, response.status_code, response.text)
        self.assertEqual([('disk_list', (), {'project_id': 'proj-a'})],
                         self.db.calls)
        one, two = response.json['instances']
        self.assertEqual((A1, 'proj-a', ['vda', 'vdb']),
                         (one['uuid'], one['project_id'],
                          [d['dev'] for d in one['disks']]))
        self.assertEqual(A2, two['uuid'])
        self.assertEqual(('gold', 'api', {'min_iops': 2000.0,
                                          'min_bytes_sec': 0.0}),
                         (one['disks'][0]['tier'],
                          one['disks'][0]['tier_source'],
                          one['disks'][0]['floor']))

    def test_which_project(self):
        for query, who, project in (
                ('', ADMIN, 'admin-proj'),
                ('?all_projects=TRUE', ADMIN, None),
                ('?all_projects=yes&project_id=proj-b', ADMIN, 'proj-b'),
                ('?project_id=proj-b', ADMIN, 'proj-b'),
                ('?all_projects=false', READER, 'proj-a'),
                ('?project_id=proj-a', READER, 'proj-a')):
            response = self.call('GET', '/v1/instances' + query, who,
                                 disk_list=[])
            self.assertEqual({'instances': []}, response.json, query)
            self.assertEqual([('disk_list', (), {'project_id': project})],
                             self.db.calls, query)

    def test_refusals(self):
        for query, who, code, part in (
                ('?all_projects=1', READER, 403,
                 'iotguard:instance:all_projects'),
                ('?project_id=proj-b', MEMBER, 403,
                 'iotguard:instance:all_projects'),
                ('', ('proj-a', ''), 403, 'iotguard:instance:list'),
                ('?all_projects=perhaps', ADMIN, 400, 'all_projects'),
                ('?project_id=a/b', ADMIN, 400, 'project_id'),
                ('?marker=3', ADMIN, 400, 'marker')):
            self.assertError(self.call('GET', '/v1/instances' + query, who,
                                       disk_list=[]), code, part)


class TestTopologyHidden(RouteTest):
    """Hosts and domains' real names: the admin's; others get domain_id."""

    SECRETS = ('cn1', 'local:')

    def assertHidden(self, response):
        self.assertEqual(200, response.status_code, response.text)
        for secret in self.SECRETS:
            self.assertNotIn(secret, response.text)

    def test_disks(self):
        for path in ('/v1/instances', '/v1/instances/' + A1):
            response = self.call('GET', path, MEMBER,
                                 disk_list=[disk(A1, 'vda')])
            self.assertHidden(response)
            self.assertIn(disk_view.domain_id('proj-a', 'local:cn1'),
                          response.text)
            response = self.call('GET', path, ADMIN,
                                 disk_list=[disk(A1, 'vda')])
            self.assertIn('"host": "cn1", "domain": "local:cn1"',
                          response.text)

    def test_opaque_id_per_project(self):
        one = disk_view.domain_id('proj-a', 'local:cn1')
        self.assertEqual((56, one), (len(one), disk_view.domain_id(
            'proj-a', 'local:cn1')))
        self.assertNotEqual(one, disk_view.domain_id('proj-b', 'local:cn1'))
        self.assertNotEqual(one, disk_view.domain_id('proj-a', 'local:cn2'))

    def test_decisions(self):
        def decision():
            return {'id': 7, 'domain': 'local:cn1', 'project_id': 'proj-a'}
        self.assertHidden(self.call('GET', '/v1/decisions/7', READER,
                                    decision_get=decision()))
        self.assertHidden(self.call('GET', '/v1/decisions', READER,
                                    decision_list=[decision()]))
        response = self.call('GET', '/v1/decisions/7', ADMIN,
                             decision_get=decision())
        self.assertEqual('local:cn1', response.json['decision']['domain'])

    def test_tier_verdicts_and_refusals(self):
        verdict = {'project_id': 'proj-a', 'admission': [
            {'domain': 'local:cn1', 'tier': 'gold', 'committed_after': .5}]}
        response = self.call('PUT', '/v1/instances/%s/tier' % A1, MEMBER,
                             {'tier': 'gold'}, instance_tier_set=verdict)
        self.assertHidden(response)
        self.assertEqual([{'tier': 'gold', 'domain_id': disk_view.domain_id(
            'proj-a', 'local:cn1')}], response.json['instance']['admission'])
        for refusal in (
                exception.AdmissionRejected(tier='gold', domain='local:cn1',
                                            committed=1.2, max_ratio=.9),
                exception.AdmissionRejected(
                    'Tier gold refused on domain local:cn1: no profile',
                    tier='gold', domain='local:cn1')):
            response = self.call('PUT', '/v1/instances/%s/tier' % A1,
                                 MEMBER, {'tier': 'gold'},
                                 instance_tier_set=refusal)
            self.assertEqual(409, response.status_code, response.text)
            self.assertNotIn('cn1', response.text)
            self.assertIn(disk_view.domain_id('proj-a', 'local:cn1'),
                          response.text)


NOW = datetime.datetime(2026, 11, 25, 12, 0, 0)


def agent(host, seconds_ago, interval_s=5.0):
    """An agent as db.api's agent_list returns it."""
    return {'host': host, 'driver': 'libvirt', 'version': '1.0',
            'last_heartbeat': NOW - datetime.timedelta(seconds=seconds_ago),
            'interval_s': interval_s, 'disks': 4, 'caps': 1,
            'created_at': NOW - datetime.timedelta(days=1)}


class TestListAgents(RouteTest):

    def setUp(self):
        super().setUp()
        timeutils.set_time_override(NOW)
        self.addCleanup(timeutils.clear_time_override)

    def test_alive_within_three_of_its_intervals(self):
        agents = [agent('cn1', 15.0), agent('cn2', 15.5),
                  agent('cn3', 50.0, interval_s=20.0),
                  agent('cn4', -2.0),   # the controller's clock is ahead
                  agent('cn5', 15.0, interval_s=None),
                  agent('cn6', 16.0, interval_s=None)]
        response = self.call('GET', '/v1/agents', ADMIN, agent_list=agents)
        self.assertEqual(200, response.status_code, response.text)
        self.assertEqual([('agent_list', (), {'host': None})], self.db.calls)
        listed = response.json['agents']
        self.assertEqual({'cn1': True, 'cn2': False, 'cn3': True,
                          'cn4': True, 'cn5': True, 'cn6': False},
                         {a['host']: a['alive'] for a in listed})
        self.assertEqual({
            'host': 'cn1', 'driver': 'libvirt', 'version': '1.0',
            'last_heartbeat': '2026-11-25T11:59:45Z', 'interval_s': 5.0,
            'disks': 4, 'caps': 1, 'alive': True,
            'created_at': '2026-11-24T12:00:00Z'}, listed[0])

    def test_default_interval_is_the_agents_option(self):
        self.flags(group='agent', sample_interval=10.0)
        response = self.call('GET', '/v1/agents', ADMIN, agent_list=[
            agent('cn1', 29.0, interval_s=None),
            agent('cn2', 31.0, interval_s=None)])
        self.assertEqual([True, False],
                         [a['alive'] for a in response.json['agents']])

    def test_filters(self):
        agents = [agent('cn1', 1.0), agent('cn2', 100.0)]
        for query, hosts in (('?alive=true', ['cn1']),
                             ('?alive=False', ['cn2']),
                             # the database filters by host
                             ('?host=cn2', ['cn1', 'cn2'])):
            response = self.call('GET', '/v1/agents' + query, ADMIN,
                                 agent_list=agents)
            self.assertEqual(hosts,
                             [a['host'] for a in response.json['agents']])
        self.assertEqual([('agent_list', (), {'host': 'cn2'})], self.db.calls)

    def test_refusals(self):
        for query, who, code, part in (
                ('', READER, 403, 'iotguard:agent:list'),
                ('', MEMBER, 403, 'iotguard:agent:list'),
                ('?alive=perhaps', ADMIN, 400, 'alive'),
                ('?host=a/b', ADMIN, 400, 'host'),
                ('?host=', ADMIN, 400, 'host'),
                ('?limit=3', ADMIN, 400, 'limit'),
                ('?host=cn1&host=cn2', ADMIN, 400, 'more than once')):
            self.assertError(self.call('GET', '/v1/agents' + query, who,
                                       agent_list=[]), code, part)


class TestUnsetInstanceTier(RouteTest):

    def test_member_own_project(self):
        response = self.call('DELETE', '/v1/instances/%s/tier'
                             % A1.upper(), MEMBER,
                             instance_tier_unset='proj-a')
        self.assertEqual((204, b''), (response.status_code, response.body))
        self.assertEqual([('instance_tier_unset', (A1,),
                           {'project_id': 'proj-a'})], self.db.calls)
        self.assertEqual([(A1,)], self.nova)

    def test_admin_any_project(self):
        self.call('DELETE', '/v1/instances/%s/tier' % A1, ADMIN,
                  instance_tier_unset='proj-a')
        self.assertEqual({'project_id': None}, self.db.calls[0][2])

    def test_unknown_is_404_and_nova_untouched(self):
        response = self.call(
            'DELETE', '/v1/instances/%s/tier' % A1, MEMBER,
            instance_tier_unset=exception.NotFound(what='instance ' + A1))
        self.assertEqual(404, response.status_code)
        self.assertEqual([], self.nova)

    def test_refusals(self):
        for path, who, code, part in (
                ('/v1/instances/%s/tier' % A1, READER, 403,
                 'iotguard:instance:tier:delete'),
                ('/v1/instances/not-a-uuid/tier', MEMBER, 400, 'UUID'),
                ('/v1/instances/%s/tier?all=1' % A1, MEMBER, 400, 'all')):
            self.assertError(self.call('DELETE', path, who,
                                       instance_tier_unset='proj-a'),
                             code, part)
        self.assertEqual([], self.nova)


class TestShowDecision(RouteTest):

    DECISION = {'id': 7, 'reason': 'fair share', 'project_id': 'proj-a',
                'domain': 'd'}

    def test_scoped_to_the_callers_project(self):
        for who, project in ((READER, 'proj-a'), (ADMIN, None)):
            response = self.call('GET', '/v1/decisions/7', who,
                                 decision_get=dict(self.DECISION))
            self.assertEqual(7, response.json['decision']['id'])
            self.assertEqual([('decision_get', (7,),
                               {'project_id': project})], self.db.calls)

    def test_refusals(self):
        for path, who, code, part in (
                ('/v1/decisions/7', ('proj-a', 'member'), 403,
                 'iotguard:decision:show'),
                ('/v1/decisions/seven', READER, 400, 'decision id'),
                ('/v1/decisions/1234567890', READER, 400, 'decision id'),
                ('/v1/decisions/7?long=1', READER, 400, 'long')):
            self.assertError(self.call('GET', path, who,
                                       decision_get=self.DECISION),
                             code, part)

    def test_unknown_is_404(self):
        response = self.call('GET', '/v1/decisions/8', READER,
                             decision_get=exception.NotFound(
                                 what='decision 8'))
        self.assertEqual(404, response.status_code)
        self.assertIn('decision 8', response.json['error']['message'])


class TestShowDomain(RouteTest):

    def test_utilisation_unknown_without_a_priced_device_estimate(self):
        # The fit's IOPS are above PROFILE_RANGES, its margined profile
        # (80 % at confidence 0) within: admission prices floors with it,
        # the utilisation has no estimate of the device to be read against.
        domain = admission.Domain('d', 'local', profile_source='learned',
                                  fit=estimator.Fit(
                                      'additive', 1.1e9, 1e9, 0.1, 10, 2,
                                      0.0, ('iops_4k', 'bytes_sec')))
        response = self.call('GET', '/v1/domains/d', ADMIN,
                             domain_get=domain, disk_list=[])
        self.assertEqual(200, response.status_code, response.text)
        view = response.json['domain']
        self.assertEqual('learned', view['profile']['source'])
        self.assertIsNone(view['utilisation'])
