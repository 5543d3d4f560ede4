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

import copy
import dataclasses
import math

import testtools

from iotguard import exception
from iotguard.wire import caps

UUID = '6f1e2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b'


def cap(**limits):
    return {'instance_uuid': UUID, 'dev': 'vda', 'limits': limits,
            'lease_expires_at': 1800000000.5, 'decision_id': 'd-1'}


class KeysTest(testtools.TestCase):

    def test_twelve_libvirt_keys(self):
        self.assertEqual(12, len(caps.IOTUNE_KEYS))
        for key in ('total_bytes_sec', 'read_iops_sec', 'write_bytes_sec_max',
                    'total_iops_sec_max'):
            self.assertIn(key, caps.IOTUNE_KEYS)

    def test_full_fills_zeros(self):
        f = caps.full({'total_iops_sec': 5})
        self.assertEqual(5, f['total_iops_sec'])
        self.assertEqual(0, f['read_bytes_sec_max'])
        self.assertEqual(set(caps.IOTUNE_KEYS), set(f))


class NoLimitTest(testtools.TestCase):
    """0 or missing on the wire is ``inf`` in the core."""

    def test_inf_if_zero_and_limit(self):
        self.assertEqual(math.inf, caps.inf_if_zero(0))
        self.assertEqual(250.0, caps.inf_if_zero(250))
        self.assertEqual(math.inf, caps.limit(None, 'total_iops_sec'))
        self.assertEqual(math.inf, caps.limit({'total_iops_sec': 0},
                                              'total_iops_sec'))
        self.assertEqual(8.0, caps.limit({'total_bytes_sec': 8},
                                         'total_bytes_sec'))

    def test_ceiling(self):
        self.assertEqual(500.0, caps.ceiling({'total_iops_sec': 500},
                                             'iops_sec'))
        self.assertEqual(300.0, caps.ceiling(
            {'read_iops_sec': 100, 'write_iops_sec': 200}, 'iops_sec'))
        # one direction alone bounds no total
        self.assertEqual(math.inf, caps.ceiling({'read_iops_sec': 100},
                                                'iops_sec'))
        self.assertEqual(math.inf, caps.ceiling({}, 'bytes_sec'))


class ValidateTest(testtools.TestCase):

    def assertInvalid(self, obj, fragment):
        e = self.assertRaises(exception.InvalidCap, caps.Cap.from_wire, obj)
        self.assertIn(fragment, str(e))

    def test_good_cap_passes(self):
        good = cap(total_iops_sec=500, total_iops_sec_max=1000,
                   read_bytes_sec=1 << 20, write_bytes_sec=2 << 20)
        self.assertEqual(dict(good, limits=caps.full(good['limits']),
                              lift=False),
                         caps.Cap.from_wire(good).to_wire())
        lifted = dict(good, lift=True)
        self.assertTrue(caps.Cap.from_wire(lifted).lift)
        self.assertInvalid(dict(good, lift='yes'), 'lift')

    def test_all_zero_limits_are_valid(self):
        caps.Cap.from_wire(cap(total_iops_sec=0))
        caps.Cap.from_wire(cap())

    def test_missing_field(self):
        for field in ('instance_uuid', 'dev', 'limits', 'lease_expires_at',
                      'decision_id'):
            bad = cap(total_iops_sec=5)
            del bad[field]
            self.assertInvalid(bad, field)

    def test_unknown_limit_key(self):
        self.assertInvalid(cap(total_iops=5), 'total_iops')

    def test_group_name_is_not_ours(self):
        self.assertInvalid(cap(group_name='x'), 'group_name')

    def test_negative_and_non_integer(self):
        self.assertInvalid(cap(total_iops_sec=-1), 'limits/total_iops_sec')
        self.assertInvalid(cap(total_iops_sec=1.5), 'limits/total_iops_sec')
        self.assertInvalid(cap(total_iops_sec='5'), 'limits/total_iops_sec')

    def test_bad_uuid_and_dev(self):
        bad = cap()
        bad['instance_uuid'] = 'not-a-uuid'
        self.assertInvalid(bad, 'instance_uuid')
        bad = cap()
        bad['dev'] = '../etc'
        self.assertInvalid(bad, 'dev')

    def test_lease_must_be_positive_number(self):
        bad = cap()
        bad['lease_expires_at'] = 0
        self.assertInvalid(bad, 'lease_expires_at')
        bad['lease_expires_at'] = 'tomorrow'
        self.assertInvalid(bad, 'lease_expires_at')

    def test_not_a_dict(self):
        self.assertInvalid(['x'], '(top)')

    def test_total_mixed_with_read_or_write(self):
        self.assertInvalid(cap(total_bytes_sec=10, read_bytes_sec=5),
                           'total_bytes_sec cannot be combined with '
                           'read_bytes_sec')
        self.assertInvalid(cap(total_iops_sec=10, write_iops_sec_max=5),
                           'write_iops_sec')

    def test_different_kinds_may_mix(self):
        caps.Cap.from_wire(cap(total_bytes_sec=10, read_iops_sec=5))

    def test_burst_below_base(self):
        self.assertInvalid(cap(total_iops_sec=100, total_iops_sec_max=99),
                           'total_iops_sec_max=99 is below total_iops_sec')

    def test_burst_without_base(self):
        self.assertInvalid(cap(read_iops_sec_max=99),
                           'read_iops_sec_max=99 needs read_iops_sec')

    def test_burst_equal_to_base(self):
        caps.Cap.from_wire(cap(total_iops_sec=100, total_iops_sec_max=100))

    def test_disk(self):
        self.assertEqual(caps.Disk(UUID, 'vdb'), caps.Disk.from_wire(
            {'instance_uuid': UUID, 'dev': 'vdb'}))
        self.assertRaises(exception.InvalidCap, caps.Disk.from_wire,
                          {'instance_uuid': UUID})


class RecordTest(testtools.TestCase):
    """The typed records and their one wire conversion."""

    def test_cap_round_trip_fills_every_key(self):
        wire = cap(total_iops_sec=500)
        record = caps.Cap.from_wire(wire)
        self.assertEqual((UUID, 'vda'), record.key)
        self.assertEqual(caps.full({'total_iops_sec': 500}), record.limits)
        self.assertEqual(caps.full(wire['limits']),
                         record.to_wire()['limits'])
        self.assertEqual(record, caps.Cap.from_wire(record.to_wire()))

    def test_from_wire_checks(self):
        self.assertRaises(exception.InvalidCap, caps.Cap.from_wire,
                          cap(total_iops_sec=-1))
        self.assertRaises(exception.InvalidCap, caps.Cap.from_wire,
                          cap(total_iops_sec=5, read_iops_sec=5))
        self.assertRaises(exception.InvalidCap, caps.Cap.from_wire,
                          dict(cap(), extra=1))
        self.assertRaises(exception.InvalidCap, caps.Disk.from_wire,
                          {'instance_uuid': 'not-a-uuid', 'dev': 'vda'})

    def test_disk_round_trip_ignores_other_fields(self):
        wire = {'instance_uuid': UUID, 'dev': 'vdb', 'host': 'cn1'}
        self.assertEqual(caps.Disk(UUID, 'vdb'), caps.Disk.from_wire(wire))
        self.assertEqual({'instance_uuid': UUID, 'dev': 'vdb'},
                         caps.Disk(UUID, 'vdb').to_wire())

    def test_schemas_are_the_records_fields(self):
        for record, schema in ((caps.Cap, caps.CAP_SCHEMA),
                               (caps.Disk, caps.DISK_SCHEMA)):
            names = [f.name for f in dataclasses.fields(record)]
            self.assertEqual(names, list(schema['properties']))
            # lift is optional: a controller of the last release omits it
            self.assertEqual([n for n in names if n != 'lift'],
                             schema['required'])
        self.assertFalse(caps.CAP_SCHEMA['additionalProperties'])
        self.assertNotIn('additionalProperties', caps.DISK_SCHEMA)
        self.assertEqual(sorted([*cap(), 'lift']),
                         sorted(caps.CAP_SCHEMA['properties']))


class EffectiveTest(testtools.TestCase):

    def test_no_static_gives_cap(self):
        e = caps.effective({'total_iops_sec': 300}, {})
        self.assertEqual(caps.full({'total_iops_sec': 300}), e)

    def test_never_above_static(self):
        static = {'total_iops_sec': 200, 'total_bytes_sec': 10 << 20}
        e = caps.effective({'total_iops_sec': 300,
                            'total_bytes_sec': 1 << 20}, static)
        self.assertEqual(200, e['total_iops_sec'])
        self.assertEqual(1 << 20, e['total_bytes_sec'])

    def test_lift_replaces_the_static_kinds_it_sets(self):
        static = {'total_iops_sec': 200, 'read_bytes_sec': 4 << 20,
                  'write_bytes_sec': 4 << 20, 'read_bytes_sec_max': 8 << 20}
        burst = {'total_bytes_sec': 16 << 20}
        # held under the static limits without lift
        self.assertEqual(8 << 20, caps.effective(burst, static)[
            'read_bytes_sec'] + caps.effective(burst, static)[
            'write_bytes_sec'])
        # lifted: the bytes/s the cap sets, the IOPS ceiling it does not
        e = caps.effective(burst, static, lift=True)
        self.assertEqual(caps.full({'total_iops_sec': 200,
                                    'total_bytes_sec': 16 << 20}), e)
        caps.check_limits(e)
        # lapsed (no cap): the static limits again
        self.assertEqual(caps.full(static),
                         caps.effective({}, static, lift=True))

    def test_empty_cap_restores_static(self):
        static = {'read_iops_sec': 200, 'write_iops_sec': 100,
                  'write_iops_sec_max': 400}
        self.assertEqual(caps.full(static), caps.effective({}, static))

    def test_total_cap_over_read_write_ceiling(self):
        static = {'read_bytes_sec': 100, 'write_bytes_sec': 50}
        e = caps.effective({'total_bytes_sec': 80}, static)
        # below read + write: the cap holds as a total, per direction gone
        self.assertEqual(caps.full({'total_bytes_sec': 80}), e)
        caps.check_limits(e)
        # at or above the sum: the static limits as they are
        self.assertEqual(caps.full(static),
                         caps.effective({'total_bytes_sec': 150}, static))
        # Nova's read 500 + write 500 IOPS flavor under a 300-IOPS cap
        e = caps.effective({'total_iops_sec': 300},
                           {'read_iops_sec': 500, 'write_iops_sec': 500})
        self.assertEqual(caps.full({'total_iops_sec': 300}), e)
        # one direction alone: no total ceiling, the cap holds
        self.assertEqual(caps.full({'total_iops_sec': 900}), caps.effective(
            {'total_iops_sec': 900}, {'read_iops_sec': 500}))

    def test_read_write_cap_over_total_ceiling(self):
        static = {'total_iops_sec': 100}
        e = caps.effective({'read_iops_sec': 30, 'write_iops_sec': 40},
                           static)
        self.assertEqual(70, e['total_iops_sec'])
        self.assertEqual(0, e['read_iops_sec'])
        e = caps.effective({'read_iops_sec': 30}, static)
        self.assertEqual(100, e['total_iops_sec'])
        caps.check_limits(e)

    def test_bursts_min_and_never_below_base(self):
        static = {'total_iops_sec': 100, 'total_iops_sec_max': 150}
        e = caps.effective({'total_iops_sec': 80, 'total_iops_sec_max': 400},
                           static)
        self.assertEqual((80, 150), (e['total_iops_sec'],
                                     e['total_iops_sec_max']))
        static = {'total_iops_sec': 100, 'total_iops_sec_max': 120}
        e = caps.effective({'total_iops_sec': 300,
                            'total_iops_sec_max': 110}, static)
        self.assertEqual((100, 110), (e['total_iops_sec'],
                                      e['total_iops_sec_max']))
        caps.check_limits(e)

    def test_inputs_untouched(self):
        static = {'total_iops_sec': 100}
        cap_limits = {'total_iops_sec': 50}
        before = copy.deepcopy((static, cap_limits))
        caps.effective(cap_limits, static)
        self.assertEqual(before, (static, cap_limits))


class WithBurstsTest(testtools.TestCase):

    def test_fills_max_for_set_keys_only(self):
        b = caps.with_bursts({'total_bytes_sec': 100, 'read_iops_sec': 5,
                              'read_iops_sec_max': 50})
        self.assertEqual(100, b['total_bytes_sec_max'])
        self.assertEqual(50, b['read_iops_sec_max'])
        self.assertEqual(0, b['write_iops_sec_max'])
        caps.check_limits(b)

    def test_drops_max_without_base(self):
        self.assertEqual(0, caps.with_bursts(
            {'total_iops_sec_max': 7})['total_iops_sec_max'])
