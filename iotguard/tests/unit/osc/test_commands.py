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
import types
from unittest import mock

import fixtures
from keystoneauth1 import exceptions as ksa_exc
from openstack import exceptions as sdk_exc
from osc_lib import exceptions

from iotguard.osc import client
from iotguard.osc.v1 import agent
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
        'domain': 'local:c1', 'domain_id': 'ab12', 'volume_id': None,
        'project_id': 'p1', 'tier': 'gold', 'tier_source': 'api',
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


class FakeSDK:
    """openstacksdk's find_server / find_project / find_domain over dicts.

    ``servers`` and ``projects`` map a name or ID to an ID, or to an
    exception to raise; ``found`` records the lookups.
    """

    def __init__(self, servers=None, projects=None, domains=None):
        self.found = []
        self.compute = types.SimpleNamespace(
            find_server=self._finder('server', servers or {}))
        self.identity = types.SimpleNamespace(
            find_project=self._finder('project', projects or {}),
            find_domain=self._finder('domain', domains or {}))

    def _finder(self, kind, known):
        def find(name_or_id, ignore_missing=True, **where):
            self.found.append((kind, name_or_id, where))
            assert ignore_missing is False
            answer = known.get((name_or_id, where.get('domain_id')),
                               known.get(name_or_id))
            if isinstance(answer, Exception):
                raise answer
            if answer is None:
                raise sdk_exc.NotFoundException('no %s' % name_or_id)
            return types.SimpleNamespace(id=answer)
        return find


class CommandTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.stderr = self.useFixture(fixtures.MonkeyPatch(
            'sys.stderr', io.StringIO())).new_value
        self.log = self.useFixture(fixtures.FakeLogger())

    def run_command(self, cls, argv, sdk=None, auth_type='password',
                    **answers):
        """(fake client, the command's answer) for ``argv``."""
        fake = FakeClient(**answers)
        app = mock.Mock()
        app.client_manager.iotguard = fake
        app.client_manager.sdk_connection = sdk or FakeSDK()
        app.client_manager.get_configuration.return_value = {
            'auth_type': auth_type}
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
        sdk = FakeSDK(projects={'demo': 'p1', 'p2': 'p2'})
        fake, answer = self.run_command(
            tier.CreateTier,
            ['gold', '--min-iops', '2000', '--max-bytes-sec', '2e8',
             '--private', '--project', 'demo', '--project', 'p2'],
            sdk=sdk, tier_create=[TIER])
        self.assertEqual([('project', 'demo', {}), ('project', 'p2', {})],
                         sdk.found)
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

    def test_set_projects_by_name_in_a_domain(self):
        sdk = FakeSDK(projects={('demo', 'd2'): 'p-d2', 'demo': 'p-d1'},
                      domains={'other': 'd2'})
        fake, _ = self.run_command(
            tier.SetTier, ['gold', '--project', 'demo',
                           '--project-domain', 'other'], sdk=sdk,
            tier_update=[TIER])
        self.assertEqual({'projects': ['p-d2']}, fake.calls[0][2])
        self.assertEqual([('domain', 'other', {}),
                          ('project', 'demo', {'domain_id': 'd2'})],
                         sdk.found)

    def test_project_lookup_failures(self):
        sdk = FakeSDK(projects={
            'twin': sdk_exc.DuplicateResource('two'),
            'secret': sdk_exc.ForbiddenException('no')})
        exc = self.assertRaises(exceptions.CommandError, self.run_command,
                                tier.SetTier, ['gold', '--project', 'nope'],
                                sdk=sdk)
        self.assertIn("No project with a name or ID of 'nope'", str(exc))
        exc = self.assertRaises(exceptions.CommandError, self.run_command,
                                tier.SetTier, ['gold', '--project', 'twin'],
                                sdk=sdk)
        self.assertIn('--project-domain', str(exc))
        # A caller Keystone does not let read projects: taken as an ID.
        fake, _ = self.run_command(tier.SetTier,
                                   ['gold', '--project', 'secret'], sdk=sdk,
                                   tier_update=[TIER])
        self.assertEqual({'projects': ['secret']}, fake.calls[0][2])

    def test_no_keystone_lookup_without_auth(self):
        sdk = FakeSDK()
        fake, _ = self.run_command(tier.SetTier, ['gold', '--project', 'p9'],
                                   sdk=sdk, auth_type='none',
                                   tier_update=[TIER])
        self.assertEqual({'projects': ['p9']}, fake.calls[0][2])
        self.assertEqual([], sdk.found)

    def test_unset_groups_and_fields(self):
        fake, answer = self.run_command(
            tier.UnsetTier, ['gold', '--floor', '--max-iops', '--weight',
                             '--description'], tier_update=[TIER])
        self.assertIsNone(answer)
        self.assertEqual([('tier_update', ('gold',), {
            'min_iops': 0.0, 'min_bytes_sec': 0.0, 'max_iops': 0.0,
            'min_iops_per_gb': 0.0, 'min_bytes_sec_per_gb': 0.0,
            'weight': 1.0, 'description': ''})], fake.calls)
        fake, _ = self.run_command(tier.UnsetTier, ['gold', '--ceiling'],
                                   tier_update=[TIER])
        self.assertEqual({'max_iops': 0.0, 'max_bytes_sec': 0.0,
                          'max_iops_per_gb': 0.0,
                          'max_bytes_sec_per_gb': 0.0}, fake.calls[0][2])
        fake, _ = self.run_command(tier.UnsetTier,
                                   ['gold', '--min-iops-per-gb'],
                                   tier_update=[TIER])
        self.assertEqual({'min_iops_per_gb': 0.0}, fake.calls[0][2])

    def test_create_per_gib(self):
        fake, _ = self.run_command(
            tier.CreateTier, ['gp', '--min-iops', '100', '--min-iops-per-gb',
                              '3', '--max-bytes-sec-per-gb', '1048576'],
            tier_create=[TIER])
        self.assertEqual((('gp',), {
            'min_iops': 100.0, 'min_iops_per_gb': 3.0,
            'max_bytes_sec_per_gb': 1048576.0}), fake.calls[0][1:])

    def test_create_and_unset_a_burst(self):
        fake, _ = self.run_command(
            tier.CreateTier, ['gp', '--min-iops', '100', '--burst-factor',
                              '4', '--burst-seconds', '1800'],
            tier_create=[TIER])
        self.assertEqual((('gp',), {
            'min_iops': 100.0, 'burst_factor': 4.0,
            'burst_seconds': 1800.0}), fake.calls[0][1:])
        fake, _ = self.run_command(tier.UnsetTier, ['gold', '--burst'],
                                   tier_update=[TIER])
        self.assertEqual({'burst_factor': 0.0, 'burst_seconds': 0.0},
                         fake.calls[0][2])

    def test_create_and_unset_a_latency_objective(self):
        fake, _ = self.run_command(
            tier.CreateTier, ['gold', '--latency-p99-ms', '5'],
            tier_create=[TIER])
        self.assertEqual((('gold',), {'latency_p99_ms': 5.0}),
                         fake.calls[0][1:])
        fake, _ = self.run_command(tier.UnsetTier,
                                   ['gold', '--latency-p99-ms'],
                                   tier_update=[TIER])
        self.assertEqual({'latency_p99_ms': 0.0}, fake.calls[0][2])

    def test_unset_projects(self):
        sdk = FakeSDK(projects={'demo': 'p1', 'p3': 'p3'})
        fake, _ = self.run_command(
            tier.UnsetTier, ['gold', '--project', 'demo'], sdk=sdk,
            tier_show=[dict(TIER, projects=['p1', 'p2'])],
            tier_update=[TIER])
        self.assertEqual([('tier_show', ('gold',), {}),
                          ('tier_update', ('gold',), {'projects': ['p2']})],
                         fake.calls)
        exc = self.assertRaises(
            exceptions.CommandError, self.run_command, tier.UnsetTier,
            ['gold', '--project', 'p3'], sdk=sdk, tier_show=[TIER])
        self.assertEqual('Tier gold is not granted to project(s) p3.',
                         str(exc))

    def test_unset_nothing(self):
        self.assertRaises(exceptions.CommandError, self.run_command,
                          tier.UnsetTier, ['gold'])

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

    INSTANCE = {'uuid': UUID, 'project_id': 'p1',
                'disks': [DISK, dict(DISK, dev='vdb', cap=None, tier=None,
                                     tier_source=None)]}

    def test_list_own_project(self):
        fake, answer = self.run_command(instance.ListInstance, [],
                                        instance_list=[[self.INSTANCE]])
        self.assertEqual([('instance_list', (), {
            'all_projects': False, 'project_id': None})], fake.calls)
        vda, vdb = self.rows(answer)
        self.assertEqual({'Instance': UUID, 'Disk': 'vda', 'Tier': 'gold',
                          'Source': 'api', 'Floor': DISK['floor'],
                          'Cap': {'total_iops_sec': 2900}}, vda)
        self.assertEqual((None, None), (vdb['Tier'], vdb['Cap']))
        self.assertEqual("min_bytes_sec='0.0', min_iops='2000.0'",
                         self.rows(self.run_command(
                             instance.ListInstance, [],
                             instance_list=[[self.INSTANCE]])[1],
                             human)[0]['Floor'])

    def test_list_other_projects(self):
        fake, answer = self.run_command(instance.ListInstance,
                                        ['--all-projects', '--long'],
                                        instance_list=[[self.INSTANCE]])
        self.assertEqual({'all_projects': True, 'project_id': None},
                         fake.calls[0][2])
        self.assertEqual(('Instance', 'Project', 'Disk'), answer[0][:3])
        self.assertIn('Cap Reason', answer[0])
        sdk = FakeSDK(projects={'demo': 'p1'})
        fake, answer = self.run_command(instance.ListInstance,
                                        ['--project', 'demo'], sdk=sdk,
                                        instance_list=[[]])
        self.assertEqual({'all_projects': False, 'project_id': 'p1'},
                         fake.calls[0][2])
        self.assertEqual([], self.rows(answer))
        self.assertIn('Project', answer[0])

    def test_show_is_one_object(self):
        sdk = FakeSDK(servers={'web-1': UUID})
        fake, answer = self.run_command(
            instance.ShowInstance, ['web-1'], sdk=sdk,
            instance_show=[self.INSTANCE])
        self.assertEqual([('instance_show', (UUID,), {})], fake.calls)
        self.assertEqual([('server', 'web-1', {})], sdk.found)
        shown = self.one(answer)
        self.assertEqual(('UUID', 'Project', 'Disks'), answer[0])
        self.assertEqual((UUID, 'p1'), (shown['UUID'], shown['Project']))
        self.assertEqual(self.INSTANCE['disks'], shown['Disks'])
        self.assertEqual(
            'vda: gold (api), floor min_bytes_sec=0, min_iops=2000; '
            'domain local:c1; cap total_iops_sec=2900 until '
            '2026-11-22T03:40:40Z, decision 2: fair share\n'
            'vdb: no tier; domain local:c1',
            self.one(answer, human)['Disks'])

    def test_a_disk_size_and_a_refused_one(self):
        disk = dict(DISK, cap=None, size_gib=100, size_refused={
            'size_gib': 400, 'reason': 'Tier gold does not fit',
            'since': '2026-11-28T13:00:00'})
        self.assertEqual(
            'vda: gold (api), floor min_bytes_sec=0, min_iops=2000 at 100 '
            'GiB; 400 GiB refused: Tier gold does not fit; domain local:c1',
            instance.DisksColumn([disk]).human_readable())

    def test_a_burst_shows_its_credits(self):
        disk = dict(DISK, cap=None, burst={'credits_s': 42.5,
                                           'used_s': 12.0})
        self.assertEqual(
            'vda: gold (api), floor min_bytes_sec=0, min_iops=2000; burst '
            'credits 42.5s, used 12s; domain local:c1',
            instance.DisksColumn([disk]).human_readable())

    def test_a_measured_p99_is_shown_never_the_mean(self):
        rates = {'read_iops': 20.0, 'write_iops': 0.0, 'read_bytes_sec': 0.0,
                 'write_bytes_sec': 0.0, 'latency_ms': 4.2,
                 'sampled_at': '2026-11-22T03:40:05Z'}
        measured = dict(DISK, cap=None,
                        rates=dict(rates, latency_p99_ms=9.6))
        mean_only = dict(DISK, dev='vdb', cap=None,
                         rates=dict(rates, latency_p99_ms=None))
        self.assertEqual(
            'vda: gold (api), floor min_bytes_sec=0, min_iops=2000; latency '
            'p99 9.6 ms; domain local:c1\n'
            'vdb: gold (api), floor min_bytes_sec=0, min_iops=2000; domain '
            'local:c1',
            instance.DisksColumn([measured, mean_only]).human_readable())
        shown = dict(self.INSTANCE, disks=[measured, mean_only, DISK])
        _, answer = self.run_command(instance.ListInstance, ['--long'],
                                     instance_list=[[shown]])
        self.assertEqual([9.6, None, None], [
            row['Latency p99 (ms)'] for row in self.rows(answer)])
        _, answer = self.run_command(instance.ListInstance, [],
                                     instance_list=[[shown]])
        self.assertNotIn('Latency p99 (ms)', answer[0])

    def test_a_tenant_sees_no_host_nor_domain_name(self):
        tenant = {k: v for k, v in DISK.items() if k not in ('host',
                                                             'domain')}
        shown = dict(self.INSTANCE, disks=[tenant])
        _, answer = self.run_command(instance.ShowInstance, [UUID],
                                     instance_show=[shown])
        self.assertIn('; domain ab12;', self.one(answer, human)['Disks'])
        _, answer = self.run_command(instance.ListInstance, ['--long'],
                                     instance_list=[[shown]])
        self.assertIn('Domain ID', answer[0])
        self.assertNotIn('Host', answer[0])
        self.assertNotIn('Domain', answer[0])

    def test_show_refused_tier_is_visible(self):
        refused = dict(DISK, cap=None, tier_refused={
            'tier': 'huge', 'source': 'flavor', 'reason': 'does not fit'})
        _, answer = self.run_command(
            instance.ShowInstance, [UUID],
            instance_show=[dict(self.INSTANCE, disks=[refused])])
        self.assertIn('huge refused (from flavor): does not fit',
                      self.one(answer, human)['Disks'])

    def test_uuid_needs_no_nova(self):
        sdk = FakeSDK()
        for auth_type in ('password', 'none'):
            fake, _ = self.run_command(instance.ShowInstance, [UUID],
                                       sdk=sdk, auth_type=auth_type,
                                       instance_show=[self.INSTANCE])
            self.assertEqual([('instance_show', (UUID,), {})], fake.calls)
        self.assertEqual([], sdk.found)

    def test_server_lookup_failures(self):
        sdk = FakeSDK(servers={
            'twin': sdk_exc.DuplicateResource('2'),
            'far': ksa_exc.EndpointNotFound('no compute endpoint')})
        for name, part in (
                ('nope', "No server with a name or ID of 'nope' exists."),
                ('twin', "More than one server is named 'twin': give its "
                         "ID."),
                ('far', "Could not look server 'far' up in Nova (no "
                        "compute endpoint): give its UUID.")):
            exc = self.assertRaises(exceptions.CommandError,
                                    self.run_command, instance.ShowInstance,
                                    [name], sdk=sdk)
            self.assertEqual(part, str(exc))
        exc = self.assertRaises(exceptions.CommandError, self.run_command,
                                instance.ShowInstance, ['web-1'],
                                auth_type='none')
        self.assertIn('--os-auth-type none', str(exc))

    def test_set_tier_is_silent(self):
        admission = [{'domain': 'local:c1', 'committed_after': 0.44}]
        sdk = FakeSDK(servers={'web-1': UUID})
        fake, answer = self.run_command(
            instance.SetInstance, ['--tier', 'gold', 'web-1'], sdk=sdk,
            instance_set_tier=[{'uuid': UUID, 'project_id': 'p1',
                                'tier': 'gold', 'admission': admission,
                                'nova_metadata': 'synced'}])
        self.assertEqual([('instance_set_tier', (UUID, 'gold'), {})],
                         fake.calls)
        self.assertIsNone(answer)

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

    def test_unset_tier(self):
        sdk = FakeSDK(servers={'web-1': UUID})
        fake, answer = self.run_command(instance.UnsetInstance,
                                        ['--tier', 'web-1'], sdk=sdk,
                                        instance_unset_tier=[None])
        self.assertEqual([('instance_unset_tier', (UUID,), {})],
                         fake.calls)
        self.assertIsNone(answer)
        exc = self.assertRaises(exceptions.CommandError, self.run_command,
                                instance.UnsetInstance, [UUID])
        self.assertEqual('Nothing to unset: give --tier.', str(exc))


class TestDomain(CommandTestCase):

    def test_list_admin_and_tenant(self):
        _, answer = self.run_command(domain.ListDomain, [], domain_list=[[
            {'name': 'local:c1', 'kind': 'local', 'policy': 'guarantee',
             'profile': {'iops_4k': 1e4, 'bytes_sec': 4e8}}]])
        self.assertEqual(('Name', 'Kind', 'Policy', 'Profile'), answer[0])
        _, answer = self.run_command(domain.ListDomain, [], domain_list=[[
            {'domain_id': 'ab12', 'kind': 'local'}]])
        self.assertEqual([{'Domain ID': 'ab12', 'Kind': 'local'}],
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
        self.assertNotIn('Overcommitted', answer[0])

    def test_show_overcommitment(self):
        _, answer = self.run_command(domain.ShowDomain, ['local:c1'],
                                     domain_show=[{
                                         'name': 'local:c1', 'kind': 'local',
                                         'committed': 0.59,
                                         'committed_learned': 1.17,
                                         'max_commit_ratio': 0.9,
                                         'overcommitted': True,
                                         'beyond_capacity': True,
                                         'disks': []}])
        shown = self.one(answer)
        self.assertEqual((1.17, 0.9, True, True), (
            shown['Committed Learned'], shown['Max Commit Ratio'],
            shown['Overcommitted'], shown['Beyond Capacity']))

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

    def test_set_form_and_profile_source(self):
        fake, _ = self.run_command(
            domain.SetDomain, ['local:c1', '--form', 'max',
                               '--profile-source', 'learned'],
            domain_update=[{}])
        self.assertEqual([('domain_update', ('local:c1',), {
            'form': 'max', 'profile_source': 'learned'})], fake.calls)

    def test_set_nothing(self):
        self.assertRaises(exceptions.CommandError, self.run_command,
                          domain.SetDomain, ['local:c1'])


class TestAgent(CommandTestCase):

    AGENT = {'host': 'cn1', 'driver': 'libvirt', 'version': '1.0',
             'last_heartbeat': '2026-11-22T03:40:05Z', 'interval_s': 5.0,
             'disks': 12, 'caps': 3, 'clock_offset_s': -30.02,
             'alive': True, 'created_at': '2026-11-22T01:00:00Z'}

    def test_list(self):
        fake, answer = self.run_command(agent.ListAgent, [],
                                        agent_list=[[self.AGENT]])
        self.assertEqual([('agent_list', (), {'host': None, 'alive': None})],
                         fake.calls)
        self.assertEqual([{'Host': 'cn1', 'Driver': 'libvirt',
                           'Alive': True,
                           'Last Heartbeat': '2026-11-22T03:40:05Z',
                           'Disks': 12, 'Caps': 3,
                           'Clock Offset (s)': -30.02}], self.rows(answer))

    def test_list_long_and_filters(self):
        for argv, filters in ((['--host', 'cn1', '--long'],
                               {'host': 'cn1', 'alive': None}),
                              (['--alive'], {'host': None, 'alive': True}),
                              (['--dead'], {'host': None, 'alive': False})):
            fake, answer = self.run_command(agent.ListAgent, argv,
                                            agent_list=[[self.AGENT]])
            self.assertEqual([('agent_list', (), filters)], fake.calls)
        fake, answer = self.run_command(agent.ListAgent, ['--long'],
                                        agent_list=[[self.AGENT]])
        shown = self.rows(answer)[0]
        self.assertEqual(('1.0', 5.0, '2026-11-22T01:00:00Z'),
                         (shown['Version'], shown['Interval (s)'],
                          shown['Created At']))

    def test_alive_and_dead_are_exclusive(self):
        self.assertRaises(SystemExit, self.run_command, agent.ListAgent,
                          ['--alive', '--dead'])


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

    def test_instance_by_name(self):
        sdk = FakeSDK(servers={'web-1': UUID})
        fake, _ = self.run_command(decision.ListDecision,
                                   ['--instance', 'web-1', '--limit', '1'],
                                   sdk=sdk, decision_list=[([], None)])
        self.assertEqual(UUID, fake.calls[0][2]['instance'])

    def test_show(self):
        row = {'id': 5, 'created_at': 't', 'domain': 'd1',
               'instance_uuid': UUID, 'dev': 'vda', 'action': 'cap',
               'new_limits': {'total_iops_sec': 10}, 'reason': 'r',
               'policy': 'guarantee', 'project_id': 'p1', 'old_limits': {},
               'numbers': {'share': 0.3}}
        fake, answer = self.run_command(decision.ShowDecision, ['5'],
                                        decision_show=[row])
        self.assertEqual([('decision_show', (5,), {})], fake.calls)
        shown = self.one(answer)
        self.assertEqual((5, 'guarantee', {'share': 0.3}, 'r'),
                         (shown['ID'], shown['Policy'], shown['Numbers'],
                          shown['Reason']))
        self.assertRaises(SystemExit, self.run_command,
                          decision.ShowDecision, ['five'])

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
