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

"""iotguard-manage tier sync against real nova-api and cinder-api.

Everything is read back from those APIs; a second sync changes nothing.
"""

import contextlib
import dataclasses
import io
import json
import os
import unittest

import fixtures
import webob

from iotguard.api import app
from iotguard.cmd import manage
from iotguard.db import tiers
from iotguard.manage import tiersync
from iotguard.tests import base
from iotguard.tests.fixtures import database
from iotguard.tests.fixtures import openstack as os_fixtures
from iotguard.tests.fixtures import ports
from iotguard.wire import caps

GOLD = tiers.Tier('gold', min_iops=2000.0, max_iops=5000.0,
                  max_bytes_sec=200e6)
BRONZE = tiers.Tier('bronze', min_iops=100.0)
P1, P2, P3 = ('1' * 32, '2' * 32, '3' * 32)
FLOOR = 'resources:CUSTOM_IOTGUARD_FLOOR'
SILVER = tiers.Tier('silver', min_iops=500.0, max_iops=3000.0,
                    is_public=False, projects=(P1, P2))


def nova_and_cinder(conn):
    """:class:`os_fixtures.Kept`'s kinds of what a test makes in them."""
    compute, storage = conn.compute, conn.block_storage
    return [
        # without a host (no cinder-volume here): deleted at once
        ('volume', lambda: storage.volumes(all_projects=True),
         storage.delete_volume),
        ('volume type', lambda: storage.types(is_public=tiersync.ALL),
         storage.delete_type),
        ('QoS spec', storage.qos_specs,
         lambda qos: storage.delete_qos_spec(qos, force=True)),
        ('flavor', lambda: compute.flavors(is_public=tiersync.ALL),
         compute.delete_flavor)]


class NovaAndCinder(fixtures.Fixture):
    """The real nova-api and cinder-api, ``.nova`` and ``.cinder``.

    With ``.kept``, what they held once started.
    """

    def _setUp(self):
        self.nova = self.useFixture(os_fixtures.NovaAPI())
        self.cinder = self.useFixture(os_fixtures.CinderAPI())
        self.kept = os_fixtures.Kept(nova_and_cinder(
            os_fixtures.connect(self.nova, self.cinder)))


#: One of each for all the tests here: each takes half a minute to start.
SERVICES = NovaAndCinder()


def setUpModule():
    for service in ('nova', 'cinder'):
        why = os_fixtures.unavailable(service)
        if why:
            raise unittest.SkipTest(why)
    SERVICES.setUp()


def tearDownModule():
    SERVICES.cleanUp()


class _WithNovaAndCinder(base.TestCase):
    """A test on the module's nova-api and cinder-api (:data:`SERVICES`).

    Every test starts from what they held once started, with a flavor
    ``m1.db`` (``self.flavor``) and an admin connection to them
    (``self.conn``): what it made in them is deleted after it, and checked
    gone.
    """

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(300, gentle=True))
        self.nova, self.cinder = SERVICES.nova, SERVICES.cinder
        self.addCleanup(SERVICES.kept.take_back)
        self.conn = os_fixtures.connect(self.nova, self.cinder)
        self.flavor = os_fixtures.flavor(self.nova, 'm1.db')


class TierSyncTest(_WithNovaAndCinder):

    def report(self, tiers, dry_run=False, flavors=None):
        return tiersync.sync(self.conn, tiers, flavors or {'m1.db': 'gold'},
                             'iotguard-', dry_run=dry_run)

    def sync(self, tiers, dry_run=False, flavors=None):
        return self.report(tiers, dry_run, flavors).changes

    def read_back(self):
        """What Nova and Cinder hold now, read through their APIs."""
        storage = self.conn.block_storage
        flavor = self.conn.compute.fetch_flavor_extra_specs(
            self.flavor['id']).extra_specs
        types = {t.name: t for t in storage.types(is_public='None')}
        qos = {q.name: q for q in storage.qos_specs()}
        associations = {name: sorted(a.name for a in
                                     storage.qos_spec_associations(q))
                        for name, q in qos.items()}
        return flavor, types, qos, associations

    def test_sync_creates_reads_back_and_is_idempotent(self):
        planned = self.sync([GOLD, BRONZE], dry_run=True)
        flavor, types, qos, _ = self.read_back()
        self.assertNotIn('iotguard:tier', flavor)
        self.assertEqual({}, {n: t for n, t in types.items()
                              if n.startswith('iotguard-')})
        self.assertEqual({}, qos)

        self.assertEqual(planned, self.sync([GOLD, BRONZE]))
        flavor, types, qos, associations = self.read_back()
        self.assertEqual({'iotguard:tier': 'gold',
                          'quota:disk_total_iops_sec': '5000',
                          'quota:disk_total_bytes_sec': '200000000'},
                         flavor)
        self.assertEqual({'iotguard:tier': 'gold'},
                         types['iotguard-gold'].extra_specs)
        self.assertEqual({'iotguard:tier': 'bronze'},
                         types['iotguard-bronze'].extra_specs)
        self.assertEqual('both', qos['iotguard-gold'].consumer)
        self.assertEqual({'total_iops_sec': '5000',
                          'total_bytes_sec': '200000000',
                          'minIOPS': '2000', 'maxIOPS': '5000'},
                         qos['iotguard-gold'].specs)
        self.assertEqual({'minIOPS': '100'}, qos['iotguard-bronze'].specs)
        self.assertEqual({'iotguard-gold': ['iotguard-gold'],
                          'iotguard-bronze': ['iotguard-bronze']},
                         associations)

        self.assertEqual([], self.sync([GOLD, BRONZE]))

    def test_changed_tier_is_followed(self):
        self.sync([GOLD])
        lower = dataclasses.replace(GOLD, max_iops=0.0, min_iops=1500.0)
        self.assertEqual(3, len(self.sync([lower])))
        flavor, _, qos, _ = self.read_back()
        self.assertNotIn('quota:disk_total_iops_sec', flavor)
        self.assertEqual('200000000', flavor['quota:disk_total_bytes_sec'])
        self.assertEqual({'total_bytes_sec': '200000000', 'minIOPS': '1500'},
                         qos['iotguard-gold'].specs)
        self.assertEqual([], self.sync([lower]))

    def test_tier_per_gib(self):
        """Cinder keeps its capacity-based keys, Nova the flavor's price."""
        gp = tiers.Tier('gold', min_iops=100.0, min_iops_per_gb=3.0,
                        max_iops=16000.0, max_iops_per_gb=10.0,
                        max_bytes_sec_per_gb=1048576.0)
        self.sync([gp])
        flavor, _, qos, _ = self.read_back()
        self.assertEqual({'total_iops_sec_per_gb': '10',
                          'total_iops_sec_per_gb_min': '100',
                          'total_iops_sec_max': '16000',
                          'total_bytes_sec_per_gb': '1048576',
                          'minIOPS': '100', 'maxIOPS': '16000'},
                         qos['iotguard-gold'].specs)
        # The flavor's root disk is 1 GiB: the ceilings there.
        self.assertEqual({'iotguard:tier': 'gold',
                          'quota:disk_total_iops_sec': '100',
                          'quota:disk_total_bytes_sec': '1048576'}, flavor)
        self.assertEqual([], self.sync([gp]))
        # Back to fixed ceilings: the per-GiB keys go.
        self.sync([GOLD])
        _, _, qos, _ = self.read_back()
        self.assertEqual({'total_iops_sec': '5000',
                          'total_bytes_sec': '200000000',
                          'minIOPS': '2000', 'maxIOPS': '5000'},
                         qos['iotguard-gold'].specs)

    def test_read_write_flavor_stays_valid(self):
        rw = os_fixtures.flavor(self.nova, 'm1.rw', {
            'quota:disk_read_iops_sec': '800',
            'quota:disk_write_iops_sec': '200'})
        flavors = {'m1.db': 'gold', 'm1.rw': 'gold'}
        self.sync([GOLD], flavors=flavors)
        specs = self.conn.compute.fetch_flavor_extra_specs(
            rw['id']).extra_specs
        self.assertEqual({'iotguard:tier': 'gold',
                          'quota:disk_read_iops_sec': '2500',
                          'quota:disk_write_iops_sec': '2500',
                          'quota:disk_total_bytes_sec': '200000000'}, specs)
        for flavor_id in (rw['id'], self.flavor['id']):
            caps.check_limits(tiersync.flavor_limits(
                self.conn.compute.fetch_flavor_extra_specs(
                    flavor_id).extra_specs))
        self.assertEqual([], self.sync([GOLD], flavors=flavors))

    def access(self, name):
        storage = self.conn.block_storage
        return sorted(a['project_id'] for a in storage.get_type_access(
            storage.find_type(name, ignore_missing=False)))

    def test_private_tier_private_type_with_access(self):
        self.sync([GOLD, SILVER])
        _, types, _, associations = self.read_back()
        self.assertFalse(types['iotguard-silver'].is_public)
        self.assertTrue(types['iotguard-gold'].is_public)
        self.assertEqual([P1, P2], self.access('iotguard-silver'))
        self.assertEqual(['iotguard-silver'], associations['iotguard-silver'])
        self.assertEqual([], self.sync([GOLD, SILVER]))

        moved = dataclasses.replace(SILVER, projects=(P2, P3))
        self.assertEqual(2, len(self.sync([GOLD, moved])))
        self.assertEqual([P2, P3], self.access('iotguard-silver'))

        public = dataclasses.replace(moved, is_public=True, projects=())
        self.sync([GOLD, public])
        _, types, _, _ = self.read_back()
        self.assertTrue(types['iotguard-silver'].is_public)
        back = dataclasses.replace(SILVER, projects=(P1,))
        self.sync([GOLD, back])
        _, types, _, _ = self.read_back()
        self.assertFalse(types['iotguard-silver'].is_public)
        self.assertEqual([P1], self.access('iotguard-silver'))
        self.assertEqual([], self.sync([GOLD, back]))

    def test_deleted_tier_cleaned_in_use_reported(self):
        self.sync([GOLD, BRONZE, SILVER])
        storage = self.conn.block_storage
        storage.create_volume(size=1, name='kept',
                              volume_type='iotguard-silver')
        os_fixtures.flavor(self.nova, 'm1.old', {'iotguard:tier': 'bronze'})

        planned = self.report([GOLD], dry_run=True)
        self.assertEqual(
            ['volume type iotguard-bronze: delete (tier bronze no longer '
             'exists)',
             'QoS spec iotguard-bronze: delete (tier bronze no longer '
             'exists)'], planned.changes)
        report = self.report([GOLD])
        self.assertEqual(planned, report)
        self.assertIn('volume type iotguard-silver: tier silver no longer '
                      'exists, but 1 volume(s) use the type; kept (retype '
                      'them, then sync again)', report.notices)
        self.assertIn('flavor m1.old: iotguard:tier=bronze names no tier '
                      '(deleted?); flavor left unchanged, remove the key or '
                      'name another tier', report.notices)

        _, types, qos, associations = self.read_back()
        self.assertNotIn('iotguard-bronze', types)
        self.assertNotIn('iotguard-bronze', qos)
        self.assertIn('iotguard-silver', types)
        self.assertEqual(['iotguard-silver'], associations['iotguard-silver'])
        self.assertEqual([], self.sync([GOLD]))


class TierSyncCommandTest(_WithNovaAndCinder):
    """iotguard-manage tier sync where the catalog lacks a service."""

    def setUp(self):
        super().setUp()
        db = self.useFixture(database.Database('sqlite', self.conf)).db
        db.tier_create(database.tier_values('gold', max_iops=5000.0,
                                            min_iops=1000.0))
        path = self.useFixture(fixtures.TempDir()).path
        self.conf_file = os.path.join(path, 'iotguard.conf')
        with open(self.conf_file, 'w') as conf_file:
            conf_file.write('[database]\nconnection = %s\n'
                            '[tiers]\nflavor_tiers = m1.db:gold\n'
                            '[placement]\nenabled = true\n'
                            % self.conf.database.connection)

    def manage(self, conn, *argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = manage.main(['--config-file', self.conf_file, 'tier',
                                'sync'] + list(argv),
                               connect=lambda name: conn)
        return code, out.getvalue(), err.getvalue()

    def test_without_cinder_in_the_catalog(self):
        conn = os_fixtures.connect_catalog(nova=self.nova)
        code, out, err = self.manage(conn, '--dry-run')
        self.assertEqual((0, ''), (code, err))
        self.assertIn('Skipped: Cinder (block-storage) is not in the service '
                      'catalog: volume types and QoS specs not synced.\n',
                      out)
        self.assertNotIn('block-storage', out.replace(
            'Skipped: Cinder (block-storage)', ''))
        # The floor as Placement prices it: 1000 + 1000 * 4096 / 65536
        self.assertIn('Would change: flavor m1.db: set iotguard:tier=gold, '
                      'quota:disk_total_iops_sec=5000, '
                      'resources:CUSTOM_IOTGUARD_FLOOR=1063\n', out)
        code, out, err = self.manage(conn)
        self.assertEqual((0, ''), (code, err))
        self.assertEqual('1 change(s) made.', out.splitlines()[-1])
        # Nova took the key (it validates extra specs it knows).
        specs = conn.compute.fetch_flavor_extra_specs(
            self.flavor['id']).extra_specs
        self.assertEqual(('gold', '1063'), (
            specs['iotguard:tier'], specs['resources:CUSTOM_IOTGUARD_FLOOR']))

    def test_unreachable_cinder_is_an_error_without_traceback(self):
        closed = type('Gone', (), {'endpoint': 'http://127.0.0.1:%d/v3/'
                                   % ports.free_port()})()
        conn = os_fixtures.connect_catalog(nova=self.nova, cinder=closed)
        code, out, err = self.manage(conn)
        self.assertEqual(1, code)
        self.assertTrue(err.startswith('Error: tier sync failed: '), err)
        self.assertNotIn('Traceback', err + out)


class ApiTierSyncTest(_WithNovaAndCinder):
    """A tier changed through iotguard's API reaches Nova and Cinder.

    Real parts: nova-api and cinder-api (the tests' own, on SQLite),
    iotguard's API application on SQLite. The connection is the tests'
    admin one (the services run without Keystone), in place of the one
    ``[service_credentials]`` would make.
    """

    def setUp(self):
        super().setUp()
        self.flags(group='api', auth_strategy='noauth')
        self.flags(group='tiers', flavor_tiers={'m1.db': 'gold'})
        self.flags(group='service_credentials', auth_type='password')
        self.flags(group='placement', enabled=True)
        self.db = self.useFixture(database.Database('sqlite', self.conf)).db
        self.app = app.deploy(self.conf, db=self.db)
        self.reach = self.conn
        self.useFixture(fixtures.MockPatch(
            'iotguard.clients.get_connection',
            side_effect=lambda conf: self.reach))

    def call(self, method, path, body=None, api=None):
        req = webob.Request.blank(path, method=method)
        req.headers.update({'X-User-Id': 'admin', 'X-Project-Id': 'admin',
                            'X-Roles': 'admin,member,reader'})
        if body is not None:
            req.body = json.dumps(body).encode()
            req.content_type = 'application/json'
        return req.get_response(api or self.app)

    def specs(self):
        return self.conn.compute.fetch_flavor_extra_specs(
            self.flavor['id']).extra_specs

    def qos(self, name):
        storage = self.conn.block_storage
        spec = storage.find_qos_spec(name, ignore_missing=True)
        return spec and storage.get_qos_spec(spec).specs

    def test_create_change_delete_reach_nova_and_cinder(self):
        # Without credentials, not attempted (one Nova and Cinder for the
        # whole story: they take half a minute to start)
        self.flags(group='service_credentials', auth_type=None)
        response = self.call('POST', '/v1/tiers', {'name': 'bronze'})
        self.assertEqual('disabled', response.json['cloud_sync'])
        self.assertIsNone(self.conn.block_storage.find_type(
            'iotguard-bronze', ignore_missing=True))
        self.flags(group='service_credentials', auth_type='password')

        response = self.call('POST', '/v1/tiers', {
            'name': 'gold', 'min_iops': 1000, 'max_iops': 5000})
        self.assertEqual(201, response.status_code, response.text)
        self.assertEqual('synced', response.json['cloud_sync'])
        self.assertEqual(('gold', '5000'), (
            self.specs()['iotguard:tier'],
            self.specs()['quota:disk_total_iops_sec']))
        self.assertEqual('5000', self.qos('iotguard-gold')['total_iops_sec'])

        self.assertEqual('1063', self.specs()[FLOOR])   # 1000 + 1000 / 16

        response = self.call('PATCH', '/v1/tiers/gold', {'max_iops': 6000,
                                                         'min_iops': 2000})
        self.assertEqual('synced', response.json['cloud_sync'])
        self.assertEqual('6000', self.specs()['quota:disk_total_iops_sec'])
        self.assertEqual('2125', self.specs()[FLOOR])
        # Placement disabled: the next sync takes the request away.
        self.flags(group='placement', enabled=False)
        response = self.call('PATCH', '/v1/tiers/gold', {'weight': 2.0})
        self.assertEqual('synced', response.json['cloud_sync'])
        self.assertNotIn(FLOOR, self.specs())
        self.assertEqual('6000', self.qos('iotguard-gold')['total_iops_sec'])

        # Cinder unreachable (an API process that reaches a closed port):
        # the tier is created all the same, the answer says the sync
        # failed, the next change catches up.
        closed = type('Gone', (), {'endpoint': 'http://127.0.0.1:%d/v3/'
                                   % ports.free_port()})()
        self.reach = os_fixtures.connect(self.nova, closed)
        response = self.call('POST', '/v1/tiers', {'name': 'silver'},
                             api=app.deploy(self.conf, db=self.db))
        self.assertEqual(201, response.status_code, response.text)
        self.assertEqual('failed', response.json['cloud_sync'])
        self.assertEqual(200, self.call('GET', '/v1/tiers/silver').status_code)
        self.assertIsNone(self.conn.block_storage.find_type(
            'iotguard-silver', ignore_missing=True))
        response = self.call('PATCH', '/v1/tiers/silver', {'weight': 2.0})
        self.assertEqual('synced', response.json['cloud_sync'])
        self.assertIsNotNone(self.conn.block_storage.find_type(
            'iotguard-silver', ignore_missing=True))

        self.assertEqual(204, self.call('DELETE',
                                        '/v1/tiers/silver').status_code)
        self.assertIsNone(self.conn.block_storage.find_type(
            'iotguard-silver', ignore_missing=True))
        self.assertIsNone(self.qos('iotguard-silver'))
