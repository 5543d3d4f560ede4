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

"""``guarantee``'s memory as JSON, and decisions across a takeover."""

import json
import math

import numpy as np

from iotguard.policy import base
from iotguard.policy import guarantee
from iotguard.sim import loop
from iotguard.sim import scenario as scenario_mod
from iotguard.tests import base as test_base
from iotguard.tests.unit.policy import fakes


def through_json(policy, state):
    """``state`` as another controller reads it back from the database."""
    if state is None:
        return policy.restore(None)
    return policy.restore(json.loads(json.dumps(state.to_dict())))


class Recording:
    """``guarantee`` over a simulated run, recording what it decides.

    ``handover``: each decision by a new policy object, from the state
    the one before returned written as JSON and read back (a takeover
    at every step). ``states``: the states returned.
    """

    name = 'guarantee'

    def __init__(self, handover):
        self.handover = handover
        self.policy = guarantee.GuaranteePolicy()
        self.decisions = []
        self.states = []

    def decide(self, snapshot, state, now):
        if self.handover:
            self.policy = guarantee.GuaranteePolicy()
            state = through_json(self.policy, state)
        decisions, state = self.policy.decide(snapshot, state, now)
        self.decisions.append(decisions)
        self.states.append(state)
        return decisions, state


class TestMemory(test_base.TestCase):

    def memory(self):
        # 0.1 + 0.2 and 1 / 3: floats JSON must not round; b: a move
        # pending, never seen uncongested; d: nothing remembered
        return guarantee.Memory(
            service=0.1 + 0.2, cut_over_border=False, border=0.92 + 1e-17,
            disk_ids=('a', 'b', 'c', 'd'),
            asked=np.array([1.0 / 3.0, math.nan, 5e-324, math.nan]),
            wanted=np.array([0.0, -1.0, 1.0, 0.0]),
            crowded=(0.8 + 1e-16, 100.25), missing=True)

    def assertSame(self, expected, got):
        self.assertEqual(
            (expected.service, expected.cut_over_border, expected.border,
             expected.crowded, expected.missing),
            (got.service, got.cut_over_border, got.border, got.crowded,
             got.missing))
        # for the disks of the expected, bit for bit, nan where nan
        asked, wanted = got.align(expected.disk_ids)
        self.assertEqual(expected.asked.tobytes(), asked.tobytes())
        self.assertEqual(expected.wanted.tobytes(), wanted.tobytes())

    def test_round_trip_through_json_is_exact(self):
        memory = self.memory()
        data = json.loads(json.dumps(memory.to_dict(), allow_nan=False))
        # d is left out, b's nan is null; keyed by disk id
        self.assertEqual(['a', 'b', 'c'], sorted(data['disks']))
        self.assertEqual([None, -1], data['disks']['b'])
        self.assertSame(memory, guarantee.Memory.from_dict(data))
        self.assertSame(memory, guarantee.GuaranteePolicy().restore(data))
        # the memory of a fresh domain, and none at all
        fresh = guarantee.Memory()
        self.assertSame(fresh, guarantee.Memory.from_dict(
            json.loads(json.dumps(fresh.to_dict()))))
        self.assertIsNone(guarantee.GuaranteePolicy().restore(None))

    def test_read_back_then_the_disks_change(self):
        memory = guarantee.Memory.from_dict(
            json.loads(json.dumps(self.memory().to_dict())))
        asked, wanted = memory.align(('c', 'new', 'b', 'a'))
        np.testing.assert_array_equal([5e-324, math.nan, math.nan,
                                       1.0 / 3.0], asked)
        self.assertEqual([1.0, 0.0, -1.0, 0.0], wanted.tolist())

    def test_the_form_by_position_is_read_too(self):
        data = self.memory().to_dict()
        disks = data.pop('disks')
        data.update(disk_ids=list(disks),
                    asked=[v[0] for v in disks.values()],
                    wanted=[v[1] for v in disks.values()])
        self.assertSame(self.memory(), guarantee.Memory.from_dict(
            json.loads(json.dumps(data))))

    def test_not_a_memory(self):
        data = self.memory().to_dict()
        data['disks']['a'] = [0]
        self.assertRaises(ValueError, guarantee.Memory.from_dict, data)
        data['disks'] = [['a', 0, 0]]
        self.assertRaises(ValueError, guarantee.Memory.from_dict, data)
        old = dict(self.memory().to_dict(), disk_ids=['a'], asked=[None],
                   wanted=[0, 1])
        del old['disks']
        self.assertRaises(ValueError, guarantee.Memory.from_dict, old)
        self.assertRaises(KeyError, guarantee.Memory.from_dict, {})
        for bad in ({'crowded': [0.8]}, {'crowded': ['0.8', 1.0]},
                    {'missing': 1}):
            self.assertRaises(ValueError, guarantee.Memory.from_dict,
                              dict(self.memory().to_dict(), **bad))

    def test_new_params_keep_what_still_applies(self):
        data = self.memory().to_dict()
        for params, border in (({}, data['border']),
                               ({'border_max': 0.9}, 0.9),
                               ({'high_watermark': 0.93}, 0.93)):
            restored = guarantee.GuaranteePolicy(**params).restore(data)
            self.assertEqual(border, restored.border, params)
            self.assertSame(guarantee.Memory.from_dict(dict(
                data, border=border)), restored)
        # not adapted yet: still border_max, whichever it is
        data['border'] = None
        self.assertIsNone(guarantee.GuaranteePolicy(
            border_max=0.9).restore(data).border)

    def test_decide_never_changes_the_state_and_keeps_it_when_same(self):
        policy = guarantee.GuaranteePolicy()
        snap = fakes.snapshot(
            fakes.disk('a', ops=60, latency_ms=200.0),
            fakes.disk('b', ops=30, latency_ms=200.0,
                       tier=base.Tier('s', min_iops=40)))
        decisions, state = policy.decide(snap, None, 100.0)
        self.assertTrue(decisions)
        before = json.dumps(state.to_dict())
        again, after = policy.decide(snap, state, 105.0)
        self.assertEqual(before, json.dumps(state.to_dict()))
        # nothing moved: the same object back (the controller then does
        # not serialise it again)
        self.assertIs(state, after)
        calm = fakes.snapshot(fakes.disk('a', ops=1, latency_ms=1.0),
                              fakes.disk('b', ops=1, latency_ms=1.0))
        _decisions, moved = policy.decide(calm, state, 110.0)
        self.assertIsNot(state, moved)
        self.assertNotEqual(before, json.dumps(moved.to_dict()))
        self.assertEqual(before, json.dumps(state.to_dict()))
        # the same call, the same answer: nothing kept in the policy
        self.assertEqual(again, policy.decide(snap, state, 105.0)[0])
        self.assertEqual(([], state), policy.decide(fakes.snapshot(), state,
                                                    110.0))


class TestTakeoverAtEveryStep(test_base.TestCase):
    """A simulated run decides the same with a takeover at every step."""

    def runs(self, name):
        scenario = scenario_mod.load(name)
        kept = Recording(handover=False)
        loop.run(scenario, kept, seed=0)
        taken_over = Recording(handover=True)
        loop.run(scenario, taken_over, seed=0)
        self.assertEqual(len(kept.decisions), len(taken_over.decisions))
        for step, (expected, got) in enumerate(zip(kept.decisions,
                                                   taken_over.decisions)):
            self.assertEqual(expected, got, 'step %d' % step)
        self.assertGreater(sum(map(len, kept.decisions)), 5)
        return kept.states

    def test_on_off(self):
        # the decisions wait for confirmation (wanted), disks are seen
        # uncongested (asked) and not (nan)
        states = self.runs('on-off')
        self.assertTrue(any(s.wanted.any() for s in states))
        self.assertTrue(any(np.isnan(s.asked).any()
                            and np.isfinite(s.asked).any() for s in states))

    def test_io_size(self):
        # the border moves
        states = self.runs('io-size')
        self.assertGreater(len({s.border for s in states}), 1)


class TestLapsedCap(test_base.TestCase):
    """A cap that lapsed comes back at once where it was held.

    ``a`` floods beside two floor-holders (the noisy-neighbour case of
    test_guarantee: its fair share is 0.462, 42 IOPS); it was held at 30
    IOPS when the controller went away and its lease lapsed.
    """

    SILVER = base.Tier('silver', min_iops=20)

    def flood(self, **kw):
        return fakes.snapshot(
            fakes.disk('a', ops=70, latency_ms=200.0, **kw),
            fakes.disk('b', ops=10, tier=self.SILVER, latency_ms=200.0),
            fakes.disk('c', ops=10, tier=self.SILVER, latency_ms=200.0))

    def held_at(self, ops):
        """The memory of a round with ``a`` capped at ``ops``."""
        policy = guarantee.GuaranteePolicy()
        _decisions, state = policy.decide(self.flood(
            cap_iops=ops, cap_bytes_sec=ops * 65536.0, cap_set_at=0.0),
            None, 100.0)
        self.assertAlmostEqual(ops * 0.011, state.held_caps(('a',))[0][0])
        return policy, through_json(policy, state)

    def test_cut_at_once_to_the_cap_it_had(self):
        policy, state = self.held_at(30.0)
        cap = fakes.by_disk(policy.decide(self.flood(), state, 130.0)[0])
        self.assertAlmostEqual(30.0, cap['a'].iops)
        # without it, at its fair share: a cut the next ones tighten
        fresh = fakes.by_disk(policy.decide(self.flood(), None, 130.0)[0])
        self.assertAlmostEqual(0.462 / 0.011, fresh['a'].iops)

    def test_only_when_it_lapsed_recently(self):
        # in force at 100 (held_at), lapsed since
        policy, state = self.held_at(30.0)
        late = 100.0 + guarantee.HELD_S
        cap = fakes.by_disk(policy.decide(self.flood(), state, late)[0])
        self.assertAlmostEqual(30.0, cap['a'].iops)
        # longer ago: decided afresh, from its fair share, and forgotten
        decisions, later = policy.decide(self.flood(), state, late + 1.0)
        self.assertAlmostEqual(0.462 / 0.011, fakes.by_disk(decisions)[
            'a'].iops)
        self.assertNotIn('held', later.to_dict())

    def test_in_force_it_is_written_once_a_refresh(self):
        # a cap renewed as it stands: the memory given back unchanged (not
        # written again) within HELD_REFRESH_S, its time refreshed after
        policy, state = self.held_at(30.0)
        capped = self.flood(cap_iops=30.0, cap_bytes_sec=30.0 * 65536.0,
                            cap_set_at=0.0)
        _d, state = policy.decide(capped, state, 101.0)
        for now in (102.0, 100.0 + guarantee.HELD_REFRESH_S - 1.0):
            _d, again = policy.decide(capped, state, now)
            self.assertIs(state, again)
        _d, again = policy.decide(capped, state,
                                  100.0 + guarantee.HELD_REFRESH_S)
        self.assertIsNot(state, again)
        self.assertEqual(100.0 + guarantee.HELD_REFRESH_S,
                         again.held_caps(('a',))[1][0])

    def test_never_tighter_than_its_share_allows_nor_its_floor(self):
        # held above its share now: the share
        policy, state = self.held_at(60.0)
        cap = fakes.by_disk(policy.decide(self.flood(), state, 130.0)[0])
        self.assertAlmostEqual(0.462 / 0.011, cap['a'].iops)
        # held under its tier's floor (raised since): the floor
        gold = base.Tier('gold', min_iops=35)
        policy, state = self.held_at(30.0)
        cap = fakes.by_disk(policy.decide(self.flood(tier=gold), state,
                                          130.0)[0])
        self.assertAlmostEqual(35.0, cap['a'].iops)

    def test_a_release_forgets_it(self):
        policy, state = self.held_at(30.0)
        # the flood calms down: its cap raised round after round, then
        # released; held follows the cap in force, then is forgotten
        cap, now = 30.0, 130.0
        for _ in range(10):
            calm = fakes.snapshot(
                fakes.disk('a', ops=20, latency_ms=1.0, cap_iops=cap,
                           cap_bytes_sec=cap * 65536.0, cap_set_at=0.0),
                fakes.disk('b', ops=1, latency_ms=1.0))
            [decision], state = policy.decide(calm, state, now)
            if decision.action == base.RELEASE:
                break
            self.assertGreater(decision.iops, cap)
            self.assertAlmostEqual(cap * 0.011, state.held_caps(('a',))[0][0])
            cap, now = decision.iops, now + 5.0
        self.assertEqual(base.RELEASE, decision.action)
        self.assertTrue(np.isnan(state.held_caps(('a',))[0][0]))
        self.assertNotIn('held', state.to_dict())
