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

"""The engine's plan: each rule the controller and the simulator share."""

import math

from iotguard.engine import plan
from iotguard.policy import base as policy_base
from iotguard.tests import base
from iotguard.tests.unit.policy import fakes

T0 = 1_800_000_000.0
LEASE_S, INTERVAL_S = 15.0, 5.0


def cap(disk, reason='test', **limits):
    return policy_base.Decision(disk, policy_base.CAP, reason, **limits)


def release(disk, reason='test'):
    return policy_base.Decision(disk, policy_base.RELEASE, reason)


def in_force(expires_at=T0 + LEASE_S, **limits):
    return plan.InForce(limits, expires_at)


def applies(result):
    """The plan's new or changed caps."""
    return tuple(c for c in result.changes if c.limits is not None)


def releases(result):
    """The plan's releases."""
    return tuple(c for c in result.changes if c.limits is None)


class PlanTest(base.TestCase):

    def plan(self, snapshot, decisions, caps, now=T0):
        return plan.plan(snapshot, decisions, caps, now, LEASE_S,
                         INTERVAL_S)

    def test_new_cap_with_its_wire_limits(self):
        snap = fakes.snapshot(fakes.disk('a', 10.0), fakes.disk('b', 10.0))
        decision = cap('b', iops=100.4, bytes_sec=math.inf)
        result = self.plan(snap, [decision], [None, None])
        self.assertEqual((plan.Change(1, decision,
                                      {'total_iops_sec': 100}),),
                         result.changes)
        self.assertEqual(result.changes, applies(result))
        self.assertEqual(((), (), (), ()), (releases(result), result.renewals,
                                            result.dropped, result.unknown))

    def test_unknown_disk_is_not_carried_out(self):
        snap = fakes.snapshot(fakes.disk('a', 10.0))
        result = self.plan(snap, [cap('ghost', iops=1.0)], [None])
        self.assertEqual((('ghost',), ()), (result.unknown, result.changes))

    def test_tightening_on_stale_samples_is_dropped(self):
        snap = fakes.snapshot(fakes.disk('a', stale=True, cap_iops=50.0),
                              fakes.disk('b', stale=True))
        tighter, first = cap('a', iops=40.0), cap('b', bytes_sec=1e6)
        result = self.plan(snap, [tighter, first],
                           [in_force(total_iops_sec=50), None])
        self.assertEqual(((tighter, first), ()),
                         (result.dropped, result.changes))

    def test_loosening_on_stale_samples_is_kept(self):
        snap = fakes.snapshot(fakes.disk('a', stale=True, cap_iops=50.0))
        looser = cap('a', iops=75.0)
        result = self.plan(snap, [looser], [in_force(total_iops_sec=50)])
        self.assertEqual(((), (plan.Change(0, looser,
                                           {'total_iops_sec': 75}),)),
                         (result.dropped, result.changes))

    def test_tightening_on_fresh_samples_is_kept(self):
        snap = fakes.snapshot(fakes.disk('a', 10.0, cap_iops=50.0))
        result = self.plan(snap, [cap('a', iops=40.0)],
                           [in_force(total_iops_sec=50)])
        self.assertEqual(({'total_iops_sec': 40}, ()),
                         (result.changes[0].limits, result.dropped))

    def test_unchanged_cap_is_skipped_and_renewed_when_due(self):
        snap = fakes.snapshot(fakes.disk('a', 10.0, cap_iops=50.0))
        caps = [in_force(total_iops_sec=50)]
        # 50.3 goes on the wire as 50: the cap in force
        result = self.plan(snap, [cap('a', iops=50.3)], caps)
        self.assertEqual(((), ()), (result.changes, result.renewals))
        result = self.plan(snap, [cap('a', iops=50.3)], caps,
                           now=T0 + INTERVAL_S)
        self.assertEqual(((), (0,)), (result.changes, result.renewals))

    def test_a_lift_is_sent_every_round_never_renewed(self):
        # a burst lasts only while the policy grants it again: a renewal
        # would send the limits without lift (back under the static ones)
        snap = fakes.snapshot(fakes.disk('a', 10.0, cap_iops=50.0))
        caps = [in_force(total_iops_sec=50)]
        lifted = cap('a', iops=50.3, lift=True)
        result = self.plan(snap, [lifted], caps, now=T0 + INTERVAL_S)
        self.assertEqual(((0,), ()), (tuple(c.disk for c in result.changes),
                                      result.renewals))
        self.assertTrue(result.changes[0].decision.lift)

    def test_release_only_when_a_cap_is_in_force(self):
        snap = fakes.snapshot(fakes.disk('a', 10.0, cap_iops=50.0),
                              fakes.disk('b', 10.0))
        calm, noop = release('a'), release('b')
        result = self.plan(snap, [calm, noop],
                           [in_force(total_iops_sec=50), None])
        self.assertEqual((plan.Change(0, calm, None),), result.changes)
        self.assertEqual(result.changes, releases(result))
        self.assertEqual((), applies(result))

    def test_caps_in_force_renewed_when_due(self):
        snap = fakes.snapshot(fakes.disk('a', 10.0, cap_iops=50.0),
                              fakes.disk('b', 10.0, cap_iops=50.0),
                              fakes.disk('c', 10.0))
        caps = [in_force(expires_at=T0 + 8.0, total_iops_sec=50),
                in_force(expires_at=T0 + 14.0, total_iops_sec=50), None]
        self.assertEqual((0,), self.plan(snap, [], caps).renewals)
        self.assertEqual((0, 1), self.plan(snap, [], caps,
                                           now=T0 + 2.5).renewals)

    def test_a_decided_disk_is_not_renewed_again(self):
        snap = fakes.snapshot(fakes.disk('a', 10.0, cap_iops=50.0),
                              fakes.disk('b', 10.0, cap_iops=50.0),
                              fakes.disk('c', 10.0, cap_iops=50.0))
        caps = [in_force(expires_at=T0, total_iops_sec=50)] * 3
        result = self.plan(snap, [cap('a', iops=40.0), release('b')], caps)
        self.assertEqual((2,), result.renewals)
        self.assertEqual([0, 1], [c.disk for c in result.changes])

    def test_decisions_kept_in_the_order_decided(self):
        snap = fakes.snapshot(fakes.disk('a', 10.0, cap_iops=50.0),
                              fakes.disk('b', 10.0))
        result = self.plan(snap, [cap('b', iops=5.0), release('a')],
                           [in_force(total_iops_sec=50), None])
        self.assertEqual([1, 0], [c.disk for c in result.changes])
        self.assertEqual(([1], [0]), ([c.disk for c in applies(result)],
                                      [c.disk for c in releases(result)]))

    def test_renew_due(self):
        self.assertFalse(plan.renew_due(T0 + 15, T0, 15, 5))
        self.assertFalse(plan.renew_due(T0 + 15, T0 + 2, 15, 5))
        self.assertTrue(plan.renew_due(T0 + 15, T0 + 5, 15, 5))
        # the simulator's caps never lapse: never due
        self.assertFalse(plan.renew_due(math.inf, T0, math.inf, 5))
