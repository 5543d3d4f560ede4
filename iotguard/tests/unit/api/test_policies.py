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

"""Policy defaults, enforcement and the Nova metadata setter."""

import types

import fixtures
from openstack import exceptions as sdk_exc
from oslo_context import context as oslo_context
import webob

from iotguard.api.handlers import common
from iotguard.api import nova
from iotguard.api import policies
from iotguard.api import rbac
from iotguard import exception
from iotguard.tests import base


def _ctx(project, *roles):
    return oslo_context.RequestContext(user_id='u', project_id=project,
                                       roles=list(roles))


class PolicyTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.enforcer = rbac.make_enforcer(self.conf)

    def allowed(self, rule, ctx, project):
        req = webob.Request.blank('/', environ={
            'iotguard.state': types.SimpleNamespace(enforcer=self.enforcer),
            'iotguard.context': ctx})
        return common.allowed(req, rule, project)

    def test_rule_names_and_scope(self):
        names = [r.name for r in policies.RULES]
        self.assertEqual(len(names), len(set(names)))
        for rule in policies.RULES:
            self.assertRegex(rule.name, r'^iotguard:[a-z_]+(:[a-z_]+)+$')
            self.assertEqual(['project'], rule.scope_types)
            self.assertTrue(rule.description)

    def test_admin_only_rules(self):
        for rule in ('iotguard:tier:create', 'iotguard:tier:update',
                     'iotguard:tier:delete', 'iotguard:domain:update',
                     'iotguard:decision:all_projects',
                     'iotguard:instance:all_projects',
                     'iotguard:agent:list'):
            self.assertTrue(self.allowed(rule, _ctx('p', 'admin'), 'p'))
            self.assertFalse(self.allowed(rule, _ctx('p', 'member',
                                                     'reader'), 'p'), rule)

    def test_member_changes_only_its_own_project(self):
        member = _ctx('proj-a', 'member', 'reader')
        for rule in ('iotguard:instance:tier:update',
                     'iotguard:instance:tier:delete'):
            self.assertTrue(self.allowed(rule, member, 'proj-a'))
            self.assertFalse(self.allowed(rule, member, 'proj-b'))
            self.assertFalse(self.allowed(rule, _ctx('proj-a', 'reader'),
                                          'proj-a'))

    def test_reader_reads_only_its_own_project(self):
        reader = _ctx('proj-a', 'reader')
        for rule in ('iotguard:instance:show', 'iotguard:decision:list',
                     'iotguard:instance:list', 'iotguard:decision:show',
                     'iotguard:domain:show', 'iotguard:tier:list'):
            self.assertTrue(self.allowed(rule, reader, 'proj-a'))
            self.assertFalse(self.allowed(rule, reader, 'proj-b'))
            self.assertFalse(self.allowed(rule, _ctx('proj-a'), 'proj-a'))

    def test_forbidden_is_raised(self):
        req = webob.Request.blank('/', environ={
            'iotguard.state': types.SimpleNamespace(enforcer=self.enforcer),
            'iotguard.context': _ctx('p', 'reader')})
        exc = self.assertRaises(exception.Forbidden, common.authorize, req,
                                'iotguard:tier:create')
        self.assertIn('iotguard:tier:create', exc.message)

    def test_policy_file_overrides_default(self):
        path = self.useFixture(fixtures.TempDir()).path
        with open(path + '/policy.yaml', 'w') as policy_file:
            policy_file.write('"iotguard:tier:create": "role:reader"\n')
        self.flags(group='oslo_policy', policy_file=path + '/policy.yaml')
        self.enforcer = rbac.make_enforcer(self.conf)
        self.assertTrue(self.allowed('iotguard:tier:create',
                                     _ctx('p', 'reader'), 'p'))

    def test_get_enforcer_for_oslopolicy_tools(self):
        enforcer = rbac.get_enforcer()
        self.assertIn('iotguard:tier:create', enforcer.registered_rules)


class NovaSetterTest(base.TestCase):

    def metadata(self, connect):
        self.useFixture(fixtures.MonkeyPatch(
            'iotguard.clients.get_connection', connect))
        return nova.Metadata(self.conf)

    def test_disabled(self):
        self.flags(group='api', nova_metadata_sync=False)

        def connect(conf):
            raise AssertionError('must not connect')

        setter = self.metadata(connect).set_tier
        self.assertEqual('disabled', setter('uuid', 'gold'))

    def test_synced_connects_once(self):
        calls, connects = [], []

        def connect(conf):
            connects.append(conf)
            compute = types.SimpleNamespace(
                set_server_metadata=lambda uuid, **md: calls.append(
                    (uuid, md)))
            return types.SimpleNamespace(compute=compute)

        setter = self.metadata(connect).set_tier
        self.assertEqual('synced', setter('u1', 'gold'))
        self.assertEqual('synced', setter('u2', 'bronze'))
        self.assertEqual([('u1', {'iotguard:tier': 'gold'}),
                          ('u2', {'iotguard:tier': 'bronze'})], calls)
        self.assertEqual(1, len(connects))

    def test_failure_is_reported_not_raised(self):
        def connect(conf):
            raise RuntimeError('no keystone')

        setter = self.metadata(connect).set_tier
        self.assertEqual('failed', setter('u1', 'gold'))

    def test_unset_removes_the_key(self):
        calls = []

        def delete(uuid, keys):
            calls.append((uuid, keys))
            if uuid == 'gone':
                raise sdk_exc.NotFoundException('no such key')
            if uuid == 'broken':
                raise sdk_exc.HttpException('500')

        def connect(conf):
            return types.SimpleNamespace(compute=types.SimpleNamespace(
                delete_server_metadata=delete))

        metadata = self.metadata(connect)
        self.assertEqual('synced', metadata.unset_tier('u1'))
        # Nothing to remove (or no server any more): what was wanted.
        self.assertEqual('synced', metadata.unset_tier('gone'))
        self.assertEqual('failed', metadata.unset_tier('broken'))
        self.assertEqual([('u1', ['iotguard:tier']),
                          ('gone', ['iotguard:tier']),
                          ('broken', ['iotguard:tier'])], calls)
        self.flags(group='api', nova_metadata_sync=False)
        self.assertEqual('disabled', metadata.unset_tier('u2'))
        self.assertEqual(3, len(calls))
