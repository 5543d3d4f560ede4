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

import json
import math

import numpy as np

from iotguard.policy import base
from iotguard.policy import burst
from iotguard.policy import guarantee
from iotguard.tests import base as test_base
from iotguard.tests.unit.policy import fakes

KIB = fakes.KIB
#: floor 5 IOPS, ceiling 10, a burst to 4 x 5 = 20 IOPS for 60 s: at
#: 64 KiB (0.011 device-seconds an op) 0.055, 0.11 and 0.22
BURSTY = base.Tier('bursty', min_iops=5, max_iops=10, burst_factor=4,
                   burst_seconds=60)
SILVER = base.Tier('silver', min_iops=20)


def arrays(*values):
    return tuple(np.array(v, dtype=np.float64) for v in values)


class TestAccrue(test_base.TestCase):

    def accrue(self, credits, load, dt=5.0, most=60.0):
        out, used = burst.accrue(*arrays([credits], [2.0], [load], [1.0],
                                         [2.0], [most]), dt)
        return float(out[0]), float(used[0])

    def test_earned_below_the_floor_in_proportion(self):
        self.assertEqual((15.0, 2.0), self.accrue(10.0, 0.0))
        self.assertEqual((12.5, 2.0), self.accrue(10.0, 0.5))
        # at the floor or above, up to the ceiling: nothing moves
        self.assertEqual((10.0, 2.0), self.accrue(10.0, 1.0))
        self.assertEqual((10.0, 2.0), self.accrue(10.0, 2.0))

    def test_spent_above_the_ceiling(self):
        self.assertEqual((5.0, 7.0), self.accrue(10.0, 3.0))
        # never below none
        self.assertEqual((0.0, 7.0), self.accrue(2.0, 3.0))

    def test_capped_at_burst_seconds(self):
        self.assertEqual((60.0, 2.0), self.accrue(58.0, 0.0))

    def test_no_burst_no_credits(self):
        self.assertEqual((0.0, 2.0), self.accrue(10.0, 0.0, most=0.0))


class TestGrant(test_base.TestCase):

    def grant(self, credits=(60.0, 60.0), spare=0.5, short=False,
              load=(1.0, 1.0)):
        return burst.grant(*arrays(load, [1.0, 1.0], [4.0, 4.0], credits),
                           np.array([True, True]), spare, short, 5.0)

    def test_spare_shared_among_the_disks_that_burst(self):
        g = self.grant()
        self.assertEqual([True, True], g.granted.tolist())
        self.assertEqual([1.25, 1.25], g.load.tolist())
        # never above the burst ceiling
        self.assertEqual([4.0, 4.0], self.grant(spare=10.0).load.tolist())

    def test_none_while_a_floor_is_short_or_without_room(self):
        for kw in ({'short': True}, {'spare': 0.0}, {'spare': -0.2}):
            self.assertFalse(self.grant(**kw).granted.any(), kw)

    def test_an_interval_of_credits_at_least(self):
        g = self.grant(credits=(4.9, 5.0))
        self.assertEqual([False, True], g.granted.tolist())
        self.assertEqual(1.5, g.load[1])


def memory(disk_ids, credits, at=95.0):
    return guarantee.Memory(disk_ids=disk_ids,
                            asked=np.full(len(disk_ids), math.nan),
                            wanted=np.zeros(len(disk_ids)),
                            credits=np.array(credits, dtype=np.float64),
                            used=np.zeros(len(disk_ids)), at=at)


class TestGuaranteeBursts(test_base.TestCase):

    def decide(self, state, *disks, now=100.0):
        decisions, new = guarantee.GuaranteePolicy().decide(
            fakes.snapshot(*disks), state, now)
        return fakes.by_disk(decisions), new

    def bursty(self, name='b', ops=10.0, **kw):
        # Nova's static limits hold it at its tier's ceiling
        return fakes.disk(name, ops=ops, tier=BURSTY, latency_ms=5.0,
                          static_iops=10, static_bytes_sec=10 * 64 * KIB,
                          **kw)

    def test_granted_from_headroom_lifting_the_static_limits(self):
        got, new = self.decide(memory(('b', 's'), [60.0, 0.0]),
                               self.bursty(),
                               fakes.disk('s', ops=20, tier=SILVER,
                                          latency_ms=5.0))
        self.assertTrue(got['b'].lift)
        self.assertEqual(20.0, got['b'].iops)       # 4 x its floor
        self.assertEqual(20 * 64 * KIB, got['b'].bytes_sec)
        self.assertNotIn('s', got)
        self.assertEqual(60.0, got['b'].numbers['credits'])
        self.assertEqual(100.0, new.at)
        # running above its ceiling spends a second per second
        got, new = self.decide(new, self.bursty(
            ops=20, cap_iops=20, cap_bytes_sec=20 * 64 * KIB,
            cap_set_at=100.0),
            fakes.disk('s', ops=20, tier=SILVER, latency_ms=5.0), now=105.0)
        self.assertTrue(got['b'].lift)
        self.assertEqual([55.0, 5.0], [new.credits[0], new.used[0]])

    def test_taken_back_first_when_a_floor_holder_asks(self):
        # the silver disk below its floor, slow with a queue: starving
        got, _ = self.decide(
            memory(('b', 's'), [60.0, 0.0]),
            self.bursty(ops=20, cap_iops=20, cap_bytes_sec=20 * 64 * KIB,
                        cap_set_at=95.0),
            fakes.disk('s', ops=10, tier=SILVER, latency_ms=200.0))
        self.assertFalse(got['b'].lift)
        self.assertEqual(base.CAP, got['b'].action)
        self.assertLessEqual(got['b'].iops, 10.0)
        self.assertLessEqual(got['b'].bytes_sec, 10 * 64 * KIB)

    def test_no_credits_on_a_new_or_recreated_disk(self):
        # a volume created again has a new id: the old one's credits
        # are not its own
        for state in (None, memory(('b-old',), [60.0])):
            got, new = self.decide(state, self.bursty('b-new'))
            self.assertEqual({}, got, state)
            self.assertEqual(0.0, new.credits[list(new.disk_ids).index(
                'b-new')])
        # idle, it earns them: a second per second below its floor
        _, new = self.decide(memory(('b',), [0.0], at=90.0),
                             self.bursty(ops=0.0))
        self.assertEqual(10.0, new.credits[0])

    def test_credits_kept_by_disk_id_through_json(self):
        kept = memory(('a', 'b', 'c'), [0.0, 12.5, 0.0])
        data = json.loads(json.dumps(kept.to_dict()))
        self.assertEqual({'b': [12.5, 0.0]}, data['burst'])
        back = guarantee.Memory.from_dict(data)
        self.assertEqual([12.5, 0.0], [float(v) for v in back.bursts(
            ('b', 'new'))[0]])
        self.assertEqual(95.0, back.at)
        # a memory without bursts writes none
        self.assertNotIn('burst', memory(('a',), [0.0]).to_dict())

    def test_a_burst_needs_factor_and_seconds(self):
        for kw in ({'burst_factor': 1.0, 'burst_seconds': 60},
                   {'burst_factor': 2.0},
                   {'burst_seconds': 60},
                   {'burst_factor': -2.0, 'burst_seconds': 60}):
            self.assertRaises(ValueError, base.Tier, 't', **kw)
