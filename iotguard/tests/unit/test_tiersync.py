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

"""tier sync over an in-memory fake of the openstacksdk calls it makes."""

import types
import uuid

from iotguard import exception
from iotguard.tests import base
from iotguard import tiersync

GOLD = {'name': 'gold', 'min_iops': 2000.0, 'min_bytes_sec': 0.0,
        'max_iops': 5000.0, 'max_bytes_sec': 200e6}
BRONZE = {'name': 'bronze', 'min_iops': 100.0, 'min_bytes_sec': 0.0,
          'max_iops': 0.0, 'max_bytes_sec': 0.0}


def _obj(**kw):
    return types.SimpleNamespace(id=str(uuid.uuid4()), **kw)


class FakeCompute:
    def __init__(self, cloud):
        self.cloud = cloud

    def find_flavor(self, name, ignore_missing=True):
        return self.cloud.flavors.get(name)

    def fetch_flavor_extra_specs(self, flavor):
        return types.SimpleNamespace(extra_specs=dict(flavor.extra_specs))

    def create_flavor_extra_specs(self, flavor, specs):
        self.cloud.writes += 1
        flavor.extra_specs.update(specs)

    def delete_flavor_extra_specs_property(self, flavor, key):
        self.cloud.writes += 1
        del flavor.extra_specs[key]


class FakeStorage:
    def __init__(self, cloud):
        self.cloud = cloud

    def _find(self, table, name, ignore_missing):
        found = table.get(name)
        if found is None and not ignore_missing:
            raise LookupError(name)
        return found

    def find_type(self, name, ignore_missing=True):
        return self._find(self.cloud.types, name, ignore_missing)

    def find_qos_spec(self, name, ignore_missing=True):
        return self._find(self.cloud.qos, name, ignore_missing)

    def qos_specs(self):
        return list(self.cloud.qos.values())

    def create_type(self, name, description, extra_specs):
        self.cloud.writes += 1
        self.cloud.types[name] = _obj(name=name, extra_specs=extra_specs)

    def update_type_extra_specs(self, vtype, **specs):
        self.cloud.writes += 1
        vtype.extra_specs.update(specs)

    def create_qos_spec(self, name, consumer, **specs):
        self.cloud.writes += 1
        self.cloud.qos[name] = _obj(name=name, consumer=consumer,
                                    specs=specs)

    def update_qos_spec(self, qos, consumer=None, **specs):
        self.cloud.writes += 1
        qos.consumer = consumer or qos.consumer
        qos.specs.update(specs)

    def delete_qos_spec_metadata(self, qos, keys):
        self.cloud.writes += 1
        for key in keys:
            del qos.specs[key]

    def qos_spec_associations(self, qos):
        return [types.SimpleNamespace(id=t)
                for t in self.cloud.assoc.get(qos.id, ())]

    def associate_qos_spec(self, qos, type_id):
        self.cloud.writes += 1
        if any(type_id in types_ for types_ in self.cloud.assoc.values()):
            raise AssertionError('Cinder refuses a second association')
        self.cloud.assoc.setdefault(qos.id, set()).add(type_id)

    def disassociate_qos_spec(self, qos, type_id):
        self.cloud.writes += 1
        self.cloud.assoc[qos.id].discard(type_id)


class FakeCloud:
    def __init__(self):
        self.flavors = {'m1.gold': _obj(name='m1.gold', extra_specs={
            'hw:cpu_policy': 'dedicated'})}
        self.types, self.qos, self.assoc, self.writes = {}, {}, {}, 0
        self.compute = FakeCompute(self)
        self.block_storage = FakeStorage(self)


class TierSyncTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.cloud = FakeCloud()

    def sync(self, tiers=(GOLD, BRONZE), dry_run=False, **flavors):
        return tiersync.sync(self.cloud, list(tiers),
                             flavors or {'m1.gold': 'gold'}, 'iotguard-',
                             dry_run=dry_run)

    def test_first_sync_creates_everything(self):
        changes = self.sync()
        self.assertEqual(7, len(changes), changes)
        flavor = self.cloud.flavors['m1.gold'].extra_specs
        self.assertEqual({'hw:cpu_policy': 'dedicated',
                          'iotguard:tier': 'gold',
                          'quota:disk_total_iops_sec': '5000',
                          'quota:disk_total_bytes_sec': '200000000'}, flavor)
        gold_qos = self.cloud.qos['iotguard-gold']
        self.assertEqual('both', gold_qos.consumer)
        self.assertEqual({'total_iops_sec': '5000',
                          'total_bytes_sec': '200000000',
                          'minIOPS': '2000', 'maxIOPS': '5000'},
                         gold_qos.specs)
        self.assertEqual({'minIOPS': '100'},
                         self.cloud.qos['iotguard-bronze'].specs)
        gold_type = self.cloud.types['iotguard-gold']
        self.assertEqual({'iotguard:tier': 'gold'}, gold_type.extra_specs)
        self.assertEqual({gold_type.id}, self.cloud.assoc[gold_qos.id])

    def test_second_sync_changes_nothing(self):
        self.sync()
        writes = self.cloud.writes
        self.assertEqual([], self.sync())
        self.assertEqual(writes, self.cloud.writes)

    def test_dry_run_writes_nothing(self):
        changes = self.sync(dry_run=True)
        self.assertEqual(0, self.cloud.writes)
        self.assertIn('volume type iotguard-gold: create, '
                      'iotguard:tier=gold', changes)
        self.assertEqual(changes, self.sync())

    def test_changed_tier_updates_and_removes_keys(self):
        self.sync()
        lower = dict(GOLD, max_iops=0.0, min_iops=1500.0)
        changes = self.sync(tiers=(lower, BRONZE))
        self.assertEqual(3, len(changes), changes)
        flavor = self.cloud.flavors['m1.gold'].extra_specs
        self.assertNotIn('quota:disk_total_iops_sec', flavor)
        self.assertEqual('200000000', flavor['quota:disk_total_bytes_sec'])
        self.assertEqual({'total_bytes_sec': '200000000',
                          'minIOPS': '1500'},
                         self.cloud.qos['iotguard-gold'].specs)
        self.assertEqual([], self.sync(tiers=(lower, BRONZE)))

    def test_drift_is_repaired(self):
        self.sync()
        self.cloud.types['iotguard-gold'].extra_specs['iotguard:tier'] = 'x'
        self.cloud.qos['iotguard-gold'].consumer = 'front-end'
        wrong = _obj(name='manual', consumer='both', specs={})
        self.cloud.qos['manual'] = wrong
        bronze = self.cloud.types['iotguard-bronze'].id
        self.cloud.assoc[self.cloud.qos['iotguard-bronze'].id] = set()
        self.cloud.assoc[wrong.id] = {bronze}
        changes = self.sync()
        self.assertEqual(3, len(changes), changes)
        self.assertIn('volume type iotguard-bronze: associate QoS spec '
                      'iotguard-bronze (instead of manual)', changes)
        self.assertEqual(set(), self.cloud.assoc[wrong.id])
        self.assertEqual([], self.sync())

    def test_unknown_flavor_or_tier(self):
        self.assertRaises(exception.NotFound, self.sync,
                          **{'m1.nope': 'gold'})
        self.assertRaises(exception.NotFound, self.sync,
                          **{'m1.gold': 'platinum'})
        self.assertEqual(0, self.cloud.writes)
