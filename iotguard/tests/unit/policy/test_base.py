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

import dataclasses
import math

import numpy as np

from iotguard.policy import base
from iotguard.tests import base as test_base
from iotguard.tests.unit.policy import fakes


def reference_rows(names, values, common=None):
    """audit_rows the straightforward way: audit_numbers row by row."""
    return [base.audit_numbers(**dict(zip(names, row)), **(common or {}))
            for row in values.tolist()]


class TestAuditRows(test_base.TestCase):

    def test_by_hand(self):
        rows = base.audit_rows(('a', 'b', 'c'), np.array([
            [1.0, math.inf, 3.0],
            [math.nan, 2.0, -math.inf],
            [0.5, 0.25, 0.125]]))
        self.assertEqual([{'a': 1.0, 'c': 3.0}, {'b': 2.0},
                          {'a': 0.5, 'b': 0.25, 'c': 0.125}], rows)

    def test_keys_in_the_order_of_names(self):
        rows = base.audit_rows(('z', 'a', 'm'),
                               np.array([[1.0, 2.0, 3.0]]))
        self.assertEqual(['z', 'a', 'm'], list(rows[0]))

    def test_values_are_python_floats(self):
        rows = base.audit_rows(('a',), np.array([[1.5]]))
        self.assertIs(float, type(rows[0]['a']))

    def test_no_finite_value_no_key(self):
        rows = base.audit_rows(('a', 'b'), np.array([[math.nan, math.inf],
                                                     [math.inf, math.nan]]))
        self.assertEqual([{}, {}], rows)
        rows[0]['x'] = 1.0      # each row a dict of its own
        self.assertEqual({}, rows[1])

    def test_common_numbers_after_the_rows_own(self):
        rows = base.audit_rows(('a', 'b'), np.array([[1.0, math.inf],
                                                     [3.0, 4.0]]),
                               {'level': math.inf, 'capacity': 0.5})
        self.assertEqual([{'a': 1.0, 'capacity': 0.5},
                          {'a': 3.0, 'b': 4.0, 'capacity': 0.5}], rows)
        self.assertEqual(['a', 'b', 'capacity'], list(rows[1]))

    def test_no_rows(self):
        self.assertEqual([], base.audit_rows(('a', 'b'), np.zeros((0, 2))))

    def test_shape_must_match_names(self):
        self.assertRaises(ValueError, base.audit_rows, ('a', 'b'),
                          np.zeros((3, 3)))
        self.assertRaises(ValueError, base.audit_rows, ('a',),
                          np.zeros(3))

    def test_too_many_names(self):
        names = tuple('n%d' % j for j in range(base.AUDIT_COLUMNS + 1))
        self.assertRaises(ValueError, base.audit_rows, names,
                          np.zeros((1, len(names))))

    def test_random_against_audit_numbers(self):
        rng = np.random.default_rng(11)
        for trial in range(300):
            rows = int(rng.integers(0, 40))
            columns = int(rng.integers(1, base.AUDIT_COLUMNS + 1))
            names = tuple('k%d' % j for j in rng.permutation(columns))
            values = rng.normal(0, 1e3, (rows, columns))
            special = rng.random((rows, columns))
            values[special < 0.1] = math.inf
            values[(special >= 0.1) & (special < 0.15)] = math.nan
            values[(special >= 0.15) & (special < 0.2)] = -math.inf
            values[(special >= 0.2) & (special < 0.25)] = -0.0
            common = {'c%d' % j: v for j, v in enumerate(
                rng.choice([0.5, -0.0, 1e-300, math.inf, math.nan],
                           int(rng.integers(0, 5))).tolist())}
            if trial % 2:
                expected = reference_rows(names, values)
                observed = base.audit_rows(names, values)
            else:
                expected = reference_rows(names, values, common)
                observed = base.audit_rows(names, values, common)
            self.assertEqual(expected, observed)
            for e, o in zip(expected, observed):
                self.assertEqual(list(e), list(o))
                self.assertEqual([math.copysign(1, v) for v in e.values()],
                                 [math.copysign(1, v) for v in o.values()])


class TestMakeDecisions(test_base.TestCase):

    def columns(self, rng, size):
        actions = [base.ACTIONS[k] for k in rng.integers(0, 2, size)]
        return (['disk-%d' % k for k in range(size)], actions,
                ['reason %d' % k for k in range(size)],
                [math.inf if a == base.RELEASE else float(v)
                 for a, v in zip(actions, rng.uniform(1, 1e4, size))],
                rng.uniform(1, 1e8, size).tolist(),
                [{'load': float(v)} for v in rng.random(size)])

    def test_fields_are_decisions(self):
        # make_decisions sets every field of a Decision (lift: False)
        self.assertEqual(
            ('disk_id', 'action', 'reason', 'iops', 'bytes_sec', 'numbers',
             'lift'),
            tuple(f.name for f in dataclasses.fields(base.Decision)))

    def test_random_against_decision(self):
        rng = np.random.default_rng(5)
        for size in (0, 1, 2, 17, 300):
            columns = self.columns(rng, size)
            expected = [base.Decision(*row) for row in zip(*columns)]
            observed = base.make_decisions(*columns)
            self.assertEqual(expected, observed)
            for e, o in zip(expected, observed):
                self.assertIs(base.Decision, type(o))
                self.assertEqual(vars(e), vars(o))
                self.assertEqual(repr(e), repr(o))
                self.assertEqual(e.limits, o.limits)

    def test_records_stay_frozen(self):
        record, = base.make_decisions(['d'], [base.CAP], ['r'], [1.0],
                                      [2.0], [{}])
        self.assertRaises(dataclasses.FrozenInstanceError, setattr, record,
                          'iops', 3.0)
        self.assertEqual(record, dataclasses.replace(record))

    def test_unknown_action(self):
        self.assertRaises(ValueError, base.make_decisions, ['d', 'e'],
                          [base.CAP, 'throttle'], ['r', 'r'], [1.0, 1.0],
                          [1.0, 1.0], [{}, {}])

    def test_unequal_lengths(self):
        self.assertRaises(ValueError, base.make_decisions, ['d', 'e'],
                          [base.CAP], ['r'], [1.0], [1.0], [{}])


def cinder_priced(per_gb, per_gb_min, most, size):
    """Cinder's capacity-based QoS value of one key.

    Its volume manager's arithmetic (``_parse_connection_options``),
    ``most`` None: no ``_max`` key.
    """
    value = max(per_gb_min, per_gb * size)
    return value if most is None else min(value, most)


class TestTierPerGiB(test_base.TestCase):

    def test_a_fixed_tier_is_the_same_at_any_size(self):
        gold = base.Tier('gold', min_iops=100.0, max_iops=500.0)
        for size in (None, 0, 1, 10 ** 6):
            self.assertIs(gold, gold.at(size))

    def test_floors_as_cinder_prices_its_per_gb_keys(self):
        # gp2-like: 3 IOPS and 0.25 MiB/s per GiB, at least 100 IOPS,
        # at most 16000 IOPS.
        tier = base.Tier('gp', min_iops=100.0, max_iops=16000.0,
                         min_iops_per_gb=3.0, min_bytes_sec_per_gb=262144.0)
        for size in (1, 20, 33, 34, 1000, 5333, 5334, 16384):
            at = tier.at(size)
            self.assertEqual(cinder_priced(3.0, 100.0, 16000.0, size),
                             at.min_iops, size)
            self.assertEqual(cinder_priced(262144.0, 0.0, None, size),
                             at.min_bytes_sec, size)
            # The ceilings stay: no per-GiB ones.
            self.assertEqual((16000.0, 0.0), (at.max_iops, at.max_bytes_sec))
            self.assertEqual(0.0, at.min_iops_per_gb)
        self.assertEqual(100.0, tier.at(None).min_iops)

    def test_ceilings_per_gib_never_below_the_floor(self):
        tier = base.Tier('t', min_iops=50.0, max_iops=1000.0,
                         min_iops_per_gb=2.0, max_iops_per_gb=5.0,
                         max_bytes_sec_per_gb=1e6)
        self.assertEqual((50.0, 50.0), (tier.at(5).min_iops,
                                        tier.at(5).max_iops))
        self.assertEqual((200.0, 500.0), (tier.at(100).min_iops,
                                          tier.at(100).max_iops))
        self.assertEqual((1000.0, 1000.0), (tier.at(10 ** 4).min_iops,
                                            tier.at(10 ** 4).max_iops))
        self.assertEqual(3e6, tier.at(3).max_bytes_sec)
        # An unknown size prices as 1 GiB (the least a volume has).
        self.assertEqual(tier.at(1), tier.at(None))
        self.assertEqual(tier.at(1), tier.at(0))

    def test_bad_values_refused(self):
        for bad in ({'min_iops_per_gb': -1.0},
                    {'max_bytes_sec_per_gb': math.inf},
                    {'min_iops_per_gb': math.nan},
                    {'min_iops_per_gb': 5.0, 'max_iops_per_gb': 4.0}):
            self.assertRaises(ValueError, base.Tier, 't', **bad)


class TestShort(test_base.TestCase):
    """base.short: a fresh disk under every floor its tier sets."""

    def test_short_of_every_floor_it_has(self):
        both = base.Tier('both', min_iops=100.0, min_bytes_sec=1e6)
        iops_only = base.Tier('iops', min_iops=100.0)
        snap = fakes.snapshot(
            fakes.disk('under-both', 50, 4096, both),
            fakes.disk('one-reached', 50, 64 * fakes.KIB, both),
            fakes.disk('iops-under', 99, 4096, iops_only),
            fakes.disk('iops-at', 100, 4096, iops_only),
            fakes.disk('no-floor', 0),
            fakes.disk('stale', 0, 4096, both, stale=True))
        self.assertEqual(
            [True, False, True, False, False, False],
            base.short(snap).tolist())
