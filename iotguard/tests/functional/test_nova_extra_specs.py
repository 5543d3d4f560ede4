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

"""Nova validates ``iotguard:tier`` with iotguard's validator.

A real nova-api 34 (:class:`iotguard.tests.fixtures.openstack.NovaAPI`)
from the virtualenv tools/install-openstack-apis.sh made, where
tools/install-nova-validator.sh installed this checkout (no dependencies):
Nova loads ``iotguard.nova.extra_specs`` through its
``nova.api.extra_spec_validators`` entry point and checks the value of
``iotguard:tier`` from compute API 2.86 on, as it checks its own keys.
"""

import json
import unittest
import urllib.error
import urllib.request

from iotguard.tests import base
from iotguard.tests.fixtures import openstack as os_fixtures


class NovaValidatesTierTest(base.TestCase):
    """One nova-api for the class (it takes half a minute to start).

    Each test sets the extra specs of a flavor of its own and reads back
    only that flavor's answers: what another test set cannot reach them.
    """

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        why = os_fixtures.unavailable('nova')
        if why:
            raise unittest.SkipTest(why)
        cls.nova = cls.class_fixture(os_fixtures.NovaAPI())

    def setUp(self):
        super().setUp()
        self.flavor = os_fixtures.flavor(
            self.nova, 'iotg.validated.' + self._testMethodName)

    def set_specs(self, specs, microversion='2.86'):
        """(status, body) of setting the flavor's extra ``specs``."""
        req = urllib.request.Request(
            '%s/flavors/%s/os-extra_specs' % (self.nova.endpoint,
                                              self.flavor['id']),
            method='POST', data=json.dumps({'extra_specs': specs}).encode(),
            headers={'Content-Type': 'application/json',
                     'OpenStack-API-Version': 'compute ' + microversion,
                     'X-User-Id': 'admin',
                     'X-Project-Id': os_fixtures.PROJECT,
                     'X-Roles': 'admin,member,reader'})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def set_spec(self, value, microversion='2.86'):
        return self.set_specs({'iotguard:tier': value}, microversion)

    def test_valid_tier_names_accepted(self):
        for name in ('gold', 'silver-2', 'tier_3.fast', 'a' * 64):
            status, body = self.set_spec(name)
            self.assertEqual(200, status, body)
            self.assertEqual({'iotguard:tier': name}, body['extra_specs'])

    def test_invalid_values_refused_by_nova(self):
        for value in ('', 'gold tier', 'x' * 65, '..', 'gold/evil',
                      'tier\n'):
            status, body = self.set_spec(value)
            self.assertEqual(400, status, (value, body))
            # Nova's own wording, with our pattern.
            message = body['badRequest']['message']
            self.assertIn('Validation failed', message)
            self.assertIn('[A-Za-z0-9._-]{1,64}', message)
        # Before 2.86 Nova checks no extra spec, ours neither.
        status, _ = self.set_spec('gold tier', microversion='2.85')
        self.assertEqual(200, status)

    def test_unknown_iotguard_key_refused(self):
        # The namespace is now Nova-known: a typo is caught.
        status, body = self.set_specs({'iotguard:teir': 'gold'})
        self.assertEqual(400, status)
        self.assertIn('iotguard:teir', body['badRequest']['message'])
