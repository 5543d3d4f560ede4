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

"""guarantee's stages, each alone: unmet demand, demand, allocation."""

import math

import numpy as np

from iotguard.policy import base
from iotguard.policy import guarantee
from iotguard.tests import base as test_base
from iotguard.tests.unit.policy import fakes

KIB = fakes.KIB
SILVER = base.Tier('silver', min_iops=20)       # floor 0.22 at 64 KiB
P = guarantee.Params()


def domain(profile=fakes.PROFILE):
    """A flood, a starving floor-holder, a calm shallow writer, a capped."""
    return fakes.snapshot(
        fakes.disk('flood', ops=60, latency_ms=200.0),
        fakes.disk('silver', ops=10, latency_ms=200.0, tier=SILVER),
        fakes.disk('sync', ops=5, size=4 * KIB, latency_ms=2.0),
        fakes.disk('capped', ops=9, latency_ms=200.0, cap_iops=10,
                   cap_bytes_sec=10 * 64 * KIB, cap_set_at=0.0),
        profile=profile)


class UnmetDemandTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.snap = domain()
        self.loads = guarantee.Loads.of(self.snap)
        self.asked = np.full(4, math.nan)
        self.need = guarantee.unmet_demand(self.snap, self.loads, P, 0.95,
                                           None, self.asked)

    def test_who_waits(self):
        need = self.need
        self.assertEqual([True, True, False, True], need.slow.tolist())
        self.assertEqual([False, False, True, False], need.shallow.tolist())
        # the capped disk is slow but waits in its own cap
        self.assertEqual([True, True, False, False], need.unmet.tolist())
        self.assertEqual([False, True, False, False], need.starving.tolist())
        self.assertEqual([False, False, False, True], need.at_cap.tolist())
        # at its cap, with neighbours waiting: not raised
        self.assertFalse(need.may_raise.any())

    def test_learns_and_remembers_without_touching_its_inputs(self):
        need = self.need
        # the only unthrottled disks' fastest: 2 ms for a 4 KiB op
        self.assertAlmostEqual(2.0 / 1.625, need.service)
        # the calm shallow writer's load remembered as what it asks
        self.assertEqual(self.loads.u[2], need.asked[2])
        self.assertTrue(np.isnan(need.asked[[0, 1, 3]]).all())
        self.assertTrue(np.isnan(self.asked).all())
        # what it remembered stays: a service time never rises at once
        again = guarantee.unmet_demand(self.snap, self.loads, P, 0.95, 1.0,
                                       need.asked)
        self.assertEqual(1.0 + guarantee.SERVICE_DRIFT * (2.0 / 1.625 - 1),
                         again.service)

    def test_pressure_only_above_the_low_watermark(self):
        self.assertAlmostEqual(
            2.0 / (P.congestion_factor * 2.0), self.need.pressure)
        calm = guarantee.unmet_demand(self.snap, self.loads, P,
                                      P.low_watermark, None, self.asked)
        self.assertEqual(0.0, calm.pressure)


class EstimateDemandTest(test_base.TestCase):

    def test_headroom_floor_margin_and_ceiling(self):
        snap = domain()
        loads = guarantee.Loads.of(snap)
        need = guarantee.unmet_demand(snap, loads, P, 0.95, None,
                                      np.full(4, math.nan))
        demand = guarantee.estimate_demand(snap, loads, need, P)
        u, floor = loads.u, loads.floor
        self.assertAlmostEqual(u[0] * (1 + P.headroom), demand[0])
        self.assertAlmostEqual(floor[1] * (1 + P.floor_margin), demand[1])
        self.assertEqual(u[2], demand[2])
        self.assertEqual(math.inf, demand[3])   # at its cap: unknown
        ceiling = guarantee.estimate_demand(
            snap, loads._replace(ceil=np.full(4, 0.2)), need, P)
        self.assertEqual([0.2, 0.2, u[2], 0.2], ceiling.tolist())


class AllocateTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.snap = domain()
        self.loads = guarantee.Loads.of(self.snap)
        self.need = guarantee.unmet_demand(self.snap, self.loads, P, 0.95,
                                           None, np.full(4, math.nan))
        self.demand = guarantee.estimate_demand(self.snap, self.loads,
                                                self.need, P)

    def allocate(self, need=None, snap=None, total=0.8, border=0.9):
        return guarantee.allocate(snap or self.snap, self.loads,
                                  need or self.need, P, self.demand, total,
                                  border, deep_uncapped=True)

    def test_capacity(self):
        # a floor at stake: what is served now
        self.assertEqual(0.8, self.allocate().capacity)
        calm = self.need._replace(starving=np.zeros(4, bool))
        self.assertEqual(0.8, self.allocate(calm).capacity)
        idle = calm._replace(unmet=np.zeros(4, bool))
        self.assertEqual(0.9, self.allocate(idle).capacity)
        # a token bucket: its border, whatever it serves
        bucket = domain(base.Profile(1000.0, 6553600.0, form=base.MAX))
        self.assertEqual(0.9, self.allocate(snap=bucket, total=1.2).capacity)

    def test_queue_cut(self):
        pressed = self.need._replace(pressure=4.0)
        over = self.allocate(pressed, total=1.0)
        self.assertTrue(over.queue_cut)
        self.assertEqual(0.9, over.capacity)    # above the border: it
        under = self.allocate(pressed, total=0.8)
        self.assertFalse(under.queue_cut)       # a deep disk uncapped
        self.assertFalse(self.allocate(total=1.0).queue_cut)

    def test_shares_within_floor_and_ceiling(self):
        result = self.allocate()
        self.assertAlmostEqual(0.8, float(result.share.sum()))
        self.assertTrue((result.target >= self.loads.floor).all())
        self.assertTrue((result.target <= self.loads.ceil).all())


class MovesTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.snap = domain()
        self.loads = guarantee.Loads.of(self.snap)
        u = self.loads.u
        need = guarantee.unmet_demand(self.snap, self.loads, P, 0.95, None,
                                      np.full(4, math.nan))
        # the capped disk may be raised here
        self.need = need._replace(may_raise=np.array([0, 0, 0, 1], bool))
        share = np.array([0.3, 0.3, u[2], 0.3])
        self.shares = guarantee.Allocation(0.8, False, share, 0.3, share)

    def moves(self, loads=None, shares=None, domain=0.95, engaged=True,
              cut_over_border=True, room=math.inf):
        return guarantee.moves(self.snap, loads or self.loads, self.need, P,
                               shares or self.shares, domain, 0.9, engaged,
                               cut_over_border, room=room)

    def test_the_deep_disk_above_its_share_is_cut(self):
        move = self.moves()
        # not the shallow one above its share, nor those under it
        self.assertEqual([True, False, False, False], move.tighten.tolist())
        self.assertEqual(0.3, move.new[0])
        self.assertFalse(self.moves(engaged=False).tighten.any())

    def test_raised_by_release_factor_at_most_and_released_at_hold(self):
        move = self.moves()
        cap = self.loads.cap[3]
        self.assertEqual([False, False, False, True], move.loosen.tolist())
        self.assertAlmostEqual(cap * P.release_factor, move.new[3])
        self.assertFalse(move.release.any() or move.small.any())
        held = self.moves(loads=self.loads._replace(hold=np.full(4, 0.15)))
        self.assertEqual([False, False, False, True], held.release.tolist())
        # a move under confirm_change waits for a second decision
        near = self.shares.target.copy()
        near[3] = cap * 1.13
        small = self.moves(shares=self.shares._replace(target=near))
        self.assertTrue(small.loosen[3] and small.small[3])

    def test_raised_only_into_the_room_left(self):
        cap = self.loads.cap[3]
        wide = self.moves(room=cap)                 # x1.5 fits
        self.assertAlmostEqual(cap * P.release_factor, wide.new[3])
        narrow = self.moves(room=cap * 0.2)
        self.assertAlmostEqual(cap * 1.2, narrow.new[3])
        self.assertTrue(narrow.loosen[3])
        # less than a step's worth of room: no raise; the cut is as it was
        none = self.moves(room=-0.1)
        self.assertFalse(none.loosen.any())
        self.assertEqual(self.loads.cap[3], none.new[3])
        self.assertEqual([True, False, False, False], none.tighten.tolist())
        self.assertEqual(0.3, none.new[0])

    def test_the_raise_step_follows_the_side_of_the_last_cut(self):
        above = self.moves(domain=0.95, cut_over_border=False)
        self.assertTrue(above.cut_over_border)
        self.assertEqual(P.min_change, above.step)    # above the border
        under = self.moves(domain=0.85)               # a cut under it
        self.assertFalse(under.cut_over_border)
        self.assertEqual(P.min_change, under.step)
        no_cut = self.moves(domain=0.85, engaged=False)
        self.assertTrue(no_cut.cut_over_border)       # kept
        self.assertEqual(P.raise_change, no_cut.step)
        self.assertEqual(P.min_change, no_cut.cut_step)
        queue = self.moves(shares=self.shares._replace(queue_cut=True))
        self.assertEqual(P.raise_change, queue.cut_step)


class RoomTest(test_base.TestCase):

    def test_raises_shrink_in_proportion(self):
        cap = np.array([0.2, 0.3, math.inf, 0.5])
        new = np.array([0.3, 0.45, math.inf, 0.4])
        raised = np.array([True, True, False, False])
        fit = guarantee.within_room(cap, new, raised, 0.1)
        np.testing.assert_allclose([0.24, 0.36, math.inf, 0.4], fit)
        self.assertIs(new, guarantee.within_room(cap, new, raised, 0.25))
        np.testing.assert_allclose(
            [0.2, 0.3, math.inf, 0.4],
            guarantee.within_room(cap, new, raised, -0.05))

    def test_a_miss_is_kept_when_the_one_before_missed_too(self):
        crowding = guarantee.crowding
        first = guarantee.Memory()
        self.assertIsNone(crowding(first, 0.8, True, 100.0))
        again = guarantee.Memory(missing=True)
        self.assertEqual((0.8, 100.0), crowding(again, 0.8, True, 100.0))
        # kept as it is within a refresh at no lower load; lower at once
        last = guarantee.Memory(crowded=(0.8, 100.0), missing=True)
        refresh = 100.0 + guarantee.HELD_REFRESH_S
        self.assertEqual((0.8, 100.0), crowding(last, 0.85, True, 130.0))
        self.assertEqual((0.75, 130.0), crowding(last, 0.75, True, 130.0))
        self.assertEqual((0.85, refresh),
                         crowding(last, 0.85, True, refresh))
        # no miss: kept for CROWDED_S, then forgotten
        held = 100.0 + guarantee.CROWDED_S
        self.assertEqual((0.8, 100.0), crowding(last, 0.5, False, held))
        self.assertIsNone(crowding(last, 0.5, False, held + 1.0))
