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

"""The agent bench's figures, at a tiny size."""

import statistics

from benchmarks import agent as bench
from iotguard.tests import base as test_base


class TestAgentBench(test_base.TestCase):

    def test_passes_only(self):
        figures = bench.measure(20, passes=2, interval_s=1.0)
        self.assertEqual({'pass_cpu_s', 'batch_bytes'}, set(figures))
        self.assertEqual(2, len(figures['pass_cpu_s']))

    def test_a_watch_read_costs_less_than_a_pass(self):
        for driver in bench.DRIVERS:
            figures = bench.measure(100, passes=3, driver_name=driver,
                                    urgent=True, interval_s=1.0,
                                    watch_s=0.25)
            self.assertEqual(
                {'pass_cpu_s', 'batch_bytes', 'watch_cpu_s', 'watch_reads',
                 'watch_rose', 'cpu_s_per_s'}, set(figures))
            # three watch reads between two passes, the steady world quiet
            self.assertEqual(9, figures['watch_reads'])
            self.assertEqual(0, figures['watch_rose'])
            watch = statistics.median(figures['watch_cpu_s'])
            one_pass = statistics.median(figures['pass_cpu_s'])
            self.assertLess(watch, one_pass, driver)
            self.assertAlmostEqual(one_pass + 3 * watch,
                                   figures['cpu_s_per_s'])

    def test_the_watch_needs_urgent_samples_and_a_divisor(self):
        for urgent, watch_s in ((False, 0.25), (True, 0.3), (True, 1.0),
                                (True, 0.0)):
            self.assertRaises(ValueError, bench.measure, 10, 1,
                              urgent=urgent, interval_s=1.0, watch_s=watch_s)
