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

import datetime
import io
import json

import fixtures
import webob

from iotguard.cmd import allinone
from iotguard import exception
from iotguard.sim import loop
from iotguard.sim import scenario as scenario_mod
from iotguard.sim import world as world_mod
from iotguard.tests import base
from iotguard.tests.unit.controller import fakes


class ArgumentsTest(base.TestCase):

    def parse(self, *argv):
        return allinone.options(allinone.build_parser().parse_args(list(argv)))

    def test_defaults_are_the_embedded_main_job(self):
        args = allinone.build_parser().parse_args([])
        self.assertEqual('iotguard-allinone.png', args.plot)
        self.assertIsNone(args.json)
        opts = allinone.options(args)
        self.assertEqual(allinone.Options(log_file='iotguard-allinone.log'),
                         opts)
        self.assertEqual(('paper-4vm', 'guarantee', 10.0, None, 9737, None),
                         (opts.scenario, opts.policy, opts.speed,
                          opts.duration_s, opts.port, opts.db_path))

    def test_options(self):
        opts = self.parse('--scenario', 'on-off', '--policy', 'ntt',
                          '--speed', '1', '--duration', '30', '--port', '0',
                          '--db', 'x.sqlite', '--seed', '3',
                          '--log-file', 'x.log')
        self.assertEqual(allinone.Options(
            scenario='on-off', policy='ntt', speed=1.0, duration_s=30.0,
            port=0, db_path='x.sqlite', seed=3, log_file='x.log'), opts)

    def test_bad_values_refused_before_any_start(self):
        for argv, word in ((('--speed', '0'), '--speed'),
                           (('--duration', '-5'), '--duration'),
                           (('--port', '70000'), '--port'),
                           (('--policy', 'nope'), 'unknown policy')):
            e = self.assertRaises(ValueError, self.parse, *argv)
            self.assertIn(word, str(e))


class SeedTest(base.TestCase):

    def test_domain_tiers_and_disks_from_the_scenario(self):
        sc = scenario_mod.load('paper-4vm')
        world = world_mod.World(sc)
        db = fakes.real_db(self)
        disks = allinone.seed(db, sc, world, 'guarantee')
        domains = db.domain_list()
        self.assertEqual([{
            'name': sc.domain.name, 'kind': allinone.DOMAIN_KIND,
            'iops_4k': sc.domain.iops_4k, 'bytes_sec': sc.domain.bytes_sec,
            'policy': 'guarantee',
            'params': sc.policies.get('guarantee', {})}],
            [{k: getattr(d, k) for k in ('name', 'kind', 'iops_4k',
                                         'bytes_sec', 'policy', 'params')}
             for d in domains])
        tiers = db.tier_list()
        self.assertEqual(sorted(sc.tiers), [t.name for t in tiers])
        self.assertEqual(sc.tiers['paper'].min_bytes_sec,
                         db.tier_get('paper').min_bytes_sec)
        stored = db.disk_list()
        self.assertEqual(len(sc.vms), len(stored))
        self.assertEqual(
            [world_mod.instance_uuid(sc.name, vm.name) for vm in sc.vms],
            [d['instance_uuid'] for d in disks])
        self.assertEqual({d['instance_uuid'] for d in disks},
                         {d['instance_uuid'] for d in stored})
        self.assertEqual({(vm.host, sc.domain.name) for vm in sc.vms},
                         {(d['host'], d['domain']) for d in stored})
        self.assertEqual({(vm.tier, 'flavor') for vm in sc.vms},
                         {(d['tier'].name, d['tier_source'])
                          for d in stored})

    def test_policy_without_scenario_params(self):
        sc = scenario_mod.load('paper-4vm')
        db = fakes.real_db(self)
        allinone.seed(db, sc, world_mod.World(sc), 'ntt')
        self.assertEqual({}, db.domain_get(sc.domain.name).params)


class LateSamplesTest(base.TestCase):
    """A run whose samples never reached the controller is an error."""

    def run_with(self, late):
        tmp = self.useFixture(fixtures.TempDir()).path
        aio = allinone.AllInOne(allinone.Options(duration_s=15.0,
                                                 speed=1e6), tmp)

        class Recorder:
            queue = [None] * 3

            def run(self, done):
                return done

        aio.recorder = Recorder()

        def window(k):
            aio.late_windows += k < late

        aio.window = window
        return aio.run()

    def test_every_window_late_fails_the_run(self):
        e = self.assertRaises(exception.AllInOneFailed, self.run_with, 3)
        self.assertIn('never reached the controller in 3 windows', str(e))

    def test_one_window_on_time_is_a_run(self):
        self.assertEqual(3, self.run_with(2))


class ApiTest(base.TestCase):

    def test_tier_choice_says_nova_metadata_disabled(self):
        sc = scenario_mod.load('paper-4vm')
        db = fakes.real_db(self)
        allinone.seed(db, sc, world_mod.World(sc), 'guarantee')
        vm = sc.vms[0]
        uuid = world_mod.instance_uuid(sc.name, vm.name)
        api = allinone.serve_api(allinone.make_conf('host1'), db, 0)
        self.addCleanup(api.server_close)
        self.addCleanup(api.shutdown)
        req = webob.Request.blank(
            '/v1/instances/%s/tier' % uuid,
            method='PUT', body=json.dumps({'tier': vm.tier}).encode(),
            content_type='application/json', headers={
                'X-User-Id': 'admin', 'X-Project-Id': 'admin',
                'X-Roles': 'admin'})
        resp = req.get_response(api.get_app())
        self.assertEqual(200, resp.status_int, resp.text)
        self.assertEqual('disabled', resp.json['instance']['nova_metadata'])
        self.assertEqual({(uuid, '*'): (vm.tier, 'admitted')},
                         db.tier_requests('api', [uuid]))


class CutTest(base.TestCase):

    def test_cut_to_whole_intervals(self):
        sc = scenario_mod.load('paper-4vm')
        self.assertIs(sc, allinone.cut(sc, None))
        self.assertIs(sc, allinone.cut(sc, sc.duration_s + 10))
        self.assertEqual(120.0, allinone.cut(sc, 122).duration_s)
        self.assertEqual(sc.interval_s, allinone.cut(sc, 1).duration_s)


class RecorderTest(base.TestCase):

    def test_run_of_fewer_windows_after_an_interrupt(self):
        sc = allinone.cut(scenario_mod.load('paper-4vm'), 30)
        world = world_mod.World(sc)
        recorder = loop.Recorder(sc, world)
        recorder.begin(0)
        world.step(sc.interval_s)
        recorder.end(0)
        run = recorder.run(1)
        self.assertEqual((1, len(sc.vms)), run.kbs.shape)
        self.assertEqual(sc.interval_s, run.scenario.duration_s)
        self.assertGreater(run.kbs.sum(), 0)


class ActionTest(base.TestCase):

    def decision(self, action, old, new):
        return {'created_at': datetime.datetime(2026, 1, 1, 0, 0, 25),
                'action': action, 'old_limits': old, 'new_limits': new,
                'reason': 'why'}

    def test_cap_tightens_release_does_not(self):
        start = 1767225600.0   # 2026-01-01T00:00:00Z
        cap = allinone.action(self.decision(
            'cap', {}, {'total_bytes_sec': 900000}), 2, start)
        self.assertEqual(loop.Action(time=25.0, disk=2, action='cap',
                                     changed=True, reason='why',
                                     tightened=True), cap)
        looser = allinone.action(self.decision(
            'cap', {'total_bytes_sec': 800000},
            {'total_bytes_sec': 900000}), 0, start)
        self.assertFalse(looser.tightened)
        self.assertTrue(looser.changed)
        release = allinone.action(self.decision(
            'release', {'total_bytes_sec': 800000}, {}), 0, start)
        self.assertFalse(release.tightened)
        same = allinone.action(self.decision(
            'cap', {'total_bytes_sec': 1}, {'total_bytes_sec': 1}), 0, start)
        self.assertFalse(same.changed)


class LiveViewTest(base.TestCase):

    window = allinone.Window(
        index=4, windows=24, sim_s=25.0, decisions=3, caps=1, vms=[
            allinone.VmView('vm1', 'heavy', 960.4, 600.0, 954.0,
                            'cap: guarantee: load above its fair share'),
            allinone.VmView('vm2', 'light', 790.0, 600.0, None, '')])

    def test_lines(self):
        lines = allinone.render(self.window, ['HEAD'])
        self.assertEqual('HEAD', lines[0])
        self.assertIn('t =   25 s  window 5/24', lines[1])
        self.assertIn('caps in force: 1', lines[1])
        self.assertRegex(lines[-2], r'^vm1\s+heavy\s+960\s+600\s+954  cap: ')
        self.assertRegex(lines[-1], r'^vm2\s+light\s+790\s+600\s+-\s*$')

    def test_terminal_redraws_pipe_appends(self):
        class Tty(io.StringIO):
            def isatty(self):
                return True
        tty, pipe = Tty(), io.StringIO()
        allinone.LiveView(tty, ['HEAD'])(self.window)
        allinone.LiveView(pipe, ['HEAD'])(self.window)
        self.assertTrue(tty.getvalue().startswith(allinone.CLEAR + 'HEAD\n'))
        self.assertNotIn('\x1b', pipe.getvalue())
        self.assertNotIn('HEAD', pipe.getvalue())
        # The status line and one line a VM.
        self.assertEqual(3, pipe.getvalue().count('\n'))
