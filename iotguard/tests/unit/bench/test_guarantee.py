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

"""The guarantee runner's one-second series and measures, on readings."""

import configparser
import os
import types

import fixtures
import numpy as np

from benchmarks import guarantee
from iotguard.tests import base
from iotguard.tests.functional import test_shared_queue as sq

QUIET_BS = 768 << 10     # a quiet guest's demand, bytes/s
BLOCK = 64 << 10
STATIC = {'total_bytes_sec': 64 << 20}
CAP = {'total_bytes_sec': 2 << 20}


def player(steps):
    bed = types.SimpleNamespace(demand=np.array([QUIET_BS, QUIET_BS]),
                                quiet=[None, None])
    return guarantee.Player(bed, steps, 10.0, 'x')


def readings(rates, limits=None):
    """Samples a second apart of disks writing ``rates[k]`` bytes/s.

    As the runner reads them: (time, limits, histogram, counters), no
    histogram read.
    """
    counters = np.zeros(3 * len(rates[0]))
    out = [(100.0, [STATIC] * len(rates[0]), None, list(counters))]
    for k, row in enumerate(rates):
        for i, r in enumerate(row):
            counters[3 * i:3 * i + 3] += (r, r / BLOCK, 5e6 * r / BLOCK)
        out.append((101.0 + k, (limits or {}).get(k, [STATIC] * len(row)),
                    None, list(counters)))
    return out


class SeriesTest(base.TestCase):

    def test_an_aggressor_starting_is_an_onset_and_a_reclaim(self):
        p = player([guarantee.Step(0, 'boot', 'a1', {})])
        rates = [[QUIET_BS, QUIET_BS, 0]] * 3 + \
            [[QUIET_BS / 2, QUIET_BS, 3e6]] * 2 + \
            [[QUIET_BS, QUIET_BS, 2e6]] * 5
        limits = {k: [STATIC, STATIC, CAP] for k in range(5, 10)}
        s = guarantee.series(p, 100.0, readings(rates, limits),
                             [(0.5, p.steps[0])])
        self.assertEqual([3.0], s.changes)          # its first write
        self.assertEqual([0.0, 0.0, 0.0, 1.0], s.demand[:4, 2].tolist())
        self.assertEqual(1, len(s.actions))         # the cap, once
        self.assertAlmostEqual(5.0, s.latency_ms[0, 0])
        r = guarantee.judge(s, s)
        self.assertAlmostEqual(18 / 20, r['compliance'])
        self.assertAlmostEqual(0.5, r['worst_1s'])
        self.assertEqual(1, r['reclaims'])
        self.assertAlmostEqual(2.0, r['reclaim_max_s'])
        self.assertAlmostEqual(1.0, r['work_conservation'])

    def test_a_paused_guest_asks_nothing_for_the_time_it_slept(self):
        p = player([guarantee.Step(0, 'boot', 'a1', {}),
                    guarantee.Step(2, 'pause', 'q2'),
                    guarantee.Step(5, 'resume', 'q2')])
        rates = [[QUIET_BS, QUIET_BS, 1e6]] * 2 + \
            [[QUIET_BS, 0, 1e6]] * 3 + [[QUIET_BS, QUIET_BS, 1e6]] * 3
        s = guarantee.series(p, 100.0, readings(rates), [
            (0.1, p.steps[0]), (2.0, p.steps[1]), (5.5, p.steps[2])])
        alone = QUIET_BS / sq.BYTES_SEC
        self.assertEqual([alone, alone, 0, 0, 0, alone / 2, alone, alone],
                         s.demand[:, 1].tolist())
        self.assertEqual([0.0, 2.0, 5.5], s.changes)

    def test_a_raised_tier_is_judged_from_the_window_it_falls_in(self):
        # r1 writes as a quiet guest on bronze (its floor under its
        # demand), an aggressor beside it; its tier is raised at 3.5 s
        p = player([guarantee.Step(0, 'boot', 'r1', {}, 'bronze',
                                   demand=QUIET_BS),
                    guarantee.Step(0, 'boot', 'a1', {}),
                    guarantee.Step(3.5, 'tier', 'r1', tier='raised')])
        self.assertEqual({'r1': 'bronze'}, p.tiers)
        rates = [[QUIET_BS, QUIET_BS, QUIET_BS / 2, 2e6]] * 5 + \
            [[QUIET_BS, QUIET_BS, QUIET_BS, 2e6]] * 3
        s = guarantee.series(p, 100.0, readings(rates), [
            (0.0, p.steps[0]), (0.0, p.steps[1]), (3.5, p.steps[2])])
        bronze = (256 << 10) / sq.BYTES_SEC
        self.assertEqual([bronze] * 3 + [sq.FLOOR / sq.BYTES_SEC] * 5,
                         s.floor[:, 2].tolist())
        self.assertEqual([sq.FLOOR / sq.BYTES_SEC] * 8,
                         s.floor[:, 0].tolist())
        self.assertEqual([0.0] * 8, s.floor[:, 3].tolist())
        self.assertEqual([0.0, 0.0, 3.5], s.changes)   # first writes
        self.assertEqual([QUIET_BS / sq.BYTES_SEC] * 8,
                         s.demand[:, 2].tolist())
        r = guarantee.judge(s, s)
        # short at half its demand from the raise to the sixth window:
        # windows 3 and 4 (from 3.5 s: 1.5 s), its bronze ones kept
        self.assertEqual(1, r['reclaims'])
        self.assertAlmostEqual(1.5, r['reclaim_max_s'])
        self.assertAlmostEqual(1 - 2 / 24, r['compliance'])

    def test_cost_is_the_bucket_that_binds(self):
        # 64 KiB writes: the bytes bind; 4 KiB ones: the operations
        rates = np.array([[sq.BYTES_SEC / 2, sq.BYTES_SEC / 2 / BLOCK,
                           50 * 4096, 50]])
        self.assertEqual([[0.5, 0.5]], guarantee.cost(rates).tolist())

    def test_the_table_has_a_line_per_run_and_the_spread(self):
        p = player([guarantee.Step(0, 'boot', 'a1', {})])
        s = guarantee.series(p, 100.0, readings(
            [[QUIET_BS, QUIET_BS, 1e6]] * 4), [(0.0, p.steps[0])])
        runs = [dict(guarantee.judge(s, s), scenario='paper', run=i,
                     load='1.0') for i in (1, 2, 3)]
        lines = guarantee.table(runs).splitlines()
        self.assertEqual(3 + 3 + 4, len(lines))
        self.assertIn('median', lines[7])


class AgentReadyTest(base.TestCase):

    def bed(self, lines, running=True):
        workdir = self.useFixture(fixtures.TempDir()).path
        with open(os.path.join(workdir, 'agent.log'), 'w') as f:
            f.writelines(line + '\n' for line in lines)
        with open(os.path.join(workdir, 'agent.err'), 'w') as f:
            f.write('Traceback: boom')
        proc = types.SimpleNamespace(poll=lambda: None if running else 1,
                                     returncode=None if running else 1)
        return types.SimpleNamespace(services=types.SimpleNamespace(
            dir=workdir, procs={'agent': proc}))

    def test_a_new_connection_line_of_any_pid_is_the_new_agent(self):
        bed = self.bed(['1 INFO x Connected to libvirt at qemu:///system'])
        bed.connections = 0
        guarantee._agent_ready(bed, timeout=1)

    def test_the_old_agent_line_is_not_the_new_one(self):
        bed = self.bed(['1 INFO x Connected to libvirt at qemu:///system'])
        bed.connections = 1
        self.assertRaises(RuntimeError, guarantee._agent_ready, bed, 0.1)

    def test_an_agent_that_exited_is_said_with_its_stderr(self):
        bed = self.bed([], running=False)
        error = self.assertRaises(RuntimeError, guarantee._agent_ready, bed,
                                  1)
        self.assertIn('boom', str(error))


class AgentConfigTest(base.TestCase):

    def options(self, text):
        conf = configparser.ConfigParser()
        conf.read_string(text)
        return {(g, k): v for g in conf.sections() for k, v in conf[g].items()}

    def test_watch_only_with_urgent_samples(self):
        watched = self.options(guarantee.agent_config(watch_s=0.25))
        self.assertEqual('0.25', watched['agent', 'watch_interval'])
        self.assertEqual('1.0', watched['controller', 'urgent_interval'])
        self.assertEqual('true', watched['agent', 'urgent_samples'])
        plain = self.options(guarantee.agent_config())
        self.assertNotIn(('agent', 'watch_interval'), plain)
        self.assertEqual('1.0', plain['controller', 'urgent_interval'])
        off = self.options(guarantee.agent_config(False, True, 0.25))
        self.assertNotIn(('agent', 'watch_interval'), off)
        self.assertEqual('0', off['controller', 'urgent_interval'])
        self.assertEqual('true', off['agent', 'latency_histograms'])
