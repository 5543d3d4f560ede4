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

"""The agent's state file on the real filesystem."""

import os

import fixtures
import testtools

from iotguard.agent import manager
from iotguard.wire import caps

KEY = ('6f1e2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b', 'vda')


class StateFileTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.path = os.path.join(self.dir, 'sub', 'caps.json')
        self.log = self.useFixture(fixtures.FakeLogger())

    def test_round_trip_creates_directory(self):
        store = manager.StateFile(self.path)
        held = {KEY: caps.Cap(*KEY, caps.full({'total_iops_sec': 5}), 123.5,
                              'd-1')}
        store.save(held)
        self.assertEqual(held, manager.StateFile(self.path).load())
        self.assertEqual([], [n for n in os.listdir(os.path.dirname(
            self.path)) if n != 'caps.json'])   # no temp file left

    def test_a_file_of_the_earlier_form_is_read(self):
        # the key alone named the disk; decision_id could be missing
        os.makedirs(os.path.dirname(self.path))
        with open(self.path, 'w') as f:
            f.write('{"%s/%s": {"limits": {"total_iops_sec": 5}, '
                    '"lease_expires_at": 123.5}}' % KEY)
        self.assertEqual(
            {KEY: caps.Cap(*KEY, caps.full({'total_iops_sec': 5}), 123.5,
                           None)},
            manager.StateFile(self.path).load())

    def test_a_malformed_cap_makes_the_file_unreadable(self):
        os.makedirs(os.path.dirname(self.path))
        with open(self.path, 'w') as f:
            f.write('{"%s/%s": {"limits": {"total_iops_sec": -5}, '
                    '"lease_expires_at": 123.5}}' % KEY)
        self.assertEqual({}, manager.StateFile(self.path).load())
        self.assertIn('Ignoring unreadable', self.log.output)

    def test_missing_file_is_empty(self):
        self.assertEqual({}, manager.StateFile(self.path).load())

    def test_corrupt_file_is_ignored(self):
        os.makedirs(os.path.dirname(self.path))
        with open(self.path, 'w') as f:
            f.write('{"%s/%s": {"limits": 5' % KEY)
        self.assertEqual({}, manager.StateFile(self.path).load())
        self.assertIn('Ignoring unreadable', self.log.output)

    def test_unwritable_is_logged_not_raised(self):
        blocker = os.path.join(self.dir, 'file')
        open(blocker, 'w').close()
        store = manager.StateFile(os.path.join(blocker, 'caps.json'))
        store.save({KEY: caps.Cap(*KEY, caps.full({}), 1.0, None)})
        self.assertIn('Cannot write', self.log.output)

    def test_disabled(self):
        store = manager.StateFile('')
        store.save({KEY: caps.Cap(*KEY, caps.full({}), 1.0, None)})
        self.assertEqual({}, store.load())
