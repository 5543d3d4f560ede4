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

import dataclasses
import types
import uuid

from openstack import exceptions as sdk_exceptions

from iotguard.controller import placement
from iotguard.db import tiers
from iotguard import exception
from iotguard.manage import tiersync
from iotguard.tests import base
from iotguard.wire import caps

GOLD = tiers.Tier('gold', min_iops=2000.0, max_iops=5000.0,
                  max_bytes_sec=200e6)
BRONZE = tiers.Tier('bronze', min_iops=100.0)
SILVER = tiers.Tier('silver', min_iops=500.0, max_iops=1001.0,
                    is_public=False, projects=('p1', 'p2'))


def _obj(**kw):
    return types.SimpleNamespace(id=str(uuid.uuid4()), **kw)


class FakeCompute:
    def __init__(self, cloud):
        self.cloud = cloud

    def find_flavor(self, name, ignore_missing=True):
        return self.cloud.flavors.get(name)

    def flavors(self, is_public=None):
        assert is_public == 'None', 'private flavors too'
        return list(self.cloud.flavors.values())

    def fetch_flavor_extra_specs(self, flavor):
        self.cloud.fail('fetch_flavor_extra_specs')
        return types.SimpleNamespace(extra_specs=dict(flavor.extra_specs))

    def create_flavor_extra_specs(self, flavor, specs):
        self.cloud.write('create_flavor_extra_specs')
        flavor.extra_specs.update(specs)

    def delete_flavor_extra_specs_property(self, flavor, key):
        self.cloud.write('delete_flavor_extra_specs_property')
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

    def types(self, is_public=None):
        assert is_public == 'None', 'private types too'
        return list(self.cloud.types.values())

    def find_qos_spec(self, name, ignore_missing=True):
        return self._find(self.cloud.qos, name, ignore_missing)

    def qos_specs(self):
        return list(self.cloud.qos.values())

    def create_type(self, name, description, is_public, extra_specs):
        self.cloud.write('create_type')
        self.cloud.types[name] = _obj(name=name, extra_specs=extra_specs,
                                      is_public=is_public)

    def update_type_extra_specs(self, vtype, **specs):
        self.cloud.write('update_type_extra_specs')
        vtype.extra_specs.update(specs)

    def put(self, url, json, raise_exc=True):
        self.cloud.write('put')
        type_id = url.split('/')[-1]
        vtype, = [t for t in self.cloud.types.values() if t.id == type_id]
        vtype.is_public = json['volume_type']['is_public']
        return types.SimpleNamespace(status_code=200)

    def delete_type(self, vtype, ignore_missing=True):
        self.cloud.write('delete_type')
        if any(v.volume_type == vtype.name for v in self.cloud.volumes):
            raise sdk_exceptions.BadRequestException('type in use')
        del self.cloud.types[vtype.name]
        for assoc in self.cloud.assoc.values():
            assoc.discard(vtype.id)

    def get_type_access(self, vtype):
        if vtype.is_public:
            raise sdk_exceptions.NotFoundException('public type')
        return [{'volume_type_id': vtype.id, 'project_id': p}
                for p in sorted(self.cloud.access.get(vtype.id, ()))]

    def add_type_access(self, vtype, project):
        self.cloud.write('add_type_access')
        access = self.cloud.access.setdefault(vtype.id, set())
        if project in access:
            raise sdk_exceptions.ConflictException('access exists')
        access.add(project)

    def remove_type_access(self, vtype, project):
        self.cloud.write('remove_type_access')
        self.cloud.access[vtype.id].remove(project)

    def volumes(self, all_projects=False):
        assert all_projects
        return list(self.cloud.volumes)

    def create_qos_spec(self, name, consumer, **specs):
        self.cloud.write('create_qos_spec')
        self.cloud.qos[name] = _obj(name=name, consumer=consumer,
                                    specs=specs)

    def update_qos_spec(self, qos, consumer=None, **specs):
        self.cloud.write('update_qos_spec')
        qos.consumer = consumer or qos.consumer
        qos.specs.update(specs)

    def delete_qos_spec(self, qos, ignore_missing=True):
        self.cloud.write('delete_qos_spec')
        if self.cloud.assoc.get(qos.id):
            raise sdk_exceptions.BadRequestException('QoS spec in use')
        del self.cloud.qos[qos.name]

    def delete_qos_spec_metadata(self, qos, keys):
        self.cloud.write('delete_qos_spec_metadata')
        for key in keys:
            del qos.specs[key]

    def qos_spec_associations(self, qos):
        by_id = {t.id: t.name for t in self.cloud.types.values()}
        return [types.SimpleNamespace(id=t, name=by_id[t])
                for t in self.cloud.assoc.get(qos.id, ())]

    def associate_qos_spec(self, qos, type_id):
        self.cloud.write('associate_qos_spec')
        if any(type_id in types_ for types_ in self.cloud.assoc.values()):
            raise AssertionError('Cinder refuses a second association')
        self.cloud.assoc.setdefault(qos.id, set()).add(type_id)

    def disassociate_qos_spec(self, qos, type_id):
        self.cloud.write('disassociate_qos_spec')
        self.cloud.assoc[qos.id].discard(type_id)


class FakeCloud:
    """Nova and Cinder in memory; ``services`` is the catalog."""

    def __init__(self, services=('compute', 'block-storage')):
        self.flavors = {'m1.gold': _obj(name='m1.gold', disk=20, extra_specs={
            'hw:cpu_policy': 'dedicated'})}
        self.types, self.qos, self.assoc, self.writes = {}, {}, {}, 0
        self.access, self.volumes, self.services = {}, [], services
        self.failing = None
        self.compute = FakeCompute(self)
        self.block_storage = FakeStorage(self)

    def has_service(self, service_type):
        return service_type in self.services

    def fail(self, call):
        if call == self.failing:
            raise sdk_exceptions.HttpException('%s: 503 Service '
                                               'Unavailable' % call)

    def write(self, call):
        self.fail(call)
        self.writes += 1

    def flavor(self, name, **specs):
        self.flavors[name] = _obj(name=name, disk=20, extra_specs=specs)
        return self.flavors[name].extra_specs


class TierSyncTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.cloud = FakeCloud()

    def sync(self, tiers=(GOLD, BRONZE), dry_run=False, **flavors):
        return tiersync.sync(self.cloud, list(tiers),
                             flavors or {'m1.gold': 'gold'}, 'iotguard-',
                             dry_run=dry_run).changes

    def report(self, tiers=(GOLD, BRONZE), dry_run=False, **flavors):
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
        self.assertIn('volume type iotguard-gold: create, public, '
                      'iotguard:tier=gold', changes)
        self.assertEqual(changes, self.sync())

    def test_changed_tier_updates_and_removes_keys(self):
        self.sync()
        lower = dataclasses.replace(GOLD, max_iops=0.0, min_iops=1500.0)
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

    # -- the flavor's form: total or read/write keys, never both ----------

    def test_flavor_with_read_write_keys_keeps_its_form(self):
        flavor = self.cloud.flavor('m1.rw', **{
            'quota:disk_read_iops_sec': '800',
            'quota:disk_write_iops_sec': '200',
            'quota:disk_write_iops_sec_max': '400'})
        changes = self.sync(**{'m1.rw': 'gold'})
        self.assertIn('flavor m1.rw: unset quota:disk_write_iops_sec_max',
                      changes)
        # IOPS: the ceiling split in two halves; bytes/s: no read/write
        # keys, so the total key.
        self.assertEqual({'iotguard:tier': 'gold',
                          'quota:disk_read_iops_sec': '2500',
                          'quota:disk_write_iops_sec': '2500',
                          'quota:disk_total_bytes_sec': '200000000'},
                         flavor)
        caps.check_limits(tiersync.flavor_limits(flavor))
        self.assertEqual([], self.sync(**{'m1.rw': 'gold'}))

    def test_flavor_mixing_both_forms_is_repaired(self):
        flavor = self.cloud.flavor('m1.mixed', **{
            'quota:disk_total_iops_sec': '5000',
            'quota:disk_total_iops_sec_max': '9000',
            'quota:disk_read_iops_sec': '100'})
        self.assertRaises(exception.InvalidCap, caps.check_limits,
                          tiersync.flavor_limits(flavor))
        self.sync(**{'m1.mixed': 'gold'})
        self.assertEqual('2500', flavor['quota:disk_read_iops_sec'])
        self.assertEqual('2500', flavor['quota:disk_write_iops_sec'])
        self.assertNotIn('quota:disk_total_iops_sec', flavor)
        self.assertNotIn('quota:disk_total_iops_sec_max', flavor)
        caps.check_limits(tiersync.flavor_limits(flavor))

    def test_odd_ceiling_split_stays_within_it(self):
        specs = tiersync.wanted_flavor_specs(
            SILVER, {'quota:disk_read_iops_sec': '1'})
        self.assertEqual('500', specs['quota:disk_read_iops_sec'])
        self.assertEqual('500', specs['quota:disk_write_iops_sec'])
        self.assertIsNone(specs['quota:disk_total_iops_sec'])

    def test_tier_without_ceiling_removes_read_write_keys(self):
        flavor = self.cloud.flavor('m1.rw', **{
            'quota:disk_read_bytes_sec': '10',
            'quota:disk_write_bytes_sec': '10'})
        self.sync(**{'m1.rw': 'bronze'})
        self.assertEqual({'iotguard:tier': 'bronze'}, flavor)

    def test_total_burst_goes_with_the_ceiling(self):
        flavor = self.cloud.flavor('m1.burst', **{
            'quota:disk_total_iops_sec': '100',
            'quota:disk_total_iops_sec_max': '200'})
        self.sync(**{'m1.burst': 'gold'})
        self.assertEqual('5000', flavor['quota:disk_total_iops_sec'])
        self.assertNotIn('quota:disk_total_iops_sec_max', flavor)

    def test_qos_spec_read_write_keys_go_next_to_a_total(self):
        self.sync()
        self.cloud.qos['iotguard-gold'].specs['read_iops_sec'] = '7'
        changes = self.sync()
        self.assertEqual(['QoS spec iotguard-gold: unset read_iops_sec'],
                         changes)
        self.assertNotIn('read_iops_sec',
                         self.cloud.qos['iotguard-gold'].specs)

    # -- private tiers -------------------------------------------------

    def test_private_tier_makes_private_type_with_access(self):
        changes = self.sync(tiers=(GOLD, SILVER))
        self.assertIn('volume type iotguard-silver: create, private, '
                      'iotguard:tier=silver', changes)
        self.assertIn('volume type iotguard-silver: grant access to '
                      'project p2', changes)
        vtype = self.cloud.types['iotguard-silver']
        self.assertFalse(vtype.is_public)
        self.assertEqual({'p1', 'p2'}, self.cloud.access[vtype.id])
        self.assertTrue(self.cloud.types['iotguard-gold'].is_public)
        self.assertEqual([], self.sync(tiers=(GOLD, SILVER)))

    def test_access_follows_the_tier_projects(self):
        self.sync(tiers=(SILVER,))
        changed = dataclasses.replace(SILVER, projects=('p2', 'p3'))
        changes = self.sync(tiers=(changed,))
        self.assertEqual(
            ['volume type iotguard-silver: grant access to project p3',
             'volume type iotguard-silver: revoke access of project p1'],
            changes)
        vtype = self.cloud.types['iotguard-silver']
        self.assertEqual({'p2', 'p3'}, self.cloud.access[vtype.id])
        self.assertEqual([], self.sync(tiers=(changed,)))

    def test_tier_made_public_then_private_again(self):
        self.sync(tiers=(SILVER,))
        vtype = self.cloud.types['iotguard-silver']
        public = dataclasses.replace(SILVER, is_public=True, projects=())
        self.assertEqual(['volume type iotguard-silver: make public'],
                         self.sync(tiers=(public,)))
        self.assertTrue(vtype.is_public)
        self.assertEqual([], self.sync(tiers=(public,)))
        # Cinder still holds p1 and p2: only p2 and p4 may keep it.
        private = dataclasses.replace(SILVER, projects=('p2', 'p4'))
        changes = self.sync(tiers=(private,), dry_run=True)
        self.assertEqual(
            ['volume type iotguard-silver: make private',
             'volume type iotguard-silver: access for exactly project(s) '
             'p2, p4'], changes)
        self.assertEqual(changes, self.sync(tiers=(private,)))
        self.assertFalse(vtype.is_public)
        self.assertEqual({'p2', 'p4'}, self.cloud.access[vtype.id])
        self.assertEqual([], self.sync(tiers=(private,)))

    # -- deleted tiers -------------------------------------------------

    def test_deleted_tier_type_and_qos_removed(self):
        self.sync()
        report = self.report(tiers=(GOLD,), dry_run=True)
        self.assertEqual(
            ['volume type iotguard-bronze: delete (tier bronze no longer '
             'exists)',
             'QoS spec iotguard-bronze: delete (tier bronze no longer '
             'exists)'], report.changes)
        self.assertIn('iotguard-bronze', self.cloud.types)
        self.assertEqual(report.changes, self.sync(tiers=(GOLD,)))
        self.assertNotIn('iotguard-bronze', self.cloud.types)
        self.assertNotIn('iotguard-bronze', self.cloud.qos)
        self.assertEqual([], self.sync(tiers=(GOLD,)))

    def test_deleted_tier_type_in_use_is_reported_and_kept(self):
        self.sync()
        self.cloud.volumes.append(_obj(name='v',
                                       volume_type='iotguard-bronze'))
        report = self.report(tiers=(GOLD,))
        self.assertEqual([], report.changes)
        self.assertEqual(
            ['volume type iotguard-bronze: tier bronze no longer exists, '
             'but 1 volume(s) use the type; kept (retype them, then sync '
             'again)',
             'QoS spec iotguard-bronze: tier bronze no longer exists; kept, '
             'associated with volume type(s) iotguard-bronze'],
            report.notices)
        self.assertIn('iotguard-bronze', self.cloud.types)
        self.assertIn('iotguard-bronze', self.cloud.qos)

    def test_operator_types_and_specs_are_not_deleted(self):
        self.cloud.types['iotguard-manual'] = _obj(
            name='iotguard-manual', extra_specs={}, is_public=True)
        self.cloud.types['iotguard-fast'] = _obj(
            name='iotguard-fast', extra_specs={'iotguard:tier': 'gold'},
            is_public=True)
        self.cloud.qos['iotguard-front'] = _obj(
            name='iotguard-front', consumer='front-end',
            specs={'total_iops_sec': '10'})
        self.cloud.qos['iotguard-custom'] = _obj(
            name='iotguard-custom', consumer='back-end',
            specs={'vendor:thing': '1'})
        report = self.report(tiers=(GOLD,))
        self.assertIn('iotguard-manual', self.cloud.types)
        self.assertIn('iotguard-fast', self.cloud.types)
        self.assertIn('iotguard-custom', self.cloud.qos)
        self.assertIn('iotguard-front', self.cloud.qos)
        self.assertEqual(
            ['QoS spec iotguard-custom: tier custom no longer exists; kept, '
             'it has what tier sync does not write (vendor:thing, '
             'consumer back-end)',
             'QoS spec iotguard-front: tier front no longer exists; kept, '
             'it has what tier sync does not write (consumer front-end)'],
            report.notices)

    def test_no_prefix_no_cleanup(self):
        self.sync()
        report = tiersync.sync(self.cloud, [GOLD], {}, '')
        self.assertIn('[tiers] volume_type_prefix is empty: volume types '
                      'and QoS specs of deleted tiers are not looked for',
                      report.notices)
        self.assertIn('iotguard-bronze', self.cloud.types)

    def test_flavors_naming_a_missing_tier_are_reported_only(self):
        other = self.cloud.flavor('m1.old', **{'iotguard:tier': 'bronze'})
        self.cloud.flavor('m1.new', **{'iotguard:tier': 'gold'})
        report = self.report(tiers=(GOLD,), **{'m1.gold': 'platinum',
                                               'm1.nope': 'gold'})
        self.assertEqual(
            ['flavor m1.gold: [tiers] flavor_tiers names tier platinum, '
             'which does not exist; flavor left unchanged',
             'flavor m1.nope of [tiers] flavor_tiers: not found in Nova, '
             'skipped',
             'flavor m1.old: iotguard:tier=bronze names no tier (deleted?); '
             'flavor left unchanged, remove the key or name another tier'],
            report.notices)
        self.assertEqual({'iotguard:tier': 'bronze'}, other)
        self.assertEqual({'hw:cpu_policy': 'dedicated'},
                         self.cloud.flavors['m1.gold'].extra_specs)
        self.assertFalse([c for c in report.changes if 'flavor' in c])

    # -- services missing, failures --------------------------------------

    def test_without_cinder_only_flavors(self):
        self.cloud.services = ('compute',)
        report = self.report()
        self.assertEqual(['Cinder (block-storage) is not in the service '
                          'catalog: volume types and QoS specs not synced'],
                         report.skipped)
        self.assertEqual(['flavor m1.gold: set iotguard:tier=gold, '
                          'quota:disk_total_bytes_sec=200000000, '
                          'quota:disk_total_iops_sec=5000'], report.changes)
        self.assertEqual({}, self.cloud.types)

    def test_without_nova_only_volume_types(self):
        self.cloud.services = ('block-storage',)
        report = self.report()
        self.assertEqual(['Nova (compute) is not in the service catalog: '
                          'flavors not synced'], report.skipped)
        self.assertEqual(6, len(report.changes))
        self.assertNotIn('iotguard:tier',
                         self.cloud.flavors['m1.gold'].extra_specs)

    def test_failed_read_raises_tier_sync_failed(self):
        self.cloud.failing = 'fetch_flavor_extra_specs'
        exc = self.assertRaises(exception.TierSyncFailed, self.sync)
        self.assertIn('reading Nova and Cinder', exc.message)
        self.assertIn('503', exc.message)
        self.assertEqual([], exc.done)
        self.assertEqual(0, self.cloud.writes)

    def test_failed_change_says_which_and_what_was_done(self):
        self.cloud.failing = 'create_type'
        exc = self.assertRaises(exception.TierSyncFailed, self.sync)
        self.assertIn('volume type iotguard-bronze: create', exc.message)
        self.assertEqual(
            ['flavor m1.gold: set iotguard:tier=gold, '
             'quota:disk_total_bytes_sec=200000000, '
             'quota:disk_total_iops_sec=5000',
             'QoS spec iotguard-bronze: create, consumer both, '
             'minIOPS=100'], exc.done)


class PerGiBTest(base.TestCase):
    """A tier per GiB: Cinder's capacity-based keys, flavors priced."""

    # gp2-like floors; a ceiling of 10 IOPS and 1 MiB/s per GiB, at most
    # 16000 IOPS.
    GP = tiers.Tier('gp', min_iops=100.0, min_iops_per_gb=3.0,
                    max_iops=16000.0, max_iops_per_gb=10.0,
                    max_bytes_sec_per_gb=1048576.5)

    def test_qos_spec_per_gb_keys_price_as_the_tier(self):
        cloud = FakeCloud()
        tiersync.sync(cloud, [self.GP], {'m1.gold': 'gp'}, 'iotguard-')
        specs = cloud.qos['iotguard-gp'].specs
        self.assertEqual({'total_iops_sec_per_gb': '10',
                          'total_iops_sec_per_gb_min': '100',
                          'total_iops_sec_max': '16000',
                          'total_bytes_sec_per_gb': '1048577',
                          'minIOPS': '100', 'maxIOPS': '16000'}, specs)
        # What Cinder's volume manager makes of them at a volume's size
        # is the tier's ceiling there.
        for size in (1, 5, 10, 999, 1600, 1601, 10000):
            at = self.GP.at(size)
            iops = min(max(int(specs['total_iops_sec_per_gb_min']),
                           int(specs['total_iops_sec_per_gb']) * size),
                       int(specs['total_iops_sec_max']))
            self.assertEqual(at.max_iops, iops, size)
            self.assertLessEqual(
                at.max_bytes_sec,
                int(specs['total_bytes_sec_per_gb']) * size)
        # The flavor has the ceilings at its 20 GiB root disk.
        flavor = cloud.flavors['m1.gold'].extra_specs
        self.assertEqual(('200', '20971530'), (
            flavor['quota:disk_total_iops_sec'],
            flavor['quota:disk_total_bytes_sec']))
        # Fixed again: the per-GiB keys go.
        self.assertEqual([], tiersync.sync(cloud, [self.GP], {'m1.gold': 'gp'},
                                           'iotguard-').changes)
        fixed = dataclasses.replace(self.GP, max_iops_per_gb=0.0,
                                    max_bytes_sec_per_gb=0.0)
        tiersync.sync(cloud, [fixed], {'m1.gold': 'gp'}, 'iotguard-')
        self.assertEqual({'total_iops_sec': '16000', 'minIOPS': '100',
                          'maxIOPS': '16000'},
                         cloud.qos['iotguard-gp'].specs)

    def test_flavor_floor_request_at_its_root_disk(self):
        self.flags(group='placement', enabled=True)
        cloud = FakeCloud(services=('compute',))
        tiersync.sync(cloud, [self.GP], {'m1.gold': 'gp'}, 'iotguard-',
                      floor=placement.flavor_request(self.conf))
        # 20 GiB x 3 IOPS is below the minimum: 100 IOPS, priced with
        # 4 KiB operations: 100 + 100 * 4096 / 65536, rounded up.
        self.assertEqual('107', cloud.flavors['m1.gold'].extra_specs[
            'resources:CUSTOM_IOTGUARD_FLOOR'])
        cloud.flavors['m1.gold'].disk = 200
        tiersync.sync(cloud, [self.GP], {'m1.gold': 'gp'}, 'iotguard-',
                      floor=placement.flavor_request(self.conf))
        self.assertEqual('638', cloud.flavors['m1.gold'].extra_specs[
            'resources:CUSTOM_IOTGUARD_FLOOR'])


class FloorRequestTest(base.TestCase):
    """The flavors' ``resources:`` key, priced as Placement's inventory."""

    KEY = 'resources:CUSTOM_IOTGUARD_FLOOR'

    def request(self, enabled=True, **opts):
        self.flags(group='placement', enabled=enabled, **opts)
        return placement.flavor_request(self.conf)

    def test_enabled_the_tiers_units(self):
        specs = tiersync.wanted_flavor_specs(GOLD, {}, self.request())
        # 2000 IOPS priced with 4 KiB operations: 2000 + 2000 * 4096 / 65536
        self.assertEqual('2125', specs[self.KEY])
        self.assertEqual(str(placement.units(GOLD, placement.reference(
            65536.0))), specs[self.KEY])
        wider = self.request(unit_bytes_sec=4096.0,
                             resource_class='CUSTOM_DISK_FLOOR')
        self.assertEqual({'resources:CUSTOM_DISK_FLOOR': '4000'},
                         wider.wanted(GOLD))

    def test_no_floor_or_disabled_the_key_goes(self):
        ceiling_only = tiers.Tier('cap', max_iops=100.0)
        self.assertIsNone(tiersync.wanted_flavor_specs(
            ceiling_only, {}, self.request())[self.KEY])
        specs = tiersync.wanted_flavor_specs(
            GOLD, {self.KEY: '2125'}, self.request(enabled=False))
        self.assertIn(self.KEY, specs)
        self.assertIsNone(specs[self.KEY])
        # Without a request the key is not iotguard's business.
        self.assertNotIn(self.KEY, tiersync.wanted_flavor_specs(GOLD, {}))

    def sync(self, request, tiers=(GOLD, BRONZE)):
        return tiersync.sync(self.cloud, list(tiers), {'m1.gold': 'gold'},
                             'iotguard-', floor=request).changes

    def test_sync_sets_follows_and_removes_the_key(self):
        self.cloud = FakeCloud(services=('compute',))
        flavor = self.cloud.flavors['m1.gold'].extra_specs
        self.assertEqual(
            ['flavor m1.gold: set iotguard:tier=gold, '
             'quota:disk_total_bytes_sec=200000000, '
             'quota:disk_total_iops_sec=5000, %s=2125' % self.KEY],
            self.sync(self.request()))
        self.assertEqual('2125', flavor[self.KEY])
        self.assertEqual([], self.sync(self.request()))

        lower = dataclasses.replace(GOLD, min_iops=1000.0)
        self.assertEqual(['flavor m1.gold: set %s=1063' % self.KEY],
                         self.sync(self.request(), tiers=(lower,)))
        self.assertEqual('1063', flavor[self.KEY])

        self.assertEqual(['flavor m1.gold: unset %s' % self.KEY],
                         self.sync(self.request(enabled=False)))
        self.assertNotIn(self.KEY, flavor)
        self.assertEqual([], self.sync(self.request(enabled=False)))


class CapsFormTest(base.TestCase):

    def test_form(self):
        self.assertIsNone(caps.form({}, 'iops_sec'))
        self.assertEqual('total', caps.form({'total_iops_sec': 1},
                                            'iops_sec'))
        self.assertIsNone(caps.form({'total_iops_sec': 1}, 'bytes_sec'))
        self.assertEqual('rw', caps.form({'write_bytes_sec_max': 5},
                                         'bytes_sec'))
        self.assertEqual('rw', caps.form({'total_iops_sec': 1,
                                          'read_iops_sec': 1}, 'iops_sec'))
