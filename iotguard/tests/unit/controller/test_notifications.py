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

from unittest import mock

import oslo_messaging
from oslo_messaging import conffixture
from oslo_messaging.notify import _impl_test

from iotguard.controller import notifications
from iotguard.tests import base


class NotifierTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(conffixture.ConfFixture(self.conf))
        self.flags(host='ctl1')
        self.flags(driver=['test'], group='oslo_messaging_notifications')
        self.transport = oslo_messaging.get_notification_transport(
            self.conf, url='fake:/')
        self.addCleanup(self.transport.cleanup)
        _impl_test.reset()
        self.addCleanup(_impl_test.reset)
        self.notifier = notifications.Notifier(self.conf, self.transport)

    def test_event_types_priorities_and_publisher(self):
        self.notifier.cap_apply({'instance_uuid': 'u', 'limits': {'a': 1}})
        self.notifier.cap_release({'instance_uuid': 'u'})
        self.notifier.guarantee_violation({'instance_uuid': 'v'})
        self.notifier.domain_overcommitted({'domain': 'd'})
        self.notifier.domain_overcommit_cleared({'domain': 'd'})
        self.notifier.placement_usage_differs({'domain': 'd'})
        self.notifier.placement_usage_matches({'domain': 'd'})
        sent = _impl_test.NOTIFICATIONS
        self.assertEqual(
            [('iotguard.cap.apply', 'INFO'), ('iotguard.cap.release', 'INFO'),
             ('iotguard.guarantee.violation', 'WARN'),
             ('iotguard.domain.overcommitted', 'WARN'),
             ('iotguard.domain.overcommit_cleared', 'INFO'),
             ('iotguard.placement.usage_differs', 'WARN'),
             ('iotguard.placement.usage_matches', 'INFO')],
            [(n[1]['event_type'], n[2]) for n in sent])
        self.assertEqual({'iotguard-controller.ctl1'},
                         {n[1]['publisher_id'] for n in sent})
        self.assertEqual({'instance_uuid': 'u', 'limits': {'a': 1}},
                         sent[0][1]['payload'])

    def test_send_failure_is_logged_not_raised(self):
        with mock.patch.object(self.notifier._notifier, 'info',
                               side_effect=RuntimeError('bus down')):
            self.notifier.cap_apply({'x': 1})
        self.notifier.cap_release({'y': 2})
        self.assertEqual(['iotguard.cap.release'],
                         [n[1]['event_type']
                          for n in _impl_test.NOTIFICATIONS])
