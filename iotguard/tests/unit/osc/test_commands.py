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

"""Unit tests of the commands: arguments and output, with a fake client."""

import io
from unittest import mock

import fixtures
from osc_lib import exceptions

from iotguard.osc import client
from iotguard.osc.v1 import decision
from iotguard.osc.v1 import domain
from iotguard.osc.v1 import instance
from iotguard.osc.v1 import tier
from iotguard.tests import base

TIER = {'name': 'gold', 'description': 'db', 'min_iops': 2000.0,
        'min_bytes_sec': 0.0, 'max_iops': 5000.0, 'max_bytes_sec': 0.0,
        'weight': 4.0, 'is_public': False, 'projects': ['p1'],
        'created_at': '2026-11-22T03:48:10Z', 'updated_at': None}
UUID = '8c4b1e2a-5d6f-4a7b-9c8d-0e1f2a3b4c5d'
DISK = {'instance_uuid': UUID, 'dev': 'vda', 'host': 'c1',
        'domain': 'local:c1', 'volume_id': None, 'project_id': 'p1',
        'tier': 'gold', 'tier_source': 'api',
        'floor': {'min_iops': 2000.0, 'min_bytes_sec': 0.0},
        'ceiling': {'max_iops': 5000.0, 'max_bytes_sec': 0.0},
        'rates': None,
        'cap': {'limits': {'total_iops_sec': 2900}, 'decision_id': 2,
                'lease_expires_at': '2026-11-22T03:40:40Z',
                'reason': 'fair share'}}


def machine(value):
    return value.machine_readable() if hasattr(value, 'machine_readable') \
        else value


def human(value):
    return value.human_readable() if hasattr(value, 'human_readable') \
        else value


class FakeClient:
    """Records every call; answers from ``answers[method]`` (a list)."""

    def __init__(self, **answers):
        self.answers, self.calls = answers, []

    def __getattr__(self, method):
        def call(*args, **kwargs):
            self.calls.append((method, args, kwargs))
            answer = self.answers[method].pop(0)
            if isinstance(answer, Exception):
                raise answer
            return answer
        return call


class CommandTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.stderr = self.useFixture(fixtures.MonkeyPatch(
            'sys.stderr', io.StringIO())).new_value
        self.log = self.useFixture(fixtures.FakeLogger())

    def run_command(self, cls, argv, **answers):
        """(fake client, the command's answer) for ``argv``."""
        fake = FakeClient(**answers)
        app = mock.Mock()
        app.client_manager.iotguard = fake
        cmd = cls(app, None)
        parsed = cmd.get_parser('openstack iotguard').parse_args(argv)
        return fake, cmd.take_action(parsed)

    def rows(self, answer, render=machine):
        headers, rows = answer
        rows = list(rows)
        return [dict(zip(headers, map(render, row))) for row in rows]

    def one(self, answer, render=machine):
        headers, values = answer
        return dict(zip(headers, map(render, values)))


class TestTier(CommandTestCase):

    def test_list(self):
        fake, answer = self.run_command(tier.ListTier, [],
                                        tier_list=[[TIER]])
        self.assertEqual([{'Name': 'gold', 'Min IOPS': 2000.0,
                           'Min Bytes/s': 0.0, 'Max IOPS': 5000.0,
                           'Max Bytes/s': 0.0, 'Weight': 4.0,
                           'Public': False}], self.rows(answer))
        _, answer = self.run_command(tier.ListTier, ['--long'],
                                     tier_list=[[TIER]])
        row = self.rows(answer, human)[0]
        self.assertEqual(('db', 'p1'), (row['Description'], row['Projects']))

    def test_list_of_a_tenant_has_no_projects_column(self):
        seen = {k: v for k, v in TIER.items() if k != 'projects'}
        _, answer = self.run_command(tier.ListTier, ['--long'],
                                     tier_list=[[seen]])
        self.assertNotIn('Projects', answer[0])
        self.assertIn('Description', answer[0])

    def test_create_sends_only_given_fields(self):
        fake, answer = self.run_command(
            tier.CreateTier,
            ['gold', '--min-iops', '2000', '--max-bytes-sec', '2e8',
             '--private', '--project', 'p1', '--project', 'p2'],
            tier_create=[TIER])
        self.assertEqual([('tier_create', ('gold',), {
            'min_iops': 2000.0, 'max_bytes_sec': 2e8, 'is_public': False,
            'projects': ['p1', 'p2']})], fake.calls)
        shown = self.one(answer)
        self.assertEqual('gold', shown['Name'])
        self.assertEqual(['p1'], shown['Projects'])
        self.assertIn('Created At', shown)

    def test_public_and_private_exclusive(self):
        self.assertRaises(SystemExit, self.run_command, tier.CreateTier,
                          ['gold', '--public', '--private'])
        self.assertIn('not allowed with argument', self.stderr.getvalue())

    def test_set(self):
        fake, answer = self.run_command(
            tier.SetTier, ['gold', '--weight', '2', '--public',
                           '--no-project'], tier_update=[TIER])
        self.assertIsNone(answer)
        self.assertEqual([('tier_update', ('gold',), {
            'weight': 2.0, 'is_public': True, 'projects': []})], fake.calls)

    def test_set_nothing(self):
        self.assertRaises(exceptions.CommandError, self.run_command,
                          tier.SetTier, ['gold'])

    def test_delete_goes_on_after_a_failure(self):
        fake, _ = self.run_command(tier.DeleteTier, ['a', 'b'],
                                   tier_delete=[None, None])
        self.assertEqual(['a', 'b'], [c[1][0] for c in fake.calls])
        exc = self.assertRaises(
            exceptions.CommandError, self.run_command, tier.DeleteTier,
            ['a', 'b', 'c'], tier_delete=[
                client.APIError(409, 'tier a is in use'), None,
                client.APIError(404, 'no tier c')])
        self.assertEqual('2 of 3 tiers not deleted.', str(exc))
        self.assertIn('Tier a not deleted: iotguard-api answered 409: '
                      'tier a is in use', self.log.output)
        self.assertNotIn('Tier b', self.log.output)


class TestInstance(CommandTestCase):

    def test_show_is_a_table_of_disks(self):
        fake, answer = self.run_command(
            instance.ShowInstance, [UUID], instance_show=[
                {'uuid': UUID, 'project_id': 'p1',
                 'disks': [DISK, dict(DISK, dev='vdb', cap=None,
                                      tier=None)]}])
        answer = (answer[0], list(answer[1]))
        self.assertEqual([('instance_show', (UUID,), {})], fake.calls)
        vda, vdb = self.rows(answer)
        self.assertEqual(('vda', 'gold', 'api', 'local:c1'),
                         (vda['Dev'], vda['Tier'], vda['Tier Source'],
                          vda['Domain']))
        self.assertEqual({'total_iops_sec': 2900}, vda['Cap'])
        self.assertEqual(('fair share', 2), (vda['Cap Reason'],
                                             vda['Decision']))
        self.assertEqual((None, None, None),
                         (vdb['Cap'], vdb['Cap Reason'], vdb['Tier']))
        self.assertEqual("total_iops_sec='2900'",
                         self.rows(answer, human)[0]['Cap'])

    def test_set_tier(self):
        admission = [{'domain': 'local:c1', 'committed_after': 0.44}]
        fake, answer = self.run_command(
            instance.SetInstance, ['--tier', 'gold', UUID],
            instance_set_tier=[{'uuid': UUID, 'project_id': 'p1',
                                'tier': 'gold', 'admission': admission,
                                'nova_metadata': 'synced'}])
        self.assertEqual([('instance_set_tier', (UUID, 'gold'), {})],
                         fake.calls)
        self.assertEqual({'UUID': UUID, 'Project': 'p1', 'Tier': 'gold',
                          'Admission': admission,
                          'Nova Metadata': 'synced'}, self.one(answer))

    def test_set_tier_needs_a_tier(self):
        self.assertRaises(SystemExit, self.run_command,
                          instance.SetInstance, [UUID])

    def test_refusal_reaches_the_user(self):
        refusal = client.APIError(409, 'Tier huge refused',
                                  {'committed_after': 1.03})
        exc = self.assertRaises(
            client.APIError, self.run_command, instance.SetInstance,
            ['--tier', 'huge', UUID], instance_set_tier=[refusal])
        self.assertIn('committed_after: 1.03', str(exc))


class TestDomain(CommandTestCase):

    def test_list_admin_and_tenant(self):
        _, answer = self.run_command(domain.ListDomain, [], domain_list=[[
            {'name': 'local:c1', 'kind': 'local', 'policy': 'guarantee',
             'profile': {'iops_4k': 1e4, 'bytes_sec': 4e8}}]])
        self.assertEqual(('Name', 'Kind', 'Policy', 'Profile'), answer[0])
        _, answer = self.run_command(domain.ListDomain, [], domain_list=[[
            {'name': 'local:c1', 'kind': 'local'}]])
        self.assertEqual([{'Name': 'local:c1', 'Kind': 'local'}],
                         self.rows(answer))

    def test_show_summarises_disks(self):
        _, answer = self.run_command(domain.ShowDomain, ['local:c1'],
                                     domain_show=[{
                                         'name': 'local:c1', 'kind': 'local',
                                         'committed': 0.44,
                                         'disks': [DISK]}])
        self.assertEqual('%s/vda (gold)' % UUID,
                         self.one(answer, human)['Disks'])
        self.assertEqual([DISK], self.one(answer)['Disks'])
        self.assertEqual(0.44, self.one(answer)['Committed'])
        self.assertNotIn('Utilisation', answer[0])

    def test_set_with_params(self):
        fake, _ = self.run_command(
            domain.SetDomain, ['local:c1', '--iops-4k', '12000', '--policy',
                               'ntt', '--param', 'high=0.95', '--param',
                               'steps=3', '--param', 'strict=true',
                               '--param', 'mode=fast'],
            domain_update=[{}])
        self.assertEqual([('domain_update', ('local:c1',), {
            'iops_4k': 12000.0, 'policy': 'ntt',
            'params': {'high': 0.95, 'steps': 3, 'strict': True,
                       'mode': 'fast'}})], fake.calls)

    def test_set_nothing(self):
        self.assertRaises(exceptions.CommandError, self.run_command,
                          domain.SetDomain, ['local:c1'])


class TestDecision(CommandTestCase):

    def test_every_page_without_limit(self):
        fake, answer = self.run_command(
            decision.ListDecision, ['--domain', 'd1'], decision_list=[
                ([{'id': 5}, {'id': 4}], 4), ([{'id': 2}], None)])
        self.assertEqual([5, 4, 2], [r['ID'] for r in self.rows(answer)])
        self.assertEqual([
            {'limit': None, 'instance': None, 'domain': 'd1', 'since': None,
             'marker': None},
            {'instance': None, 'domain': 'd1', 'since': None,
             'marker': 4}], [c[2] for c in fake.calls])

    def test_one_page_with_limit(self):
        row = {'id': 5, 'created_at': 't', 'domain': 'd1',
               'instance_uuid': UUID, 'dev': 'vda', 'action': 'cap',
               'new_limits': {'total_iops_sec': 10}, 'reason': 'r',
               'policy': 'guarantee', 'project_id': 'p1', 'old_limits': {},
               'numbers': {'share': 0.3}}
        fake, answer = self.run_command(
            decision.ListDecision,
            ['--limit', '1', '--since', '2026-11-22', '--instance', UUID,
             '--marker', '9', '--long'], decision_list=[([row], 5)])
        self.assertEqual(1, len(fake.calls))
        self.assertEqual({'limit': 1, 'instance': UUID, 'domain': None,
                          'since': '2026-11-22', 'marker': '9'},
                         fake.calls[0][2])
        shown = self.rows(answer)[0]
        self.assertEqual({'share': 0.3}, shown['Numbers'])
        self.assertEqual('guarantee', shown['Policy'])
        self.assertEqual({'total_iops_sec': 10}, shown['New Limits'])
