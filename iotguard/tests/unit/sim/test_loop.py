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


from iotguard.policy import base as policy_base
from iotguard.sim import loop
from iotguard.tests import base
from iotguard.tests.unit.sim import helpers


class Recorder:
    """A tiny policy: caps the first disk at 10 s, releases it at 20 s."""

    name = 'recorder'

    def __init__(self, cap_bytes=131072.0):
        self.cap_bytes = cap_bytes
        self.seen = []

    def decide(self, snapshot, state, now):
        self.seen.append((now, snapshot))
        disk = snapshot.disk_ids[0]
        if now == 10.0:
            return [policy_base.Decision(disk, policy_base.CAP, 'test',
                                         bytes_sec=self.cap_bytes)], None
        if now == 20.0:
            return [policy_base.Decision(disk, policy_base.RELEASE,
                                         'test')], None
        return [], None


class Stepper:
    """Caps the first disk at 10 s, lowers it at 15 s, raises it at 20 s."""

    name = 'stepper'

    def decide(self, snapshot, state, now):
        caps = {10.0: 131072.0, 15.0: 65536.0, 20.0: 262144.0}
        if now not in caps:
            return [], None
        return [policy_base.Decision(snapshot.disk_ids[0], policy_base.CAP,
                                     'test', bytes_sec=caps[now])], None


class Repeater(Recorder):
    """Caps the first disk at 10 s and answers the same cap after that."""

    name = 'repeater'

    def decide(self, snapshot, state, now):
        self.seen.append((now, snapshot))
        if now < 10.0:
            return [], None
        return [policy_base.Decision(snapshot.disk_ids[0], policy_base.CAP,
                                     'test', bytes_sec=self.cap_bytes),
                policy_base.Decision(snapshot.disk_ids[1],
                                     policy_base.RELEASE, 'test')], None


class TestLoop(base.TestCase):

    def run_loop(self, policy, **overrides):
        sc = helpers.make(duration_s=30, **overrides)
        return loop.run(sc, policy, seed=0)

    def test_snapshot_is_what_an_agent_measures(self):
        policy = Recorder()
        run = self.run_loop(policy)
        self.assertEqual([5.0 * k for k in range(1, 7)],
                         [t for t, _ in policy.seen])
        _, snap = policy.seen[1]
        self.assertEqual('pool', snap.domain)
        self.assertEqual(5.0, snap.interval_s)
        self.assertEqual((300.0, 3400000.0), (snap.profile.iops_4k,
                                              snap.profile.bytes_sec))
        # the light VM asks 300 KB/s and gets a little less next to the
        # heavy one: 1 / (4 ** 1.5 + 1) of speed(5) = 0.84 device-s/s
        cost = 1 / 300 + 65536 / 3400000
        self.assertAlmostEqual(0.84 / 9 / cost * 65536, snap.bytes_sec[1],
                               delta=13200)
        self.assertAlmostEqual(snap.bytes_sec[1] / 65536, snap.iops[1])
        self.assertEqual([614400.0, 614400.0], snap.floor_bytes_sec.tolist())
        self.assertTrue(all(snap.latency_ms > 0))
        self.assertFalse(snap.stale.any())
        self.assertFalse(snap.capped.any())
        # the recorded series agree with the snapshot
        self.assertAlmostEqual(snap.bytes_sec[0] / 1024, run.kbs[1, 0])
        self.assertAlmostEqual(snap.bytes_sec[1] / 1024, run.kbs[1, 1])

    def test_cap_is_applied_and_released(self):
        policy = Recorder(cap_bytes=131072.0)
        run = self.run_loop(policy)
        # windows [10, 15) and [15, 20) run under the 128 KB/s cap (the
        # first also completes the 4 requests already in the storage)
        self.assertGreater(run.kbs[1, 0], 500)
        self.assertLessEqual(run.kbs[2, 0], 128 + 4 * 64 / 5 + 13)
        self.assertLessEqual(run.kbs[3, 0], 128 + 13)
        self.assertGreater(run.kbs[5, 0], 500)
        _, snap = policy.seen[2]
        self.assertEqual(131072.0, snap.cap_bytes_sec[0])
        self.assertEqual(10.0, snap.cap_set_at[0])
        self.assertTrue(snap.capped[0])
        _, snap = policy.seen[4]
        self.assertFalse(snap.capped.any())
        self.assertEqual([('cap', True), ('release', True)],
                         [(a.action, a.changed) for a in run.actions])
        self.assertEqual([10.0, 20.0], [a.time for a in run.actions])

    def test_an_unchanged_cap_is_not_applied_again(self):
        # as in the controller (iotguard.engine.plan): the cap is applied
        # once, keeps its set time, and the uncapped disk is not released
        policy = Repeater()
        run = self.run_loop(policy)
        self.assertEqual([(10.0, 'cap', True)],
                         [(a.time, a.action, a.changed)
                          for a in run.actions])
        self.assertEqual([10.0] * 4,
                         [snap.cap_set_at[0] for now, snap in policy.seen
                          if now > 10.0])

    def test_only_a_lower_cap_is_a_throttle(self):
        run = self.run_loop(Stepper())
        self.assertEqual([(10.0, True), (15.0, True), (20.0, False)],
                         [(a.time, a.tightened) for a in run.actions])
        run = self.run_loop(Recorder())
        self.assertEqual([True, False],
                         [a.tightened for a in run.actions])

    def test_release_restores_static_limits(self):
        vms = [helpers.vm('a', [{'bs': 65536, 'processes': 2}],
                          limits={'total_bytes_sec': 300000}),
               helpers.vm('b', [{'bs': 65536, 'processes': 1}])]
        run = self.run_loop(Recorder(cap_bytes=65536.0), vms=vms)
        self.assertLessEqual(run.kbs[3, 0], 64 + 13)
        # after the release the static 300000 B/s hold again
        self.assertAlmostEqual(300000 / 1024, run.kbs[5, 0], delta=15)

    def test_demand_and_capacity_are_recorded(self):
        run = self.run_loop(Recorder())
        cost = 1 / 300 + 65536 / 3400000
        # heavy: 4 processes alone; light: its 300 KB/s
        self.assertAlmostEqual((4 / 12) ** 0.2, run.demand[0, 0])
        self.assertAlmostEqual(300 * 1024 / 65536 * cost, run.demand[0, 1])
        self.assertEqual([4.0, 1.0], run.slots[0].tolist())
        self.assertAlmostEqual((5 / 12) ** 0.2, run.capacity[0])
        self.assertEqual([0.0], run.change_times)
        self.assertEqual((6, 2), run.floor.shape)
        for floor in run.floor[:, 0]:
            self.assertAlmostEqual(614400 / 65536 * cost, floor)

    def test_a_tier_changed_mid_run(self):
        """The policy sees the new tier from then on; so do the measures."""
        tiers = [{'name': 'std', 'min_bytes_sec': 614400, 'weight': 1},
                 {'name': 'gold', 'min_bytes_sec': 1228800, 'weight': 4}]
        vms = [helpers.vm('heavy', [{'bs': 65536, 'processes': 4}]),
               helpers.vm('light', [{'bs': 65536, 'processes': 1}],
                          tier_changes=[{'at': 12, 'tier': 'gold'}])]
        policy = Recorder()
        run = self.run_loop(policy, tiers=tiers, vms=vms)
        floors = [snap.floor_bytes_sec[1] for _t, snap in policy.seen]
        # the change at 12 s: from the window [10, 15) on, seen by the
        # decision at its end
        self.assertEqual([614400.0, 614400.0, 1228800.0, 1228800.0,
                          1228800.0, 1228800.0], floors)
        self.assertEqual([0.0, 12.0], run.change_times)
        self.assertEqual([1.0, 1.0, 4.0, 4.0, 4.0, 4.0],
                         run.weight[:, 1].tolist())
        self.assertEqual(run.floor[0, 0], run.floor[-1, 0])
        self.assertAlmostEqual(2 * run.floor[0, 1], run.floor[-1, 1])


class TestFastPath(base.TestCase):
    """1 s samples between 5 s rounds, urgent decisions in between."""

    def run_fast(self, fast, **vms):
        # the light VM (a 300 KB/s floor-holder) sleeps 7 s, then wakes
        # next to a flood that took everything meanwhile
        sc = helpers.make(duration_s=20, vms=[
            helpers.vm('heavy', [{'rw': 'randwrite', 'bs': 65536,
                                  'processes': 8}], role='heavy'),
            helpers.vm('light', [{'rw': 'randwrite', 'bs': 65536,
                                  'rate_kbs': 300, 'steps': [
                                      {'at': 0, 'processes': 0},
                                      {'at': 7, 'processes': 1}]}],
                       role='light')])
        policy = Recorder()
        return loop.run(sc, policy, seed=0, fast=fast), policy

    def test_windows_are_samples_rounds_stay_and_urgent_ones_come(self):
        run, policy = self.run_fast(loop.FastPath(1.0, 0.0))
        self.assertEqual(1.0, run.window_s)
        self.assertEqual(20, len(run.times))
        self.assertEqual([5.0, 10.0, 15.0, 20.0], [t for t, _ in policy.seen])
        # the snapshot says the rounds' interval, its rates one sample's
        self.assertEqual(5.0, policy.seen[0][1].interval_s)
        run, policy = self.run_fast(loop.FastPath(1.0, 1.0))
        seen = [t for t, _ in policy.seen]
        # the wake-up at 7 s, seen at the end of its first sample: the
        # light disk rose and is short of its floor next to the flood
        self.assertIn(8.0, seen)
        self.assertTrue({5.0, 10.0, 15.0, 20.0} <= set(seen))
        # the first urgent decision then; at most one a second (this
        # policy caps nothing: the light disk stays short)
        urgent = sorted(set(seen) - {5.0, 10.0, 15.0, 20.0})
        self.assertEqual(8.0, urgent[0])
        self.assertTrue(all(b - a >= 1.0 for a, b in zip(urgent,
                                                         urgent[1:])))

    def test_the_sample_interval_divides_the_rounds(self):
        for bad in (2.0, 0.0, 7.0):
            self.assertRaises(ValueError, loop.FastPath(bad).rounds_every,
                              5.0)
        self.assertEqual(5, loop.FastPath(1.0).rounds_every(5.0))

    def test_no_watch_is_as_before(self):
        # the figures of this run before the watch was modelled
        run, policy = self.run_fast(loop.FastPath(1.0, 1.0))
        self.assertEqual([5.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0,
                          16.0, 20.0], [t for t, _ in policy.seen])
        self.assertEqual([0.0] * 7 + [64.0, 128.0, 128.0, 576.0, 256.0,
                                      320.0, 320.0, 320.0, 256.0, 320.0,
                                      320.0, 256.0, 320.0],
                         run.kbs[:, 1].round(3).tolist())
        again, _ = self.run_fast(loop.FastPath(1.0, 1.0, watch_s=0.0))
        self.assertEqual(run.kbs.tolist(), again.kbs.tolist())
        self.assertEqual(run.actions, again.actions)


class Capper:
    """Caps the first disk (128 KB/s) whenever it is busy."""

    name = 'capper'

    def __init__(self):
        self.seen = []

    def decide(self, snapshot, state, now):
        self.seen.append(now)
        if snapshot.iops[0] > 0:
            return [policy_base.Decision(snapshot.disk_ids[0],
                                         policy_base.CAP, 'test',
                                         bytes_sec=131072.0)], None
        return [], None


class TestWatch(base.TestCase):
    """Watch steps inside 1 s samples: early samples, early caps."""

    def run_watch(self, fast):
        # a flood starts at 7.5 s, inside the sample [7, 8), next to a
        # floor-holder
        sc = helpers.make(duration_s=10, vms=[
            helpers.vm('heavy', [{'rw': 'randwrite', 'bs': 65536,
                                  'steps': [{'at': 0, 'processes': 0},
                                            {'at': 7.5, 'processes': 8}]}],
                       role='heavy'),
            helpers.vm('light', [{'rw': 'randwrite', 'bs': 65536,
                                  'processes': 1, 'rate_kbs': 300}],
                       role='light')])
        policy = Capper()
        return loop.run(sc, policy, seed=0, fast=fast), policy.seen

    def test_the_first_cap_lands_inside_the_window(self):
        without, seen = self.run_watch(loop.FastPath(1.0, 0.25))
        self.assertEqual([8.0], [a.time for a in without.actions
                                 if a.action == policy_base.CAP])
        self.assertEqual(1.0, seen[0])
        run, seen = self.run_watch(loop.FastPath(1.0, 0.25, watch_s=0.25))
        # at the start the light disk woke from the first pass's gap:
        # seen at the watch's second read (its first has no rates)
        self.assertEqual(0.5, seen[0])
        # seen after the step [7.5, 7.75) and capped then
        self.assertEqual(7.75, run.actions[0].time)
        self.assertEqual(policy_base.CAP, run.actions[0].action)
        # the windows stay one sample long
        self.assertEqual(1.0, run.window_s)
        self.assertEqual(10, len(run.times))
        # the rest of the window ran under the cap
        self.assertLess(run.kbs[7, 0], without.kbs[7, 0])

    def test_the_watch_divides_the_sample(self):
        for bad in (0.3, 2.0, -0.25):
            self.assertRaisesRegex(ValueError, 'must divide the sample',
                                   loop.FastPath, 1.0, 1.0, bad)
        self.assertEqual(4, loop.FastPath(1.0, 1.0, 0.25).watch_steps())
        self.assertEqual(1, loop.FastPath(1.0, 1.0).watch_steps())
