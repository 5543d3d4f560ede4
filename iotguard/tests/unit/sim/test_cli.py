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

import io
import json
import os
import tempfile
from unittest import mock

import yaml

from iotguard.cmd import sim
from iotguard import policy as policy_mod
from iotguard.sim import loop
from iotguard.sim import targets
from iotguard.tests import base
from iotguard.tests.unit.sim import helpers


class TestCli(base.TestCase):

    def main(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with mock.patch('sys.stdout', out), mock.patch('sys.stderr', err):
            code = sim.main(list(argv))
        return code, out.getvalue(), err.getvalue()

    def scenario_file(self, tmp):
        path = os.path.join(tmp, 'unit.yaml')
        with open(path, 'w') as f:
            yaml.safe_dump(helpers.data(), f)
        return path

    def test_run_writes_json(self):
        with tempfile.TemporaryDirectory() as tmp:
            out_json = os.path.join(tmp, 'out.json')
            code, out, err = self.main('run', self.scenario_file(tmp),
                                       '--policy', 'none', '--json',
                                       out_json)
            self.assertEqual(0, code, err)
            self.assertIn('none avg', out)
            with open(out_json) as f:
                doc = json.load(f)
        self.assertEqual(('unit', 0), (doc['scenario'], doc['seed']))
        self.assertEqual(['none'], list(doc['policies']))

    def test_fast_path_reports_reclaim_per_second(self):
        with tempfile.TemporaryDirectory() as tmp:
            out_json = os.path.join(tmp, 'out.json')
            code, out, err = self.main('compare', self.scenario_file(tmp),
                                       '--policies', 'guarantee',
                                       '--fast-path', '--json', out_json)
            self.assertEqual(0, code, err)
            with open(out_json) as f:
                got = json.load(f)['policies']['guarantee']
        self.assertIn('(1 s windows)', out)
        self.assertIn('reclaim_p99_s', out)
        self.assertEqual(1.0, got['window_s'])
        for key in ('reclaims', 'reclaim_p50_s', 'reclaim_p99_s',
                    'reclaim_max_s'):
            self.assertGreaterEqual(got['measures'][key], 0.0, key)

    def test_watch_interval_with_the_fast_path(self):
        args = sim.build_parser().parse_args(
            ['compare', 'unit', '--fast-path', '--watch-interval', '0.25'])
        self.assertEqual(loop.FastPath(1.0, 1.0, 0.25), sim.fast_path(args))
        args = sim.build_parser().parse_args(['compare', 'unit',
                                              '--fast-path'])
        self.assertEqual(loop.FastPath(1.0, 1.0, 0.0), sim.fast_path(args))
        with tempfile.TemporaryDirectory() as tmp:
            path = self.scenario_file(tmp)
            for argv in (['--watch-interval', '0.25'],
                         ['--fast-path', '--watch-interval', '0.3'],
                         ['--fast-path', '--watch-interval', '0']):
                code, out, err = self.main('compare', path, *argv)
                self.assertEqual(2, code, argv)
                self.assertIn('watch', err)
                self.assertNotIn('Traceback', err)
            code, _out, err = self.main('targets', '--scenarios', path,
                                        '--fast-path', '--watch-interval',
                                        '0.3')
            self.assertEqual(2, code)
            self.assertIn('must divide the sample interval', err)

    def test_targets_over_seeds(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = self.scenario_file(tmp)
            out_json = os.path.join(tmp, 'out.json')
            code, out, err = self.main('targets', '--scenarios', path,
                                       '--seeds', '2', '--first-seed', '3',
                                       '--fast-path', '--json', out_json)
            with open(out_json) as f:
                doc = json.load(f)
        self.assertIn(code, (0, 1), err)
        self.assertEqual([3, 4], doc['seeds'])
        self.assertTrue(doc['fast_path'])
        rows = doc['rows']
        self.assertEqual(list(targets.TARGETS),
                         [r['measure'] for r in rows])
        self.assertEqual(0 if all(r['met'] for r in rows) else 1, code)
        for r in rows:
            self.assertLessEqual(r['min'], r['median'])
            self.assertLessEqual(r['median'], r['max'])
            self.assertIn(r['measure'], out)
        self.assertIn('2 seeds, 1 s windows', out)

    def test_targets_summary_needs_every_seed(self):
        per_seed = [{k: 1.0 for k in targets.TARGETS},
                    {k: 1.0 for k in targets.TARGETS}]
        per_seed[1]['compliance'] = 0.99
        per_seed[0]['reclaim_max_s'] = 3.0
        rows = {r['measure']: r for r in targets.summary({'s': per_seed})}
        self.assertFalse(rows['compliance']['met'])
        self.assertEqual((0.99, 0.995, 1.0), (
            rows['compliance']['min'], rows['compliance']['median'],
            rows['compliance']['max']))
        self.assertTrue(rows['compliance_worst']['met'])
        # lower is better: one seed reclaimed in 3 s, over the 2 s
        self.assertFalse(rows['reclaim_max_s']['met'])
        self.assertTrue(rows['reclaim_p99_s']['met'])

    def test_targets_refuses_bad_options(self):
        for argv in (('--seeds', '0'), ('--jobs', '0'),
                     ('--scenarios', 'no-such-scenario')):
            code, out, err = self.main('targets', *argv)
            self.assertEqual(2, code, argv)
            self.assertIn('iotguard-sim: error:', err)
            self.assertEqual('', out)

    def test_errors_exit_2_without_traceback(self):
        cases = [('run', 'no-such-scenario', '--policy', 'none'),
                 ('run', '/nonexistent/s.yaml', '--policy', 'none'),
                 ('run', 'paper-4vm', '--policy', 'bogus'),
                 ('run', 'paper-4vm', '--policy', 'ntt', '--param', 'rate'),
                 ('compare', 'paper-4vm', '--policies', 'none,none'),
                 ('run', 'paper-4vm', '--policy', 'none',
                  '--sample-interval', '2')]
        for argv in cases:
            code, out, err = self.main(*argv)
            self.assertEqual(2, code, argv)
            self.assertTrue(err.startswith('iotguard-sim: error: '), err)
            self.assertNotIn('Traceback', err)

    def test_bad_param_value_for_a_policy(self):
        code, _, err = self.main('run', 'paper-4vm', '--policy', 'ntt',
                                 '--param', 'rate=7')
        self.assertEqual(2, code)
        self.assertIn('rate', err)

    def test_parse_params(self):
        self.assertEqual({'rate': 0.5, 'name': 'x', 'on': True},
                         sim.parse_params(['rate=0.5', 'name=x', 'on=true']))

    def test_list(self):
        code, out, _ = self.main('list')
        self.assertEqual(0, code)
        self.assertIn('paper-4vm', out)

    def test_bench_calls_the_benchmark(self):
        fake = mock.Mock()
        fake.run.return_value = {'disks': 10, 'cpu_s_min': 0.001}
        with mock.patch.object(sim, 'bench', fake):
            code, out, _ = self.main('bench', '--disks', '10',
                                     '--domains', '2')
        self.assertEqual(0, code)
        fake.run.assert_called_once_with(10, 2)
        self.assertIn('cpu_s_min', out)

    def test_bench_refuses_no_disks(self):
        code, _, err = self.main('bench', '--disks', '0')
        self.assertEqual(2, code)
        self.assertIn('disks', err)

    def test_progress_only_on_a_terminal(self):
        stream = io.StringIO()
        progress = sim.Progress('x', stream)
        progress(0.5)
        self.assertEqual('', stream.getvalue())
        stream.isatty = lambda: True
        progress = sim.Progress('x', stream)
        progress(0.5)
        progress(1.0)
        self.assertIn('100%', stream.getvalue())
        self.assertTrue(stream.getvalue().endswith('\n'))

    def test_scenario_policy_parameters_and_overrides(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'unit.yaml')
            with open(path, 'w') as f:
                yaml.safe_dump(helpers.data(policies={
                    'ntt': {'rate': 0.3, 'cap_time': 30}}), f)
            with mock.patch.object(sim.policy_mod, 'load',
                                   wraps=policy_mod.load) as load:
                code, _, err = self.main('run', path, '--policy', 'ntt',
                                         '--param', 'rate=0.4')
        self.assertEqual(0, code, err)
        load.assert_any_call('ntt', rate=0.4, cap_time=30)
