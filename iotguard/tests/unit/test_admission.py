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

"""Unit tests of the pure admission check."""

from iotguard import admission
from iotguard import exception
from iotguard.tests import base

DOMAIN = {'name': 'local:cn1', 'iops_4k': 10000.0, 'bytes_sec': 400e6}


def _tier(min_iops=0.0, min_bytes_sec=0.0):
    return {'min_iops': min_iops, 'min_bytes_sec': min_bytes_sec}


class CheckTest(base.TestCase):

    def test_load_is_the_cost_model_sum(self):
        # 1000 IOPS of 4 KiB: 0.1 of the seeks + 4.096e6/400e6 of transfer.
        one = 1000 / 10000.0 + 1000 * 4096.0 / 400e6
        numbers = admission.check('gold', DOMAIN, [_tier(1000)] * 2,
                                  [], [_tier(1000)], max_ratio=0.9)
        self.assertAlmostEqual(2 * one, numbers['committed_before'])
        self.assertAlmostEqual(3 * one, numbers['committed_after'])
        self.assertEqual('local:cn1', numbers['domain'])

    def test_nothing_committed_is_a_float(self):
        # The API answers these numbers: 0.0, as JSON clients expect a
        # number of one type, not the integer 0 of an empty sum.
        numbers = admission.check('gold', DOMAIN, [], [], [_tier(1000)],
                                  max_ratio=0.9)
        self.assertIsInstance(numbers['committed_before'], float)
        self.assertIsInstance(admission.committed([], None), float)

    def test_refused_above_ratio_with_numbers(self):
        others = [_tier(2000)] * 4      # 4 * 0.22048 = 0.88192
        exc = self.assertRaises(exception.AdmissionRejected,
                                admission.check, 'gold', DOMAIN, others,
                                [], [_tier(1000)], max_ratio=0.9)
        numbers = exc.kwargs['numbers']
        self.assertGreater(numbers['committed_after'], 0.9)
        self.assertLess(numbers['committed_before'], 0.9)
        self.assertIn('local:cn1', exc.message)
        self.assertEqual(409, exc.code)

    def test_exactly_at_ratio_is_admitted(self):
        # committed_floor_load of (iops, 0) charges iops*4096 bytes too.
        per_iops = 1 / 10000.0 + 4096.0 / 400e6
        iops = 0.5 / per_iops
        numbers = admission.check('t', DOMAIN, [_tier(iops)], [],
                                  [_tier(iops)], max_ratio=1.0)
        self.assertAlmostEqual(1.0, numbers['committed_after'])

    def test_lowering_an_overcommitted_domain_is_admitted(self):
        others = [_tier(5000)] * 2
        numbers = admission.check('bronze', DOMAIN, others, [_tier(3000)],
                                  [_tier(100)], max_ratio=0.9)
        self.assertGreater(numbers['committed_after'], 0.9)
        self.assertLess(numbers['committed_after'],
                        numbers['committed_before'])

    def test_same_tier_again_on_overcommitted_domain_is_admitted(self):
        others = [_tier(5000)] * 2
        admission.check('gold', DOMAIN, others, [_tier(3000)],
                        [_tier(3000)], max_ratio=0.9)

    def test_bytes_floor_counts(self):
        numbers = admission.check('t', DOMAIN, [], [],
                                  [_tier(0, 20e6)], max_ratio=0.9)
        # 20e6 B/s charged at 4 KiB: 4883 IOPS -> 0.488 + 0.05.
        self.assertAlmostEqual(20e6 / 4096 / 10000 + 0.05,
                               numbers['committed_after'])
        self.assertRaises(exception.AdmissionRejected, admission.check, 't',
                          DOMAIN, [_tier(0, 20e6)], [], [_tier(0, 20e6)],
                          max_ratio=0.9)

    def test_profile_out_of_range_counts_as_none(self):
        """A profile stored before the API checked it cannot overflow."""
        for iops_4k, bytes_sec in ((1e-306, 400e6), (10000.0, 1e-300),
                                   (1e10, 400e6), (10000.0, 1e16)):
            domain = dict(DOMAIN, iops_4k=iops_4k, bytes_sec=bytes_sec)
            self.assertIsNone(admission.profile_of(domain))
            self.assertRaises(exception.AdmissionRejected, admission.check,
                              'gold', domain, [], [], [_tier(1e15)],
                              max_ratio=0.9)
        self.assertIsNotNone(admission.profile_of(DOMAIN))

    def test_uncalibrated_domain_refuses_floors_only(self):
        domain = {'name': 'ceph:new', 'iops_4k': None, 'bytes_sec': None}
        numbers = admission.check('besteffort', domain, [_tier(100)], [],
                                  [_tier()], max_ratio=0.9)
        self.assertIsNone(numbers['committed_after'])
        exc = self.assertRaises(exception.AdmissionRejected, admission.check,
                                'gold', domain, [], [], [_tier(10)],
                                max_ratio=0.9)
        self.assertIn('calibrate', exc.message)
