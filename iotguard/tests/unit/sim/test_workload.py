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
from iotguard.sim import scenario
from iotguard.sim import workload
from iotguard.sim import world
from iotguard.tests import base
from iotguard.tests.unit.sim import helpers


class TestJob(base.TestCase):

    def job(self, **fields):
        sc = helpers.make(vms=[helpers.vm('a', [dict(bs=4096, **fields)])])
        return sc.vms[0].jobs[0]

    def test_steps(self):
        job = self.job(steps=[{'at': 0, 'processes': 1},
                              {'at': 10, 'processes': 3, 'rate_kbs': 50}])
        self.assertEqual(1, job.state_at(0).processes)
        self.assertIsNone(job.state_at(9.99).rate_kbs)
        self.assertEqual((3, 50.0), (job.state_at(10).processes,
                                     job.state_at(10).rate_kbs))
        self.assertEqual([0.0, 10.0], job.change_times(60))

    def test_period_repeats(self):
        job = self.job(period_s=20, steps=[{'at': 0, 'processes': 4},
                                           {'at': 5, 'processes': 0}])
        self.assertEqual(4, job.state_at(41).processes)
        self.assertEqual(0, job.state_at(46).processes)
        self.assertEqual([0, 5, 20, 25, 40, 45], job.change_times(50))

    def test_before_first_step_idle(self):
        job = self.job(steps=[{'at': 5, 'processes': 2}])
        self.assertEqual(0, job.state_at(0).processes)

    def test_job_rate_is_a_default_for_steps(self):
        job = self.job(rate_kbs=100, steps=[{'at': 0, 'processes': 1},
                                            {'at': 5, 'processes': 2,
                                             'rate_kbs': 10}])
        self.assertEqual([100, 10], [s.rate_kbs for s in job.steps])


class TestRunner(base.TestCase):

    def run_vm(self, jobs, seconds=20.0):
        sc = helpers.make(vms=[helpers.vm('a', jobs)])
        w = world.World(sc)
        in_flight = []
        for _ in range(int(seconds)):
            w.step(1.0)
            (s,) = w.storage.streams
            in_flight.append(s.issued - s.completed)
        return w.counters(w.disk_ids()[0]), in_flight

    def test_rate_limit(self):
        counters, in_flight = self.run_vm(
            [{'bs': 65536, 'processes': 1, 'rate_kbs': 320}])
        self.assertAlmostEqual(320 * 1024 * 20, counters['wr_bytes'],
                               delta=2 * 65536)
        self.assertLessEqual(max(in_flight), 1)

    def test_processes_times_iodepth_in_flight(self):
        _, in_flight = self.run_vm(
            [{'bs': 65536, 'processes': 3, 'iodepth': 2}])
        self.assertEqual({6}, set(in_flight))

    def test_steps_change_the_load(self):
        counters, in_flight = self.run_vm(
            [{'bs': 65536, 'steps': [{'at': 0, 'processes': 2},
                                     {'at': 10, 'processes': 0}]}])
        self.assertEqual(2, in_flight[5])
        self.assertEqual(0, in_flight[-1])
        self.assertGreater(counters['wr_reqs'], 0)

    def test_demand(self):
        domain = helpers.make().domain
        job = scenario.Job(bs=65536, read_fraction=0.0, iodepth=1,
                           steps=(scenario.Step(0, 1, 300.0),))
        self.assertAlmostEqual(300 * 1024 / 65536,
                               workload.demand_ops(job.steps[0], job,
                                                   domain))
        free = scenario.Step(0, 12)
        cost = 1 / 300 + 65536 / 3400000
        self.assertAlmostEqual(1 / cost, workload.demand_ops(free, job,
                                                             domain))
        self.assertEqual(0.0, workload.demand_ops(scenario.Step(0, 0), job,
                                                  domain))


class TestThinkTime(base.TestCase):
    """Closed loops that wait ``think_ms`` after each completion."""

    def run_alone(self, think_ms, tick_s, bs=4096, processes=1):
        sc = helpers.make(tick_s=tick_s, vms=[helpers.vm('a', [
            {'bs': bs, 'processes': processes, 'think_ms': think_ms}])])
        w = world.World(sc)
        in_flight = []
        for _ in range(200):
            w.step(0.1)
            (s,) = w.storage.streams
            in_flight.append(s.issued - s.completed)
        job = sc.vms[0].jobs[0]
        truth = workload.demand_ops(job.steps[0], job, sc.domain)
        return w.counters(w.disk_ids()[0]), in_flight, truth

    def test_rate_matches_the_closed_loop_truth(self):
        # 4 KiB on the helpers' array: 7.5 ms per request alone, + 5 ms;
        # a request is sent at a tick's start: the cycle is the truth's
        # within half a tick
        counters, in_flight, truth = self.run_alone(5.0, 0.002)
        self.assertAlmostEqual(1 / truth, 20.0 / counters['wr_reqs'],
                               delta=0.001 + 1e-6)
        self.assertLessEqual(max(in_flight), 1)
        # thinking: often nothing in flight when sampled
        self.assertIn(0, in_flight)

    def test_think_time_lowers_the_rate(self):
        no_think, _, _ = self.run_alone(0.0, 0.002)
        think, _, truth = self.run_alone(15.0, 0.002)
        self.assertLess(think['wr_reqs'], 0.5 * no_think['wr_reqs'])
        cost = 1 / 300 + 4096 / 3400000
        speed1 = (1 / 12) ** 0.2
        self.assertAlmostEqual(1 / (cost / speed1 + 0.015), truth)

    def test_processes_think_independently(self):
        one, _, _ = self.run_alone(15.0, 0.002)
        three, in_flight, truth = self.run_alone(15.0, 0.002, processes=3)
        self.assertGreater(three['wr_reqs'], 2.0 * one['wr_reqs'])
        self.assertAlmostEqual(truth, three['wr_reqs'] / 20.0,
                               delta=0.05 * truth)
        self.assertLessEqual(max(in_flight), 3)

    def test_bad_think_time_named(self):
        self.assertRaisesRegex(
            exception.InvalidScenario, r'jobs\[0\]\.think_ms',
            helpers.make, vms=[helpers.vm('a', [{'bs': 4096,
                                                 'think_ms': -1}])])
