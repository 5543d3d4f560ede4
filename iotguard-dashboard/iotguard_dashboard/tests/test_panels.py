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

"""The panels rendered by Django with iotguard's API stubbed.

The stubbed answers have the shapes of api-ref/source/samples (a disk
capped by the guarantee policy, a disk not sampled yet, a member's
admission refusal).
"""

import copy
from unittest import mock

from django import http
from django.urls import reverse
from openstack_dashboard.test import helpers
import requests

from iotguard_dashboard.api import iotguard

UUID = '8c4b1e2a-5d6f-4a7b-9c8d-0e1f2a3b4c5d'
REASON = ('guarantee: load 0.4000 above its fair share 0.3400, capped at '
          '0.3400 (floor 0.2000)')
CAP = {'limits': {'total_iops_sec': 2900, 'total_bytes_sec': 11878400},
       'lease_expires_at': '2026-11-22T03:40:40Z', 'decision_id': 1,
       'reason': REASON}
DISK = {
    'instance_uuid': UUID, 'dev': 'vda', 'host': 'compute1',
    'domain': 'local:compute1',
    'domain_id': 'b090e761d0742bfa7c3e5f2a9d8b1c4e6f0a3d5b7c9e1f2a4b6d8c0e',
    'volume_id': None,
    'project_id': 'c5f2a1e8d7b64c3a9e0f1b2d3c4a5e6f', 'tier': 'gold',
    'tier_source': 'api', 'tier_refused': None,
    'floor': {'min_iops': 2000.0, 'min_bytes_sec': 20000000.0},
    'ceiling': {'max_iops': 5000.0, 'max_bytes_sec': 200000000.0},
    'rates': {'read_iops': 2400.0, 'write_iops': 800.0,
              'read_bytes_sec': 9800000.0, 'write_bytes_sec': 3200000.0,
              'latency_ms': 4.2, 'sampled_at': '2026-11-22T03:40:05Z'},
    'cap': CAP}
IDLE = dict(DISK, dev='vdb', rates=None, cap=None,
            volume_id='3f1e9c2b-7a4d-4e8f-b6c5-1d2e3f4a5b6c')
TIERS = [
    {'name': 'gold', 'description': 'databases', 'min_iops': 2000.0,
     'min_bytes_sec': 0.0, 'max_iops': 5000.0,
     'max_bytes_sec': 200000000.0, 'weight': 4.0, 'is_public': True},
    {'name': 'platinum', 'description': 'reserved for billing',
     'min_iops': 9000.0, 'min_bytes_sec': 0.0, 'max_iops': 0.0,
     'max_bytes_sec': 0.0, 'weight': 8.0, 'is_public': False},
    {'name': 'sized', 'description': 'grows with the disk',
     'min_iops': 100.0, 'min_bytes_sec': 0.0, 'max_iops': 0.0,
     'max_bytes_sec': 0.0, 'min_iops_per_gb': 3.0,
     'min_bytes_sec_per_gb': 0.0, 'max_iops_per_gb': 0.0,
     'max_bytes_sec_per_gb': 1e6, 'burst_factor': 3.0,
     'burst_seconds': 60.0, 'latency_p99_ms': 5.0, 'weight': 1.0,
     'is_public': True}]
NO_PER_GB_NOR_BURST = dict.fromkeys(
    ('min_iops_per_gb', 'min_bytes_sec_per_gb', 'max_iops_per_gb',
     'max_bytes_sec_per_gb', 'burst_factor', 'burst_seconds',
     'latency_p99_ms'), 0.0)
DOMAIN = {
    'name': 'local:compute1', 'kind': 'local', 'policy': 'guarantee',
    'params': {},
    'profile': {'iops_4k': 10000.0, 'bytes_sec': 400000000.0,
                'form': 'additive', 'source': 'manual', 'learned': None},
    'capacity': 1.0, 'committed': 0.5, 'committed_learned': None,
    'max_commit_ratio': 0.9, 'overcommitted': None,
    'beyond_capacity': None, 'utilisation': 0.3525,
    'disks': [DISK, IDLE]}
DECISION = {
    'id': 7, 'created_at': '2026-11-22T03:40:10Z',
    'domain': 'local:compute1', 'policy': 'guarantee',
    'instance_uuid': UUID, 'dev': 'vda', 'project_id': DISK['project_id'],
    'action': 'cap', 'old_limits': {}, 'new_limits': CAP['limits'],
    'reason': REASON, 'numbers': {}}
REFUSAL = ('Tier platinum does not fit in domain local:compute1 now: the '
           'floors already promised there leave no room for it. Choose a '
           'lower tier or ask the cloud operator.')

INDEX = reverse('horizon:project:iotguard_disks:index')
TIER = reverse('horizon:project:iotguard_disks:tier', args=[UUID])
ADMIN = reverse('horizon:admin:iotguard:index')


def records(dicts):
    return [iotguard.Record(copy.deepcopy(d)) for d in dicts]


class CatalogMixin:
    """The test catalog with iotguard-api in it."""

    def _setup_test_data(self):
        super()._setup_test_data()
        self.service_catalog.append({
            'type': iotguard.SERVICE_TYPE, 'name': 'iotguard',
            'endpoints_links': [], 'endpoints': [
                {'region': 'RegionOne', 'interface': interface,
                 'url': 'http://iotguard.example.com:9737'}
                for interface in ('public', 'internal', 'admin')]})


class StubbedAPIMixin(CatalogMixin):
    """The project's disks, tiers and server web-1 stubbed."""

    def setUp(self):
        super().setUp()
        for name, value in (('disk_list', records([DISK, IDLE])),
                            ('tier_list', records(TIERS)),
                            ('instance_show', iotguard.Record(
                                instance_uuid=UUID, disks=[DISK, IDLE]))):
            setattr(self, name, mock.patch.object(
                iotguard, name, return_value=value).start())
        server = mock.Mock(id=UUID)
        server.name = 'web-1'
        mock.patch('openstack_dashboard.api.nova.server_list',
                   return_value=([server], False)).start()


class ProjectPanelTests(StubbedAPIMixin, helpers.TestCase):

    def test_index_shows_disks_and_tiers(self):
        response = self.client.get(INDEX)
        self.assertEqual(200, response.status_code)
        self.assertTemplateUsed(response,
                                'iotguard_dashboard/project/index.html')
        disks = response.context['disks_table'].data
        self.assertEqual(['vda', 'vdb'], [d.dev for d in disks])
        for text in ('web-1 (%s)' % UUID, 'gold (api)',
                     '2000 IOPS, 20.0 MB/s', '3200 IOPS, 13.0 MB/s, 4.2 ms',
                     'not sampled yet', 'total 11.9 MB/s, total 2900 IOPS',
                     REASON, 'Change I/O tier', 'reserved for billing',
                     'private', 'unlimited'):
            self.assertContains(response, text)
        # Its domain: the id's first 8 digits, the whole id in the tooltip
        # (56 digits would widen the table).
        self.assertContains(response, 'title="%s"' % DISK['domain_id'],
                            count=2)
        self.assertContains(response, 'b090e761\u2026', count=2)
        # The domain's real name is the admin's (iotguard:disk:topology).
        self.assertNotContains(response, 'local:compute1')

    def test_no_nova_shows_uuids(self):
        self.service_catalog[:] = [s for s in self.service_catalog
                                   if s['type'] != 'compute']
        response = self.client.get(INDEX)
        self.assertEqual(UUID, response.context['disks_table'].data[0]
                         ['server'])

    def test_tiers_per_gb_and_burst(self):
        response = self.client.get(INDEX)
        for text in ('3 IOPS per GiB, at least 100 IOPS',
                     '1.0 MB/s per GiB', 'bursts to 3x for 60 s',
                     '2000 IOPS', '5 ms'):
            self.assertContains(response, text)

    def test_tier_form_offers_the_tiers(self):
        response = self.client.get(TIER)
        self.assertEqual(200, response.status_code)
        form = response.context['form']
        self.assertEqual(['', 'gold', 'platinum', 'sized'],
                         [value for value, _ in form.fields['tier'].choices])
        self.assertEqual('gold', form.initial['tier'])

    @mock.patch.object(iotguard, 'instance_set_tier')
    def test_tier_admitted(self, set_tier):
        response = self.client.post(TIER, {'instance_uuid': UUID,
                                           'tier': 'gold'})
        self.assertNoFormErrors(response)
        self.assertRedirectsNoFollow(response, INDEX)
        set_tier.assert_called_once_with(mock.ANY, UUID, 'gold')
        self.assertMessageCount(success=1)

    @mock.patch.object(iotguard, 'instance_set_tier',
                       side_effect=iotguard.APIError(409, REFUSAL))
    def test_tier_refused_shows_the_message(self, set_tier):
        response = self.client.post(TIER, {'instance_uuid': UUID,
                                           'tier': 'platinum'})
        self.assertEqual(200, response.status_code)
        self.assertContains(response, REFUSAL)
        set_tier.assert_called_once_with(mock.ANY, UUID, 'platinum')

    @mock.patch.object(iotguard, 'instance_unset_tier')
    def test_no_tier_unsets(self, unset):
        response = self.client.post(TIER, {'instance_uuid': UUID,
                                           'tier': ''})
        self.assertRedirectsNoFollow(response, INDEX)
        unset.assert_called_once_with(mock.ANY, UUID)

    def test_api_error_is_shown_not_raised(self):
        self.disk_list.side_effect = iotguard.APIError(503, 'away')
        response = self.client.get(INDEX)
        self.assertEqual(200, response.status_code)
        self.assertEqual([], response.context['disks_table'].data)
        self.assertMessageCount(response, error=1)

    def test_member_has_no_admin_panel(self):
        response = self.client.get(ADMIN)
        self.assertNotEqual(200, response.status_code)


class InstanceTabTests(CatalogMixin, helpers.TestCase):

    def _tab(self):
        from openstack_dashboard.dashboards.project.instances import tabs
        server = mock.Mock(id=UUID)
        server.name = 'web-1'
        # Horizon's own Interfaces tab asks Neutron.
        mock.patch('openstack_dashboard.api.neutron.is_extension_supported',
                   return_value=False).start()
        # Opened as a link to the tab opens it.
        self.request.GET = http.QueryDict(
            'tab=instance_details__iotguard_disk_io')
        group = tabs.InstanceDetailTabs(self.request, instance=server)
        return group.get_tab('iotguard_disk_io')

    @mock.patch.object(iotguard, 'instance_show', return_value=iotguard.Record(
        instance_uuid=UUID, disks=[DISK, IDLE]))
    def test_instance_details_have_a_disk_io_tab(self, show):
        tab = self._tab()
        self.assertEqual(['vda', 'vdb'],
                         [d.dev for d in tab.get_disks_data()])
        self.assertEqual('web-1', tab.get_disks_data()[0].server)
        show.assert_called_with(mock.ANY, UUID)
        html = tab.render()
        for text in ('web-1', REASON, 'Change I/O tier', TIER):
            self.assertIn(text, html)

    @mock.patch.object(iotguard, 'instance_show',
                       side_effect=iotguard.APIError(404, 'not found'))
    def test_a_server_iotguard_has_not_seen(self, show):
        self.assertEqual([], self._tab().get_disks_data())


class PanelNeedsTheCatalogTests(helpers.TestCase):

    def test_hidden_without_iotguard_in_the_catalog(self):
        response = self.client.get(INDEX)
        self.assertNotEqual(200, response.status_code)


class AdminPanelTests(CatalogMixin, helpers.BaseAdminViewTests):

    @mock.patch.object(iotguard, 'tier_list', return_value=records(TIERS))
    @mock.patch.object(iotguard, 'decision_list',
                       return_value=records([DECISION]))
    @mock.patch.object(iotguard, 'domain_show',
                       return_value=iotguard.Record(copy.deepcopy(DOMAIN)))
    @mock.patch.object(iotguard, 'domain_list', return_value=records([
        {'name': 'local:compute1', 'kind': 'local'}]))
    def test_index_shows_domains_caps_decisions(self, domains, show,
                                                decisions, tiers):
        response = self.client.get(ADMIN)
        self.assertEqual(200, response.status_code)
        show.assert_called_once_with(mock.ANY, 'local:compute1')
        caps = response.context['caps_table'].data
        self.assertEqual([('vda', REASON)],
                         [(c.dev, c.cap['reason']) for c in caps])
        self.assertEqual([7], [d.id for d in
                               response.context['decisions_table'].data])
        for text in ('10000 IOPS, 400.0 MB/s (manual), additive',
                     '0.500 of 0.900 allowed', '35.2 %', '2026-11-22 03:40:10',
                     'no learned verdict', '2026-11-22 03:40:40', REASON,
                     'Create tier', 'reserved for billing'):
            self.assertContains(response, text)


class AdminTierTests(CatalogMixin, helpers.BaseAdminViewTests):

    CREATE = reverse('horizon:admin:iotguard:create_tier')
    FORM = {'name': 'silver', 'description': 'web', 'min_iops': '500',
            'min_bytes_sec': '0', 'max_iops': '1000', 'max_bytes_sec': '0',
            'weight': '2', 'projects': ''}

    @mock.patch.object(iotguard, 'tier_create',
                       return_value=iotguard.Record(name='silver'))
    def test_create(self, create):
        response = self.client.post(self.CREATE,
                                    dict(self.FORM, is_public='on'))
        self.assertNoFormErrors(response)
        self.assertRedirectsNoFollow(response, ADMIN)
        create.assert_called_once_with(
            mock.ANY, name='silver', description='web', min_iops=500.0,
            min_bytes_sec=0.0, max_iops=1000.0, max_bytes_sec=0.0,
            weight=2.0, is_public=True, projects=[], **NO_PER_GB_NOR_BURST)

    @mock.patch.object(iotguard, 'tier_create',
                       return_value=iotguard.Record(name='silver'))
    def test_create_per_gb_with_burst(self, create):
        response = self.client.post(self.CREATE, dict(
            self.FORM, min_iops_per_gb='3', max_bytes_sec_per_gb='1000000',
            burst_factor='3', burst_seconds='60', latency_p99_ms='5'))
        self.assertNoFormErrors(response)
        self.assertRedirectsNoFollow(response, ADMIN)
        kwargs = create.call_args.kwargs
        self.assertEqual(dict(NO_PER_GB_NOR_BURST, min_iops_per_gb=3.0,
                              max_bytes_sec_per_gb=1e6, burst_factor=3.0,
                              burst_seconds=60.0, latency_p99_ms=5.0),
                         {k: kwargs[k] for k in NO_PER_GB_NOR_BURST})

    @mock.patch.object(iotguard, 'tier_create', side_effect=iotguard.APIError(
        400, 'Invalid input: tier silver: a burst needs burst_factor above 1 '
        'and burst_seconds'))
    def test_burst_refused_by_the_api(self, create):
        response = self.client.post(self.CREATE, dict(
            self.FORM, burst_factor='0.5'))
        self.assertContains(response, 'a burst needs burst_factor above 1')
        self.assertEqual(0.5, create.call_args.kwargs['burst_factor'])

    def test_negative_per_gb_is_refused_by_the_form(self):
        with mock.patch.object(iotguard, 'tier_create') as create:
            response = self.client.post(self.CREATE, dict(
                self.FORM, min_iops_per_gb='-1'))
        self.assertFormErrors(response, 1)
        create.assert_not_called()

    @mock.patch.object(iotguard, 'tier_create', side_effect=iotguard.APIError(
        400, 'Invalid input: min_iops 2000 is above max_iops 1000'))
    def test_create_refused_by_the_api(self, create):
        response = self.client.post(self.CREATE, dict(
            self.FORM, min_iops='2000', projects='p1, p2'))
        self.assertContains(response, 'min_iops 2000 is above max_iops')
        self.assertEqual((False, ['p1', 'p2']), (
            create.call_args.kwargs['is_public'],
            create.call_args.kwargs['projects']))

    @mock.patch.object(iotguard, 'tier_update',
                       return_value=iotguard.Record(name='platinum'))
    @mock.patch.object(iotguard, 'tier_show', return_value=iotguard.Record(
        TIERS[1], projects=['p1']))
    def test_update(self, show, update):
        url = reverse('horizon:admin:iotguard:update_tier',
                      args=['platinum'])
        form = self.client.get(url).context['form']
        self.assertEqual(('platinum', 9000.0, False, 'p1'), tuple(
            form.initial[k] for k in ('name', 'min_iops', 'is_public',
                                      'projects')))
        response = self.client.post(url, dict(self.FORM, name='platinum',
                                              projects='p1'))
        self.assertRedirectsNoFollow(response, ADMIN)
        update.assert_called_once_with(
            mock.ANY, 'platinum', description='web', min_iops=500.0,
            min_bytes_sec=0.0, max_iops=1000.0, max_bytes_sec=0.0,
            weight=2.0, is_public=False, projects=['p1'],
            **NO_PER_GB_NOR_BURST)

    @mock.patch.object(iotguard, 'tier_update',
                       return_value=iotguard.Record(name='sized'))
    @mock.patch.object(iotguard, 'tier_show',
                       return_value=iotguard.Record(TIERS[2]))
    def test_update_per_gb_and_burst(self, show, update):
        url = reverse('horizon:admin:iotguard:update_tier', args=['sized'])
        form = self.client.get(url).context['form']
        self.assertEqual((3.0, 1e6, 3.0, 60.0, 5.0), tuple(
            form.initial[k] for k in ('min_iops_per_gb',
                                      'max_bytes_sec_per_gb', 'burst_factor',
                                      'burst_seconds', 'latency_p99_ms')))
        # Emptied fields are sent as 0: the burst is taken away.
        response = self.client.post(url, dict(
            self.FORM, name='sized', min_iops_per_gb='4', burst_factor='',
            burst_seconds='', latency_p99_ms=''))
        self.assertRedirectsNoFollow(response, ADMIN)
        kwargs = update.call_args.kwargs
        self.assertEqual(dict(NO_PER_GB_NOR_BURST, min_iops_per_gb=4.0),
                         {k: kwargs[k] for k in NO_PER_GB_NOR_BURST})

    @mock.patch.object(iotguard, 'tier_delete')
    @mock.patch.object(iotguard, 'tier_list', return_value=records(TIERS))
    @mock.patch.object(iotguard, 'decision_list', return_value=[])
    @mock.patch.object(iotguard, 'domain_list', return_value=[])
    def test_delete(self, domains, decisions, tiers, delete):
        response = self.client.post(ADMIN, {'action': 'tiers__delete__gold'})
        self.assertRedirectsNoFollow(response, ADMIN)
        delete.assert_called_once_with(mock.ANY, 'gold')
        delete.side_effect = iotguard.APIError(409, 'tier gold is in use')
        response = self.client.post(ADMIN, {'action': 'tiers__delete__gold'},
                                    follow=True)
        self.assertContains(response, 'tier gold is in use')


class APITests(CatalogMixin, helpers.TestCase):

    def test_catalog_endpoint_and_user_token(self):
        answer = requests.Response()
        answer.status_code, answer._content = 200, b'{"tiers": []}'
        with mock.patch.object(requests.Session, 'request',
                               return_value=answer) as send:
            self.assertEqual([], iotguard.tier_list(self.request))
        (method, url), kwargs = send.call_args
        self.assertEqual(('GET', 'http://iotguard.example.com:9737/v1/tiers'),
                         (method, url))
        self.assertEqual(self.token.id, kwargs['headers']['X-Auth-Token'])

    def test_plugin_does_not_import_iotguard(self):
        # The plugin installs without iotguard: it may not import it.
        import pathlib
        import re
        root = pathlib.Path(iotguard.__file__).parents[1]
        imports = re.compile(r'^\s*(from|import) iotguard(\.| |$)', re.M)
        self.assertEqual([], [str(p) for p in root.rglob('*.py')
                              if imports.search(p.read_text())])

    def test_refusal_keeps_message_and_numbers(self):
        response = mock.Mock(status_code=409, reason='Conflict')
        response.json.return_value = {'error': {
            'code': 409, 'message': REFUSAL, 'numbers': {'tier': 'x'}}}
        with mock.patch.object(iotguard, '_adapter') as adapter:
            adapter.return_value.request.return_value = response
            with self.assertRaises(iotguard.APIError) as ctx:
                iotguard.instance_set_tier(mock.Mock(), UUID, 'platinum')
        self.assertEqual((409, REFUSAL, {'tier': 'x'}),
                         (ctx.exception.code, ctx.exception.message,
                          ctx.exception.numbers))
        adapter.return_value.request.assert_called_once_with(
            '/v1/instances/%s/tier' % UUID, 'PUT', raise_exc=False,
            params={}, json={'tier': 'platinum'})

    def test_non_json_error(self):
        response = mock.Mock(status_code=502, reason='Bad Gateway',
                             text='<html>proxy</html>')
        response.json.side_effect = ValueError
        with mock.patch.object(iotguard, '_adapter') as adapter:
            adapter.return_value.request.return_value = response
            with self.assertRaises(iotguard.APIError) as ctx:
                iotguard.tier_list(mock.Mock())
        self.assertEqual((502, '<html>proxy</html>'),
                         (ctx.exception.code, ctx.exception.message))


class EnabledFilesTests(helpers.TestCase):

    def test_each_application_once(self):
        # Django refuses an application installed twice: the panels'
        # files must not each add the plugin's.
        import iotguard_dashboard.enabled
        from openstack_dashboard.utils import settings as settings_utils
        apps, config = [], {}
        settings_utils.update_dashboards([iotguard_dashboard.enabled],
                                         config, apps)
        self.assertEqual(['iotguard_dashboard'], apps)
        self.assertEqual({'iotguard_disks', 'iotguard'},
                         {c['PANEL'] for c in config['panel_customization']})


class FormatTests(helpers.TestCase):

    def test_rates_the_agent_did_not_report(self):
        from iotguard_dashboard.content import format as fmt
        rates = dict.fromkeys(('write_iops', 'read_bytes_sec',
                               'write_bytes_sec', 'latency_ms'))
        self.assertEqual('7 IOPS', str(fmt.rates(
            {'rates': dict(rates, read_iops=7.0)})))
        self.assertEqual('0 IOPS', str(fmt.rates(
            {'rates': dict(rates, read_iops=None)})))

    def test_rates_show_the_p99_where_measured(self):
        from iotguard_dashboard.content import format as fmt
        rates = dict(read_iops=1.0, write_iops=9.0, read_bytes_sec=0.0,
                     write_bytes_sec=0.0, latency_ms=2.25)
        self.assertEqual('10 IOPS, 2.2 ms', str(fmt.rates(
            {'rates': dict(rates, latency_p99_ms=None)})))
        self.assertEqual('10 IOPS, 2.2 ms (p99 31.5 ms)', str(fmt.rates(
            {'rates': dict(rates, latency_p99_ms=31.5)})))
