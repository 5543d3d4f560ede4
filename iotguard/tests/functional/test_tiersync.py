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

import fixtures

from iotguard.tests import base
from iotguard.tests.fixtures import openstack as os_fixtures
from iotguard import tiersync

GOLD = {'name': 'gold', 'min_iops': 2000.0, 'min_bytes_sec': 0.0,
        'max_iops': 5000.0, 'max_bytes_sec': 200e6}
BRONZE = {'name': 'bronze', 'min_iops': 100.0, 'min_bytes_sec': 0.0,
          'max_iops': 0.0, 'max_bytes_sec': 0.0}


class TierSyncTest(base.TestCase):

    def setUp(self):
        super().setUp()
        for service in ('nova', 'cinder'):
            why = os_fixtures.unavailable(service)
            if why:
                self.skipTest(why)
        self.useFixture(fixtures.Timeout(600, gentle=True))
        self.nova = self.useFixture(os_fixtures.NovaAPI())
        self.cinder = self.useFixture(os_fixtures.CinderAPI())
        self.conn = os_fixtures.connect(self.nova, self.cinder)
        self.flavor = os_fixtures.flavor(self.nova, 'm1.db')

    def sync(self, tiers, dry_run=False):
        return tiersync.sync(self.conn, tiers, {'m1.db': 'gold'},
                             'iotguard-', dry_run=dry_run)

    def read_back(self):
        """What Nova and Cinder hold now, read through their APIs."""
        storage = self.conn.block_storage
        flavor = self.conn.compute.fetch_flavor_extra_specs(
            self.flavor['id']).extra_specs
        types = {t.name: t for t in storage.types()}
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
        lower = dict(GOLD, max_iops=0.0, min_iops=1500.0)
        self.assertEqual(3, len(self.sync([lower])))
        flavor, _, qos, _ = self.read_back()
        self.assertNotIn('quota:disk_total_iops_sec', flavor)
        self.assertEqual('200000000', flavor['quota:disk_total_bytes_sec'])
        self.assertEqual({'total_bytes_sec': '200000000', 'minIOPS': '1500'},
                         qos['iotguard-gold'].specs)
        self.assertEqual([], self.sync([lower]))
