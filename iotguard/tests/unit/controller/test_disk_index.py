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

from iotguard.controller import disk_index
from iotguard.tests import base
from iotguard.tests.unit.controller import fakes

T0 = 1_800_000_000.0
LOCAL = 'local:cn1'


class ListedTest(base.TestCase):
    """A host's listing, as the manager gives it (also test_manager)."""

    def setUp(self):
        super().setUp()
        self.db = fakes.real_db(self)
        fakes.add_domain(self.db, LOCAL)
        self.uuid = fakes.add_disk(self.db, LOCAL, 'cn1')['instance_uuid']
        fakes.add_disk(self.db, LOCAL, 'cn1', instance_uuid=self.uuid,
                       dev='vdb')
        self.index = disk_index.DiskIndex(self.db, clock=lambda: T0)
        self.index.refresh()

    def scans(self, keys, times=1):
        """How many of ``times`` batches of ``keys`` were looked at."""
        with mock.patch.object(self.index, 'delete',
                               wraps=self.index.delete) as delete:
            for _ in range(times):
                self.index.listed('cn1', keys, LOCAL)
        return delete.call_count

    def test_the_same_listing_is_looked_at_once(self):
        both = [(self.uuid, 'vda'), (self.uuid, 'vdb')]
        self.assertEqual(1, self.scans(both, 3))
        self.assertEqual(1, self.scans(both[:1]))

    def test_a_missing_disk_removed_elsewhere_stops_the_rescans(self):
        # vdb missing: every batch counts until it is listed again or gone
        self.assertEqual(1, self.scans([(self.uuid, 'vda')]))
        self.index.delete([(self.uuid, 'vdb')])    # membership did
        self.assertEqual(1, self.scans([(self.uuid, 'vda')], 3))
        self.assertEqual([(self.uuid, 'vda')], list(fakes.disks(self.db)))
