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

from iotguard.controller import partition
from iotguard.tests import base


class PartitionTest(base.TestCase):

    def test_with_timeout(self):
        self.assertEqual('redis://127.0.0.1:6379?timeout=4',
                         partition.with_timeout('redis://127.0.0.1:6379', 4))
        self.assertEqual('redis://h:1/?db=2&timeout=3',
                         partition.with_timeout('redis://h:1/?db=2', 3.7))
        self.assertEqual('zookeeper://h:2181?timeout=30',
                         partition.with_timeout(
                             'zookeeper://h:2181?timeout=30', 4))

    def test_no_backend_owns_everything(self):
        p = partition.Partition(self.conf)
        self.assertFalse(p.coordinated)
        p.start()
        p.refresh()
        self.assertEqual(['a', 'b'], p.my_domains(['a', 'b']))
        p.stop()

    def test_coordinated_but_not_started_owns_nothing(self):
        self.flags(backend_url='redis://127.0.0.1:1', group='coordination')
        p = partition.Partition(self.conf, member_id='m1')
        self.assertTrue(p.coordinated)
        self.assertEqual(b'm1', p.member_id)
        self.assertFalse(p.owns('a'))

    def test_default_member_id_is_unique_per_process_start(self):
        self.flags(host='cn1')
        a, b = partition.Partition(self.conf), partition.Partition(self.conf)
        self.assertTrue(a.member_id.startswith(b'cn1:'))
        self.assertNotEqual(a.member_id, b.member_id)
