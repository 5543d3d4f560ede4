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

"""iotguard-status upgrade check: each check's verdicts (SQLite, fakes)."""

import datetime
from unittest import mock

import fixtures

from keystoneauth1 import exceptions as ks_exc
import oslo_messaging
from oslo_upgradecheck import upgradecheck
from oslo_utils import timeutils

from iotguard.cmd import status
from iotguard.tests import base
from iotguard.tests.fixtures import database

Code = upgradecheck.Code


class ChecksTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags('database', connection='sqlite://')
        self.checks = status.Checks(self.conf)

    def transport(self, url):
        oslo_messaging.get_notification_transport(self.conf, url='fake:/')
        self.flags(transport_url=url)

    def migrated(self):
        """A migrated SQLite database the checks read; its Connection."""
        return self.useFixture(database.Database('sqlite', self.conf)).db

    def test_schema_behind_is_a_warning(self):
        self.flags('database', connection='sqlite:///%s/x.db'
                   % self.useFixture(fixtures.TempDir()).path)
        result = self.checks._check_schema()
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('iotguard-manage db sync', result.details)
        self.migrated()
        self.assertEqual(Code.SUCCESS, self.checks._check_schema().code)

    def test_schema_unreadable_is_a_failure(self):
        self.flags('database', connection='sqlite:////nonexistent/dir/x.db')
        self.assertEqual(Code.FAILURE, self.checks._check_schema().code)

    def test_default_tier(self):
        self.assertEqual(Code.SUCCESS, self.checks._check_default_tier().code)
        self.flags('tiers', default_tier='gold')
        result = self.checks._check_default_tier()   # no schema yet
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('no such table: tiers', result.details)
        db = self.migrated()
        result = self.checks._check_default_tier()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('gold, which is not a tier', result.details)
        db.tier_create(database.tier_values('gold'))
        self.assertEqual(Code.SUCCESS, self.checks._check_default_tier().code)

    def test_credentials_missing_is_a_warning(self):
        result = self.checks._check_credentials()
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn("Nova's servers", result.details)

    def test_credentials(self):
        self.flags('service_credentials', auth_type='password')
        session = mock.Mock()
        self.useFixture(fixtures.MockPatch(
            'iotguard.clients.get_session', return_value=session))
        self.assertEqual(Code.SUCCESS, self.checks._check_credentials().code)
        session.get_token.side_effect = ks_exc.Unauthorized('bad password')
        result = self.checks._check_credentials()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('bad password', result.details)

    def test_credentials_incomplete_is_a_failure(self):
        # the password plugin without auth_url: keystoneauth refuses it
        self.flags('service_credentials', auth_type='password')
        result = self.checks._check_credentials()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('not given: auth_url', result.details)

    def test_notifications_not_checked_off_rabbit(self):
        self.transport('fake:/')
        result = self.checks._check_notifications()
        self.assertEqual((Code.SUCCESS, 'Not checked on the fake transport.'),
                         (result.code, result.details))

    def test_notifications_transport_unusable_is_a_failure(self):
        self.transport('bogus://x/')
        result = self.checks._check_notifications()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('driver "bogus"', result.details)

    def test_notifications_broker_unreachable_is_a_warning(self):
        self.transport('rabbit://guest:guest@127.0.0.1:1/')
        result = self.checks._check_notifications()
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('Cannot look at the notifications broker',
                      result.details)

    def notifications(self, *existing):
        self.transport('rabbit://u:p@broker:5672/v')
        broker = mock.MagicMock()
        urls = []

        def connection(url, **kw):
            urls.append(url)
            return broker
        self.useFixture(fixtures.MockPatch(
            'kombu.connection.Connection', side_effect=connection))
        self.useFixture(fixtures.MockPatch(
            'iotguard.cmd.status._declared',
            side_effect=lambda broker, kind, name: name in existing))
        result = self.checks._check_notifications()
        self.assertEqual([['amqp://u:p@broker:5672/v']], urls)
        return result

    def test_notifications(self):
        result = self.notifications('nova', 'notifications.info')
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('exchange(s) openstack', result.details)
        self.assertIn('every 600 s', result.details)
        result = self.notifications('nova', 'openstack')
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('driver = messagingv2', result.details)
        self.assertEqual(Code.SUCCESS, self.notifications(
            'nova', 'openstack', 'versioned_notifications.info').code)

    def heartbeat(self, db, host, version, age_s=0.0, interval_s=5.0):
        db.agent_heartbeat(host, 'LibvirtDriver', version=version,
                           interval_s=interval_s,
                           now=timeutils.utcnow() - datetime.timedelta(
                               seconds=age_s))

    def test_agents_none_is_a_warning(self):
        self.assertEqual(Code.WARNING, self.checks._check_agents().code)
        db = self.migrated()
        result = self.checks._check_agents()
        self.assertEqual((Code.WARNING, 'No agent reported recently (0 known)'
                          ': nothing is measured or capped.'),
                         (result.code, result.details))
        self.heartbeat(db, 'cn1', '0.0.1', age_s=16)   # 3 intervals ago
        self.assertIn('(1 known)', self.checks._check_agents().details)

    def test_agents_versions(self):
        db = self.migrated()
        ours = status.version.version_info.semantic_version()
        self.heartbeat(db, 'cn1', ours.release_string())
        self.heartbeat(db, 'cn2', '0.0.0')
        self.heartbeat(db, 'old', '99.0.0', age_s=60)   # not alive: not judged
        self.assertEqual(Code.SUCCESS, self.checks._check_agents().code)
        self.useFixture(fixtures.MockPatch(
            'iotguard.cmd.status.OLDEST_AGENT', ours.release_string()))
        result = self.checks._check_agents()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('Agent(s) on cn2 are older than %s'
                      % ours.release_string(), result.details)
        self.heartbeat(db, 'cn2', 'garbage')
        self.heartbeat(db, 'cn3', '99.0.0')
        result = self.checks._check_agents()
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('unknown: cn2;', result.details)
        self.assertIn('cannot take): cn3.', result.details)
