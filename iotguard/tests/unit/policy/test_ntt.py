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

import math

from iotguard import policy
from iotguard.policy import base
from iotguard.policy import ntt
from iotguard.tests import base as test_base
from iotguard.tests.unit.policy import fakes

KIB = fakes.KIB
# 64 KiB ops in the test profile: 1 / (1/1000 + 65536/6553600) per second.
OPS_MAX_64K = 1.0 / 0.011
BORDER_OPS = 0.9 * OPS_MAX_64K          # 81.8 ops/s


class TestNttPolicy(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.policy = ntt.NttPolicy()

    def test_defaults(self):
        self.assertEqual((0.9, 0.5, 60.0, 5.0),
                         (self.policy.border_ratio, self.policy.rate,
                          self.policy.cap_time, self.policy.cap_interval))

    def test_below_border_nothing(self):
        snap = fakes.snapshot(fakes.disk('a', ops=50),
                              fakes.disk('b', ops=31))
        self.assertLess(81, BORDER_OPS)
        self.assertEqual([], self.policy.decide(snap, None, 0.0)[0])

    def test_above_border_highest_disk_capped_at_rate_times_b(self):
        snap = fakes.snapshot(fakes.disk('a', ops=20),
                              fakes.disk('heavy', ops=50),
                              fakes.disk('c', ops=12.5))
        self.assertGreater(82.5, BORDER_OPS)
        decisions = fakes.by_disk(self.policy.decide(snap, None, 0.0)[0])
        self.assertEqual(['heavy'], list(decisions))
        cap = decisions['heavy']
        self.assertEqual(base.CAP, cap.action)
        self.assertEqual(25.0, cap.iops)
        self.assertEqual(0.5 * 50 * 64 * KIB, cap.bytes_sec)
        self.assertAlmostEqual(0.9 * OPS_MAX_64K * 64 * KIB,
                               cap.numbers['b_border'])
        self.assertAlmostEqual(BORDER_OPS, cap.numbers['i_border'])
        self.assertEqual(82.5 * 64 * KIB, cap.numbers['sum_bytes_sec'])
        self.assertIn('bandwidth', cap.reason)
        self.assertIn('IOPS', cap.reason)

    def test_bandwidth_and_iops_pick_different_disks(self):
        # io_size pins the "workload" size: 64 KiB, so the IOPS border is
        # 81.8 ops/s and the bandwidth border 81.8 * 64 KiB.
        policy = ntt.NttPolicy(rate=0.4, io_size=64 * KIB)
        snap = fakes.snapshot(fakes.disk('small', ops=100, size=4 * KIB),
                              fakes.disk('big', ops=85, size=64 * KIB),
                              fakes.disk('mid', ops=10, size=16 * KIB))
        decisions = fakes.by_disk(policy.decide(snap, None, 0.0)[0])
        self.assertEqual(['big', 'small'], sorted(decisions))
        self.assertEqual(0.4 * 85 * 64 * KIB, decisions['big'].bytes_sec)
        self.assertEqual(math.inf, decisions['big'].iops)
        self.assertAlmostEqual(0.4 * 100, decisions['small'].iops)
        self.assertEqual(math.inf, decisions['small'].bytes_sec)

    def test_only_bandwidth_border_crossed(self):
        policy = ntt.NttPolicy(io_size=64 * KIB)
        # 80 ops/s under the IOPS border, but at 128 KiB the bytes are
        # twice the bandwidth border.
        snap = fakes.snapshot(fakes.disk('a', ops=50, size=128 * KIB),
                              fakes.disk('b', ops=30, size=128 * KIB))
        decisions = fakes.by_disk(policy.decide(snap, None, 0.0)[0])
        self.assertEqual(['a'], list(decisions))
        self.assertEqual(math.inf, decisions['a'].iops)
        self.assertEqual(0.5 * 50 * 128 * KIB, decisions['a'].bytes_sec)

    def test_capped_disk_picked_again_gets_cap_restarted(self):
        snap = fakes.snapshot(
            fakes.disk('heavy', ops=60, cap_iops=60,
                       cap_bytes_sec=60 * 64 * KIB, cap_set_at=30.0),
            fakes.disk('b', ops=30))
        decisions = fakes.by_disk(self.policy.decide(snap, None, 40.0)[0])
        cap = decisions['heavy']
        self.assertEqual(base.CAP, cap.action)
        self.assertEqual(30.0, cap.iops)
        self.assertEqual(30 * 64 * KIB, cap.bytes_sec)
        self.assertIn('restarted', cap.reason)
        self.assertEqual(10.0, cap.numbers['lease_age_s'])

    def test_restart_is_emitted_even_with_the_same_value(self):
        snap = fakes.snapshot(
            fakes.disk('heavy', ops=60, cap_iops=30,
                       cap_bytes_sec=30 * 64 * KIB, cap_set_at=30.0),
            fakes.disk('b', ops=30))
        decisions = fakes.by_disk(self.policy.decide(snap, None, 40.0)[0])
        self.assertEqual(30.0, decisions['heavy'].iops)
        self.assertEqual(30 * 64 * KIB, decisions['heavy'].bytes_sec)

    def test_released_when_cap_time_elapsed_not_before(self):
        disks = [fakes.disk('was_heavy', ops=10, cap_iops=20,
                            cap_bytes_sec=20 * 64 * KIB, cap_set_at=100.0),
                 fakes.disk('b', ops=10)]
        snap = fakes.snapshot(*disks)
        self.assertEqual([], self.policy.decide(snap, None, 159.0)[0])
        decisions = fakes.by_disk(self.policy.decide(snap, None, 160.0)[0])
        self.assertEqual(base.RELEASE, decisions['was_heavy'].action)
        self.assertEqual(['was_heavy'], list(decisions))
        decisions = fakes.by_disk(ntt.NttPolicy(cap_time=10.0).decide(
            snap, None, 110.0)[0])
        self.assertEqual(base.RELEASE, decisions['was_heavy'].action)

    def test_cap_of_unknown_age_is_released(self):
        snap = fakes.snapshot(fakes.disk('a', ops=1, cap_iops=5))
        decisions = fakes.by_disk(self.policy.decide(snap, None, 0.0)[0])
        self.assertEqual(base.RELEASE, decisions['a'].action)

    def test_expired_other_kind_dropped_when_picked(self):
        policy = ntt.NttPolicy(io_size=64 * KIB)
        snap = fakes.snapshot(
            fakes.disk('a', ops=50, size=128 * KIB, cap_iops=70,
                       cap_set_at=0.0),
            fakes.disk('b', ops=30, size=128 * KIB))
        cap = fakes.by_disk(policy.decide(snap, None, 60.0)[0])['a']
        self.assertEqual(math.inf, cap.iops)
        cap = fakes.by_disk(policy.decide(snap, None, 30.0)[0])['a']
        self.assertEqual(70.0, cap.iops)
        self.assertEqual(0.5 * 50 * 128 * KIB, cap.bytes_sec)

    def test_stale_disks_not_summed_nor_picked(self):
        snap = fakes.snapshot(fakes.disk('stale', ops=70, stale=True),
                              fakes.disk('b', ops=50),
                              fakes.disk('c', ops=35))
        decisions = fakes.by_disk(self.policy.decide(snap, None, 0.0)[0])
        self.assertEqual(['b'], list(decisions))
        self.assertEqual(85 * 64 * KIB, decisions['b'].numbers[
            'sum_bytes_sec'])
        snap = fakes.snapshot(fakes.disk('stale', ops=90, stale=True),
                              fakes.disk('b', ops=50))
        self.assertEqual([], self.policy.decide(snap, None, 0.0)[0])

    def test_empty_domain(self):
        self.assertEqual(([], None),
                         self.policy.decide(fakes.snapshot(), None, 0.0))

    def test_cap_time_must_exceed_cap_interval(self):
        for cap_time, cap_interval in ((5, 5), (4, 5), (60, 61)):
            err = self.assertRaises(ValueError, ntt.NttPolicy,
                                    cap_time=cap_time,
                                    cap_interval=cap_interval)
            self.assertIn('cap_time', str(err))
        ntt.NttPolicy(cap_time=5.5, cap_interval=5)

    def test_bad_parameters_are_named(self):
        for name, value in (('rate', 0), ('rate', 1), ('rate', -0.5),
                            ('rate', float('nan')), ('border_ratio', 0),
                            ('border_ratio', 1.2), ('cap_interval', 0),
                            ('io_size', 0)):
            err = self.assertRaises(ValueError, ntt.NttPolicy,
                                    **{name: value})
            self.assertIn(name, str(err))
        ntt.NttPolicy(border_ratio=1.0, rate=0.99)
        err = self.assertRaises(ValueError, ntt.NttPolicy, ratio=0.5)
        self.assertIn('ratio', str(err))

    def test_loaded_by_name(self):
        loaded = policy.load('ntt', rate=0.3)
        self.assertIsInstance(loaded, ntt.NttPolicy)
        self.assertEqual(0.3, loaded.rate)
        self.assertEqual('ntt', loaded.name)
