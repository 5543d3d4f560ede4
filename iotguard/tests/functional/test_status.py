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

"""iotguard-status upgrade check against the real broker and Keystone.

The notifications check on the test RabbitMQ (an exchange and a topic of
the test's own, removed after it), the service credentials check against a
throwaway Keystone (:class:`test_osc_keystone.Keystone`). The database
checks run on every backend in :mod:`iotguard.tests.functional.db.test_cmd`.
"""

import contextlib
import io
import json
import os

import fixtures
import kombu
from oslo_config import cfg
import oslo_messaging

from iotguard.cmd import status
from iotguard.tests import base
from iotguard.tests.fixtures import confs
from iotguard.tests.fixtures import rabbit
from iotguard.tests.functional import test_osc_keystone


def check(test, conf_text):
    """``iotguard-status upgrade check --json`` on ``conf_text``.

    ``{check name: (result code, details)}``.
    """
    path = os.path.join(test.useFixture(fixtures.TempDir()).path,
                        'iotguard.conf')
    with open(path, 'w') as conf_file:
        conf_file.write(conf_text)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status.main(['--config-file', path, 'upgrade', 'check', '--json'])
    return {c['check']: (c['result'], c['details'])
            for c in json.loads(out.getvalue())['checks']}


class NotificationsOnRabbitTest(base.TestCase):

    def setUp(self):
        super().setUp()
        run = rabbit.run_id(self)
        self.exchange, self.topic = 'nova-st-' + run, 'notifications-st-' + run
        self.conf_text = confs.section(
            'DEFAULT', transport_url=rabbit.URL) + confs.section(
            'membership', notification_exchanges=self.exchange,
            notification_topics=self.topic)
        broker = kombu.Connection(rabbit.URL.replace('rabbit://', 'amqp://',
                                                     1))
        self.addCleanup(broker.release)
        self.addCleanup(self.delete, broker)

    def delete(self, broker):
        channel = broker.channel()
        channel.queue_delete(self.topic + '.info')
        channel.exchange_delete(self.exchange)
        channel.close()

    def notifications(self):
        return check(self, self.conf_text)['Nova and Cinder notifications']

    def test_notifications(self):
        code, details = self.notifications()
        self.assertEqual(status.Code.WARNING, code)
        self.assertIn('exchange(s) %s of' % self.exchange, details)
        # Nova's RPC servers declare its exchange before any notification
        with kombu.Connection(rabbit.URL.replace('rabbit://', 'amqp://',
                                                 1)) as broker:
            kombu.Exchange(self.exchange, type='topic', durable=False)(
                broker.channel()).declare()
        code, details = self.notifications()
        self.assertEqual(status.Code.WARNING, code)
        self.assertIn('no queue %s.info' % self.topic, details)
        # its first notification, as Nova sends it (messagingv2)
        conf = cfg.ConfigOpts()
        conf([])
        oslo_messaging.get_notification_transport(
            conf, url=rabbit.URL).cleanup()
        conf.set_override('control_exchange', self.exchange)
        transport = oslo_messaging.get_notification_transport(
            conf, url=rabbit.URL)
        self.addCleanup(transport.cleanup)
        oslo_messaging.Notifier(
            transport, publisher_id='compute.cn1', driver='messagingv2',
            topics=[self.topic]).info({}, 'compute.instance.update', {})
        self.assertEqual((status.Code.SUCCESS, None), self.notifications())


class CredentialsOnKeystoneTest(base.TestCase):

    def setUp(self):
        super().setUp()
        if not os.path.exists(os.path.join(test_osc_keystone.VENV, 'bin',
                                           'keystone-manage')):
            self.skipTest('no Keystone in %s (tools/install-keystone.sh)'
                          % test_osc_keystone.VENV)
        self.useFixture(fixtures.Timeout(300, gentle=True))
        self.keystone = self.useFixture(test_osc_keystone.Keystone())

    def credentials(self, password):
        auth = dict(self.keystone.auth(), auth_type='password',
                    password=password, interface='public')
        return check(self, confs.section('DEFAULT', transport_url='fake:/')
                     + confs.section('service_credentials', **auth)
                     )['Service credentials']

    def test_credentials(self):
        self.assertEqual((status.Code.SUCCESS, None),
                         self.credentials(test_osc_keystone.PASSWORD))
        code, details = self.credentials('wrong')
        self.assertEqual(status.Code.FAILURE, code)
        self.assertIn('Cannot get a token with [service_credentials]: The '
                      'request you have made requires authentication',
                      details)
