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

"""The dashboard plugin in a real Horizon, driven by headless Chromium.

A throwaway Keystone (test_osc_keystone.Keystone) holds the catalog entry
of iotguard-api (auth_strategy = keystone, on a migrated SQLite database
seeded with a domain, disks, a cap and its decision); Horizon 27 serves
the plugin from this checkout and Chromium through Selenium logs in
(iotguard.tests.fixtures.horizon):

* as a project member: Project > Compute > Disk I/O shows the project's
  disks (not another project's) with what the API says of them and the
  tiers the project may choose; "Change I/O tier" to a tier that fits is
  admitted, to one that does not is refused with admission's message, and
  the API's database agrees; the disk's page (its name in the table)
  charts its last hour from the record seeded by the minute: a bar a
  minute, the minutes capped and those whose floor was missed, the floor
  and cap in force each minute as steps, the summary the API gives;
  Admin > Disk I/O is not the member's;
* as the admin: Admin > Disk I/O shows each domain's committed floors and
  utilisation as the API reports them, the caps in force and the latest
  decisions with their reasons; a tier the API refuses (floor above
  ceiling) is refused in the form with its message, then created.

Horizon loads the plugin's customization module ("Change I/O tier" in
the instances table) through the plugin's settings snippet, as the
install guide and the devstack plugin have it: a module that failed
would fail every page.
This Keystone has no Nova: the instances table's action is used on real
servers by test_cloud's test_horizon_instances_change_io_tier.

Screenshots are taken of each page; with IOTGUARD_SCREENSHOTS=<dir> (the
docs use doc/source) they are saved as <dir>/user/dashboard-*.png and
<dir>/admin/dashboard-*.png, otherwise in a temporary directory.
"""

import datetime
import functools

import fixtures
from testtools import content

from iotguard.api.handlers import disk
from iotguard.db import records
from iotguard.policy import admission
from iotguard.tests import base
from iotguard.tests.fixtures import horizon
from iotguard.tests.functional import test_osc_keystone as keystone

DOMAIN = 'local:compute1'
WEB = '5a0c6f3e-0d7a-4b53-9a7e-3f7f2d9b8c41'
OTHER = '9d1f3b2c-6e4a-4f8b-8c7d-2a1b0c9d8e7f'
REASON = ('guarantee: load 0.4000 above its fair share 0.3400, capped at '
          '0.3400 (floor 0.2000)')
#: web-1's vda's record, by minutes ago: capped for a quarter of an hour
#: (at 2900 IOPS, from 3200), its floor partly missed before the cap came.
RECORDED = range(49, 1, -1)
CAPPED = range(20, 35)
MISSED = range(38, 44)
BRONZE = range(40, 50)    # its tier then; gold since
CAP_REASON = ('capped at 2900 IOPS and 11.9 MB/s: its storage was contended '
              'and it was doing 3200 IOPS and 13.1 MB/s, more than its fair '
              'share')


class TestHorizon(horizon.Browsing, base.TestCase):

    def setUp(self):
        super().setUp()
        why = horizon.unavailable()
        if why:
            self.skipTest(why)
        self.useFixture(fixtures.Timeout(240, gentle=True))
        keystone.iotguard_in_catalog(self)
        # The seeded rates stay fresh (three decision intervals) for the
        # whole test: the page and the API's answer read the same load.
        self.api.conf.set_override('decision_interval', 600.0,
                                   group='controller')
        keystone.member(self, 'demo', 'demo')
        self.demo = self.admin.identity.find_project('demo').id
        self._seed()
        self.start_browsing(self.keystone.url, keystone.PASSWORD)
        self.addOnException(self._on_failure)

    def _seed(self):
        """A domain with room for gold but not platinum; a capped disk."""
        db = self.api.db
        db.domain_create(DOMAIN, 'local', iops_4k=10000.0, bytes_sec=400e6)
        for values in (
                {'name': 'bronze', 'description': 'batch jobs',
                 'min_iops': 200.0},
                {'name': 'gold', 'description': 'databases',
                 'min_iops': 2000.0, 'min_bytes_sec': 20e6,
                 'max_iops': 5000.0},
                {'name': 'platinum', 'description': 'the billing database',
                 'min_iops': 9500.0}):
            db.tier_create(dict({'description': '', 'min_iops': 0.0,
                                 'min_bytes_sec': 0.0, 'max_iops': 0.0,
                                 'max_bytes_sec': 0.0, 'weight': 1.0,
                                 'is_public': True}, **values), [])
        db.disk_upsert(WEB, 'vda', 'compute1', DOMAIN, self.demo)
        db.disk_upsert(WEB, 'vdb', 'compute1', DOMAIN, self.demo,
                       volume_id='3f1e9c2b-7a4d-4e8f-b6c5-1d2e3f4a5b6c')
        db.disk_upsert(OTHER, 'vda', 'compute1', DOMAIN, 'another-project')
        db.instance_tier_set(OTHER, 'bronze', functools.partial(
            admission.check, max_ratio=0.9))
        now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
        vda = next(d for d in db.disk_list(instance_uuid=WEB)
                   if d['dev'] == 'vda')
        db.disk_rates_bulk_update([{
            'id': vda['id'], 'sampled_at': now, 'read_iops': 2400.0,
            'write_iops': 800.0, 'read_bytes_sec': 9.8e6,
            'write_bytes_sec': 3.2e6, 'latency_ms': 4.2}])
        limits = {'total_iops_sec': 2900, 'total_bytes_sec': 11878400}
        decision, = db.decisions_create([{
            'domain': DOMAIN, 'policy': 'guarantee', 'instance_uuid': WEB,
            'dev': 'vda', 'project_id': self.demo, 'action': 'cap',
            'old_limits': {}, 'new_limits': limits, 'reason': REASON,
            'numbers': {'load': 0.4, 'share': 0.34, 'floor': 0.2}}])
        db.caps_set([{'instance_uuid': WEB, 'dev': 'vda', 'limits': limits,
                      'lease_expires_at': now + datetime.timedelta(hours=1),
                      'decision_id': decision}])
        minute = self.recorded_at = now.replace(second=0, microsecond=0)
        db.disk_minutes_add([records.Minute(
            vda['id'], minute - datetime.timedelta(minutes=ago), 60.0, 60.0,
            40.0 if ago in MISSED else 60.0,
            60.0 if ago in CAPPED else 0.0,
            2900.0 if ago in CAPPED else 3200.0,
            (2900.0 if ago in CAPPED else 3200.0) * 4096,
            CAP_REASON if ago in CAPPED else None,
            **self._limits(ago)) for ago in RECORDED])

    @staticmethod
    def _limits(ago):
        """The floor and cap in force ``ago`` minutes ago.

        Bronze's floor, then gold's; the cap while capped.
        """
        return dict(
            floor_iops=200.0 if ago in BRONZE else 2000.0,
            floor_bytes_sec=None if ago in BRONZE else 20e6,
            cap_iops=2900.0 if ago in CAPPED else None,
            cap_bytes_sec=11878400.0 if ago in CAPPED else None)

    def _on_failure(self, exc_info):
        self.addDetail('api-requests', content.text_content(
            '\n'.join(self.api.seen)))

    # -- helpers -------------------------------------------------------------

    def api_get(self, path):
        return self.admin.session.get(self.api.url + path).json()

    def tiers_of(self, uuid):
        return {d['tier'] and d['tier'].name
                for d in self.api.db.disk_list(instance_uuid=uuid)}

    # -- the tests -----------------------------------------------------------

    def test_member_sees_its_disks_and_changes_the_tier(self):
        from selenium.webdriver.support import ui

        self.login('demo', '/project/iotguard_disks/')
        self.wait_text('#disks', 'vda')
        rows = self.rows('disks')
        self.assertEqual({WEB + '-vda', WEB + '-vdb'}, set(rows))
        self.assertNotIn(OTHER, self.browser.page_source)
        vda, vdb = rows[WEB + '-vda'], rows[WEB + '-vdb']
        # The domain as the project sees it: an opaque id, not its name
        # (iotguard:disk:topology is the admin's).
        seen_as = disk.domain_id(self.demo, DOMAIN)
        self.assertNotIn(DOMAIN, self.browser.page_source)
        for text in (seen_as[:8] + '\u2026', '3200 IOPS, 13.0 MB/s, 4.2 ms',
                     'total 11.9 MB/s, total 2900 IOPS', REASON):
            self.assertIn(text, vda)
        # shortened, whole in its tooltip
        self.assertEqual(seen_as, self.css(
            '#disks tr[data-object-id="%s-vda"] td[title]' % WEB
        ).get_attribute('title'))
        self.assertIn('not sampled yet', vdb)
        tiers = self.rows('tiers')
        self.assertEqual({'bronze', 'gold', 'platinum'}, set(tiers))
        self.assertIn('2000 IOPS, 20.0 MB/s', tiers['gold'])
        self.assertIn('5000 IOPS', tiers['gold'])

        # Admitted: gold fits (the domain can keep both disks' floors).
        self._choose('gold')
        self.wait_text('.alert-success', 'now has I/O tier gold')
        self.assertEqual({'gold'}, self.tiers_of(WEB))
        self.wait_text('#disks', 'gold (api)')
        self.assertIn('2000 IOPS, 20.0 MB/s',
                      self.rows('disks')[WEB + '-vdb'])
        self.screenshot('user', 'disks')

        # Refused: platinum's floors do not fit; the form says why and
        # nothing changed.
        self._choose('platinum')
        self.wait_text('.modal .alert-danger',
                       'Tier platinum does not fit in domain %s now'
                       % seen_as)
        self.screenshot('user', 'tier-refused')
        self.assertEqual({'gold'}, self.tiers_of(WEB))
        self.assertIn('409 PUT /v1/instances/%s/tier' % WEB, self.api.seen)
        self.assertIn('200 PUT /v1/instances/%s/tier' % WEB, self.api.seen)

        # The form offers the project's tiers, gold now chosen.
        select = ui.Select(self.css('.modal #id_tier'))
        self.assertEqual(['', 'bronze', 'gold', 'platinum'],
                         [o.get_attribute('value') for o in select.options])

        self._disk_record()

        # The admin panel is not the member's.
        self.open('/admin/iotguard/')
        self.wait_text('body', 'You are not authorized to access this page')
        self.assertFalse(self.css('#domains', many=True))
        self.assertFalse([r for r in self.api.seen if '/v1/domains' in r])

    def _disk_record(self):
        """vda's page charts its last hour as the API records it."""
        self.open('/project/iotguard_disks/')
        self.wait_text('#disks', 'vda')
        self.css('#disks a[href$="/%s/disks/vda/"]' % WEB).click()
        self.wait_text('.detail', 'The last hour')
        record = self.api_get('/v1/instances/%s/disks/vda/record'
                              % WEB)['record']
        self.assertEqual(len(RECORDED), len(record['minutes']))
        summary = self.css('#record-summary').text
        self.assertIn('%.1f %%' % (100 * record['floor_kept_ratio']),
                      summary)
        self.assertIn('%d s' % (60 * len(CAPPED)), summary)

        def bars(chart, kind='bar'):
            return self.css('#chart-%s rect.%s' % (chart, kind), many=True)

        for chart in ('iops', 'bytes_sec', 'kept'):
            self.assertEqual(len(RECORDED), len(bars(chart)))
        self.assertEqual(len(CAPPED), len(bars('iops', 'capped')))
        self.assertEqual(len(MISSED), len(bars('kept', 'missed')))
        self.assertIn('capped 60 s: ' + CAP_REASON, bars(
            'iops', 'capped')[0].get_attribute('textContent'))

        # The floor and the cap in force each minute, as the API recorded
        # them: steps on the rates (bronze's floor, then gold's; the cap).
        def steps(chart, kind):
            return [s.get_attribute('textContent') for s in self.css(
                '#chart-%s path.step.%s' % (chart, kind), many=True)]

        def clock(ago):
            return (self.recorded_at - datetime.timedelta(
                minutes=ago)).strftime('%H:%M')

        self.assertEqual(
            ['%s to %s: floor 200 IOPS' % (clock(BRONZE[-1]),
                                           clock(BRONZE[0] - 1)),
             '%s to %s: floor 2000 IOPS' % (clock(BRONZE[0] - 1),
                                            clock(RECORDED[-1] - 1))],
            steps('iops', 'floor'))
        self.assertEqual(['%s to %s: cap in force 2900 IOPS' % (
            clock(CAPPED[-1]), clock(CAPPED[0] - 1))], steps('iops', 'cap'))
        self.assertEqual(['%s to %s: floor 20.0 MB/s' % (
            clock(BRONZE[0] - 1), clock(RECORDED[-1] - 1))],
            steps('bytes_sec', 'floor'))
        self.assertFalse(self.css('#chart-iops line.floor', many=True))
        spells = self.css('#cap-spells tbody tr', many=True)
        self.assertEqual(1, len(spells))
        self.assertIn(CAP_REASON, spells[0].text)
        self.assertIn('%d' % (60 * len(CAPPED)), spells[0].text)
        self.assertIn('200 GET /v1/instances/%s/disks/vda/record' % WEB,
                      self.api.seen)
        # the whole page, its three charts and the caps, for the guide
        self.browser.set_window_size(1500, 1750)
        self.screenshot('user', 'disk-record')
        self.browser.set_window_size(1500, 1000)

    def _choose(self, tier):
        from selenium.webdriver.support import ui

        self.open('/project/iotguard_disks/')
        self.wait_text('#disks', 'vda')
        self.css('#disks tr[data-object-id="%s-vda"] '
                 'a[id$="__action_change_tier"]' % WEB).click()
        self.wait(lambda b: self.css('.modal #id_tier', many=True))
        ui.Select(self.css('.modal #id_tier')).select_by_value(tier)
        self.css('.modal [type=submit]').click()

    def test_admin_sees_domains_caps_and_decisions(self):
        self.api.db.instance_tier_set(WEB, 'gold', functools.partial(
            admission.check, max_ratio=0.9))
        self.login('admin', '/admin/iotguard/')
        self.wait_text('#domains', DOMAIN)
        domain = self.api_get('/v1/domains/%s' % DOMAIN)['domain']
        row = self.rows('domains')[DOMAIN]
        self.assertIn('%.3f of %.3f allowed' % (
            domain['committed'], domain['max_commit_ratio']), row)
        self.assertIn('%.1f %%' % (100 * domain['utilisation']), row)
        self.assertIn('10000 IOPS, 400.0 MB/s (manual), additive', row)
        caps = self.rows('caps')
        self.assertEqual([WEB + '-vda'], list(caps))
        self.assertIn(REASON, caps[WEB + '-vda'])
        self.assertIn(self.demo, caps[WEB + '-vda'])
        self.assertIn('gold (api)', caps[WEB + '-vda'])
        decisions = self.api_get('/v1/decisions')['decisions']
        self.assertEqual([str(d['id']) for d in decisions],
                         list(self.rows('decisions')))
        self.assertIn(REASON, self.rows('decisions')[str(
            decisions[0]['id'])])
        self.screenshot('admin', 'domains')

        # Tier management: the API's own check answers in the form.
        self.css('#tiers__action_create_tier').click()
        self.wait(lambda b: self.css('.modal #id_name', many=True))
        for field, value in (('name', 'silver'), ('min_iops', '4000'),
                             ('max_iops', '1000')):
            self.css('.modal #id_' + field).clear()
            self.css('.modal #id_' + field).send_keys(value)
        self.css('.modal [type=submit]').click()
        self.wait_text('.modal .alert-danger',
                       'tier silver: min_iops is above max_iops')
        self.screenshot('admin', 'tier-refused')
        self.css('.modal #id_max_iops').clear()
        self.css('.modal #id_max_iops').send_keys('5000')
        self.css('.modal [type=submit]').click()
        self.wait_text('.alert-success', 'Tier silver created.')
        tier = self.api.db.tier_get('silver')
        self.assertEqual((4000.0, 5000.0), (tier.min_iops, tier.max_iops))
        self.assertIn('4000 IOPS', self.rows('tiers')['silver'])
