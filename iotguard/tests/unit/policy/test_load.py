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

from iotguard import policy
from iotguard.tests import base


class LoadTest(base.TestCase):

    def test_entry_points_read_once_per_name(self):
        policy._factory.cache_clear()
        self.addCleanup(policy._factory.cache_clear)
        with mock.patch.object(policy.driver, 'DriverManager',
                               wraps=policy.driver.DriverManager) as eps:
            first = policy.load('static')
            second = policy.load('static')
            self.assertEqual(1, eps.call_count)
        self.assertIsNot(first, second)   # one instance per caller
        self.assertRaisesRegex(ValueError, "unknown policy 'nope'",
                               policy.load, 'nope')
