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

import os
import tempfile

import numpy as np
import yaml

from iotguard import exception
from iotguard import policy
from iotguard.policy import costmodel
from iotguard.sim import loop
from iotguard.sim import measures
from iotguard.sim import scenario
from iotguard.sim import world
from iotguard.tests import base
from iotguard.tests.unit.sim import helpers

SHIPPED = ('paper-4vm', 'paper-20vm', 'io-size', 'on-off',
           'idle-neighbours', 'tiers', 'token-bucket', 'per-gib',
           'paper-16', 'iops-4k', 'sleeper', 'on-off-x5')


class TestShipped(base.TestCase):

    def test_every_shipped_scenario_loads(self):
        self.assertTrue(set(SHIPPED) <= set(scenario.names()))
        for name in scenario.names():
            sc = scenario.load(name)
            self.assertEqual(name, sc.name)
            self.assertEqual(5.0, sc.interval_s)
            self.assertTrue(sc.vms)

    def test_floors_commit_at_least_half_of_capacity(self):
        for name in SHIPPED:
            sc = scenario.load(name)
            profile = sc.domain.profile
            floors = 0.0
            for vm in sc.vms:
                tier = sc.tiers[vm.tier].at(vm.size_gib)
                floors += float(costmodel.floor_load(
                    np.array([tier.min_iops]),
                    np.array([tier.min_bytes_sec]),
                    np.array([loop.nominal_io_size(vm)]), profile)[0])
            self.assertGreaterEqual(floors, 0.5, name)

    def test_per_gib_floors_at_each_size(self):
        sc = scenario.load('per-gib')
        run = loop.Recorder(sc, world.World(sc))
        floors = {vm.role: tier.min_bytes_sec
                  for vm, tier in zip(run.vms, run.tiers)}
        mib = 1048576
        self.assertEqual({'gp-50gib': 3.125 * mib, 'gp-200gib': 12.5 * mib,
                          'gp-600gib': 37.5 * mib, 'bronze': 6 * mib},
                         floors)

    def test_latency_tier_guarantee_keeps_the_p99(self):
        sc = scenario.load('latency-tier')
        self.assertEqual(10.0, sc.tiers['gold'].latency_p99_ms)
        fast = loop.FastPath(1.0, 0.0)
        judged = {name: measures.latency_kept(loop.run(
            sc, policy.load(name), 0, fast=fast))
            for name in ('none', 'guarantee')}
        # the p99 modelled (ln(100) x the mean): without control only the
        # windows without a flood keep 10 ms; guarantee misses the first
        # flood's first window (doc/source/reference/simulator)
        self.assertLess(judged['none'][0], 0.3)
        self.assertGreater(judged['guarantee'][0], 0.95)
        # the worst 10 s p99 (the first flood's onset) is still shorter
        self.assertLess(judged['guarantee'][1], 0.6 * judged['none'][1])

    def test_paper_4vm_is_the_paper(self):
        sc = scenario.load('paper-4vm')
        self.assertEqual(['vm1', 'vm2', 'vm3', 'vm4'],
                         [vm.name for vm in sc.vms])
        heavy = sc.vms[0].jobs[0]
        self.assertEqual((65536, 0.0), (heavy.bs, heavy.read_fraction))
        self.assertEqual(list(range(1, 11)),
                         [s.processes for s in heavy.steps])
        self.assertEqual([60.0 * k for k in range(10)],
                         [s.at for s in heavy.steps])
        self.assertEqual([800, 600, 300],
                         [vm.jobs[0].steps[0].rate_kbs for vm in sc.vms[1:]])
        self.assertEqual({'paper'}, set(sc.tiers))
        self.assertEqual((614400, 1.0), (sc.tiers['paper'].min_bytes_sec,
                                         sc.tiers['paper'].weight))

    def test_count_expands(self):
        sc = scenario.load('paper-20vm')
        self.assertEqual(20, len(sc.vms))
        self.assertIn('heavy-5', [vm.name for vm in sc.vms])

    def test_load_by_path(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'mine.yaml')
            with open(path, 'w') as f:
                yaml.safe_dump(helpers.data(), f)
            self.assertEqual('unit', scenario.load(path).name)

    def test_tier_changes(self):
        data = helpers.data()
        data['tiers'].append({'name': 'gold', 'min_bytes_sec': 1 << 20})
        data['vms'][1]['tier_changes'] = [{'at': 10, 'tier': 'gold'},
                                          {'at': 15, 'tier': 'std'}]
        light = scenario.parse(data).vms[1]
        self.assertEqual(['std', 'gold', 'gold', 'std'],
                         [light.tier_at(t) for t in (9.9, 10, 14.9, 15)])
        self.assertEqual([0.0, 10.0, 15.0],
                         scenario.parse(data).change_times())


class TestInvalid(base.TestCase):

    def test_bad_tier_changes(self):
        for changes, field, reason in (
                ({'at': 1}, 'vms[0].tier_changes', 'list'),
                ([{'at': 1, 'tier': 'gold'}], 'vms[0].tier_changes[0].tier',
                 'unknown tier'),
                ([{'at': 5, 'tier': 'std'}, {'at': 5, 'tier': 'std'}],
                 'vms[0].tier_changes[1].at', 'increasing'),
                ([{'at': -1, 'tier': 'std'}], 'vms[0].tier_changes[0].at',
                 '>= 0'),
                ([{'at': 1, 'tier': 'std', 'why': 'x'}],
                 'vms[0].tier_changes[0].why', 'unknown key')):
            data = helpers.data()
            data['vms'][0]['tier_changes'] = changes
            self.assertInvalid(field, data, reason)

    def assertInvalid(self, field, data, reason=''):
        e = self.assertRaises(exception.InvalidScenario, scenario.parse,
                              data, 'test')
        self.assertEqual(field, e.kwargs['field'])
        self.assertIn(reason, e.kwargs['reason'])
        self.assertIn(field, str(e))

    def test_missing_field(self):
        data = helpers.data()
        del data['duration_s']
        self.assertInvalid('duration_s', data, 'missing')
        data = helpers.data()
        del data['domain']['iops_4k']
        self.assertInvalid('domain.iops_4k', data, 'missing')
        data = helpers.data()
        del data['vms'][1]['jobs'][0]['bs']
        self.assertInvalid('vms[1].jobs[0].bs', data, 'missing')

    def test_wrong_type(self):
        self.assertInvalid('duration_s', helpers.data(duration_s='long'),
                           'number')
        data = helpers.data()
        data['vms'][0]['jobs'][0]['processes'] = 2.5
        self.assertInvalid('vms[0].jobs[0].processes', data, 'integer')
        self.assertInvalid('vms', helpers.data(vms={}), 'list')
        self.assertInvalid('scenario', ['not', 'a', 'mapping'], 'mapping')

    def test_negative_or_zero(self):
        data = helpers.data()
        data['domain']['bytes_sec'] = -1
        self.assertInvalid('domain.bytes_sec', data, '> 0')
        data = helpers.data()
        data['tiers'][0]['min_bytes_sec'] = -5
        self.assertInvalid('tiers[0].min_bytes_sec', data, '>= 0')
        data = helpers.data()
        data['vms'][1]['jobs'][0]['rate_kbs'] = 0
        self.assertInvalid('vms[1].jobs[0].rate_kbs', data, '> 0')

    def test_unknown_key(self):
        data = helpers.data(colour='blue')
        self.assertInvalid('colour', data, 'unknown key')
        data = helpers.data()
        data['vms'][0]['jobs'][0]['ioengine'] = 'libaio'
        self.assertInvalid('vms[0].jobs[0].ioengine', data, 'unknown key')

    def test_unknown_references(self):
        data = helpers.data()
        data['vms'][0]['tier'] = 'platinum'
        self.assertInvalid('vms[0].tier', data, 'unknown tier')
        data = helpers.data()
        data['vms'][0]['limits'] = {'total_iops': 5}
        self.assertInvalid('vms[0].limits.total_iops', data,
                           'unknown iotune key')
        data = helpers.data()
        data['vms'][0]['jobs'][0]['rw'] = 'trim'
        self.assertInvalid('vms[0].jobs[0].rw', data, 'must be one of')

    def test_inconsistent(self):
        data = helpers.data()
        data['vms'][0]['limits'] = {'total_iops_sec': 5, 'read_iops_sec': 3}
        self.assertInvalid('vms[0].limits', data, 'total_iops_sec cannot be '
                           'combined with read_iops_sec')
        data = helpers.data()
        data['vms'][0]['jobs'][0]['steps'] = [
            {'at': 5, 'processes': 1}, {'at': 5, 'processes': 2}]
        del data['vms'][0]['jobs'][0]['processes']
        self.assertInvalid('vms[0].jobs[0].steps', data, 'increasing')
        data = helpers.data()
        data['vms'][1]['jobs'][0]['steps'] = [{'at': 0, 'processes': 1}]
        self.assertInvalid('vms[1].jobs[0].steps', data, 'not both')
        data = helpers.data(tick_s=0.03)
        self.assertInvalid('tick_s', data, 'divide')
        data = helpers.data()
        data['vms'][1]['name'] = 'heavy'
        self.assertInvalid('vms', data, 'duplicate')
        data = helpers.data()
        data['tiers'][0]['max_bytes_sec'] = 100
        self.assertInvalid('tiers[0].min_bytes_sec', data, 'above')

    def test_bad_files(self):
        e = self.assertRaises(exception.InvalidScenario, scenario.load,
                              'no-such-scenario')
        self.assertIn('paper-4vm', str(e))
        self.assertEqual('name', e.kwargs['field'])
        e = self.assertRaises(exception.InvalidScenario, scenario.load,
                              '/nonexistent/x.yaml')
        self.assertEqual('file', e.kwargs['field'])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'bad.yaml')
            with open(path, 'w') as f:
                f.write('name: [unclosed\n')
            e = self.assertRaises(exception.InvalidScenario, scenario.load,
                                  path)
            self.assertIn('YAML', str(e))


class TestPolicies(base.TestCase):

    def test_policy_parameters(self):
        sc = helpers.make(policies={'ntt': {'rate': 0.3}})
        self.assertEqual({'ntt': {'rate': 0.3}}, sc.policies)
        self.assertEqual({}, helpers.make().policies)

    def test_unknown_policy(self):
        e = self.assertRaises(exception.InvalidScenario, helpers.make,
                              policies={'fancy': {}})
        self.assertEqual('policies.fancy', e.kwargs['field'])
        self.assertIn('unknown policy', str(e))

    def test_unknown_or_bad_policy_key(self):
        e = self.assertRaises(exception.InvalidScenario, helpers.make,
                              policies={'ntt': {'colour': 'blue'}})
        self.assertEqual('policies.ntt', e.kwargs['field'])
        self.assertIn('colour', str(e))
        e = self.assertRaises(exception.InvalidScenario, helpers.make,
                              policies={'ntt': {'rate': 7}})
        self.assertEqual('policies.ntt', e.kwargs['field'])
        self.assertIn('rate', str(e))
        e = self.assertRaises(exception.InvalidScenario, helpers.make,
                              policies={'ntt': 0.5})
        self.assertIn('mapping', str(e))
