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

from iotguard import exception
from iotguard.policy import base as policy_base
from iotguard.policy import estimator
from iotguard.policy import none
from iotguard.sim import learning
from iotguard.sim import loop
from iotguard.sim import report
from iotguard.sim import scenario
from iotguard.tests import base
from iotguard.tests.unit.sim import helpers

BUCKET = {'name': 'bucket', 'form': 'max', 'iops_4k': 100,
          'bytes_sec': 4194304, 'sat_depth': 1, 'depth_exponent': 0,
          'share_exponent': 1, 'noise': 0.02}
TRUE = policy_base.Profile(100.0, 4194304.0, policy_base.MAX)


def fit(iops, byts, form=policy_base.MAX):
    return estimator.Fit(form=form, iops_4k=iops, bytes_sec=byts, error=0.01,
                         intervals=10, mixes=1, confidence=0.5,
                         identified=('iops_4k',))


class TestLearning(base.TestCase):

    def test_form_is_read_and_checked(self):
        sc = helpers.make(domain=BUCKET)
        self.assertEqual('max', sc.domain.form)
        self.assertEqual(TRUE, sc.domain.profile)
        self.assertEqual(policy_base.ADDITIVE,
                         learning.prior(sc.domain).form)
        self.assertEqual('additive', helpers.make().domain.form)
        self.assertRaises(exception.InvalidScenario, helpers.make,
                          domain=dict(BUCKET, form='min'))

    def test_token_bucket_scenario_ships(self):
        sc = scenario.load('token-bucket')
        self.assertEqual(TRUE, sc.domain.profile)

    def test_converged_from_the_window_it_stays_within(self):
        fits = [None, fit(150, 4e6), fit(105, 4.2e6), fit(80, 4e6),
                fit(95, 4.1e6), fit(101, 4.2e6)]
        result = learning.convergence(fits, TRUE, 5.0)
        self.assertEqual(25.0, result['converged_s'])
        self.assertEqual(101.0, result['fit']['iops_4k'])
        self.assertEqual(['iops_4k'], result['fit']['identified'])
        # the wrong form is not converged, whatever the figures
        fits.append(fit(100, 4194304, policy_base.ADDITIVE))
        self.assertIsNone(learning.convergence(fits, TRUE, 5.0)[
            'converged_s'])
        self.assertIsNone(learning.convergence([None], TRUE, 5.0)['fit'])

    def test_a_flooded_bucket_is_learned_and_reported(self):
        # 4 KiB writers flood a bucket whose profile was typed additive:
        # the estimator finds the max form and the 100 IOPS
        sc = helpers.make(domain=BUCKET, duration_s=60, vms=[
            helpers.vm('heavy', [{'rw': 'randwrite', 'bs': 4096,
                                  'processes': 8}], role='heavy'),
            helpers.vm('light', [{'rw': 'randwrite', 'bs': 4096,
                                  'processes': 1, 'rate_kbs': 40}],
                       role='light')])
        run = loop.run(sc, none.NoPolicy())
        self.assertEqual(12, len(run.fits))
        last = run.fits[-1]
        self.assertEqual(policy_base.MAX, last.form)
        self.assertLess(abs(last.iops_4k / 100.0 - 1.0), 0.1)
        self.assertIn('iops_4k', last.identified)
        result = report.result(run, run)
        self.assertIsNotNone(result['estimator']['converged_s'])
        text = report.table('unit', {'none': result})
        self.assertIn('capacity estimator', text)
        self.assertIn('(true)', text)
