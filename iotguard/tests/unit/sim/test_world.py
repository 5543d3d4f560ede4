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

import uuid

from iotguard.sim import world
from iotguard.tests import base
from iotguard.tests.unit.sim import helpers
from iotguard.wire import caps
from iotguard.wire import rates


class TestWorld(base.TestCase):

    def setUp(self):
        super().setUp()
        self.scenario = helpers.make(vms=[
            helpers.vm('heavy', [{'bs': 65536, 'processes': 4}],
                       host='host2', project_id='p1',
                       limits={'total_bytes_sec': 2000000}),
            helpers.vm('light', [{'rw': 'randrw', 'rwmixread': 60,
                                  'bs': 16384, 'processes': 1}],
                       dev='vdb', volume_id='vol-1')])
        self.world = world.World(self.scenario, seed=3)
        self.heavy, self.light = self.world.disk_ids()

    def test_disk_ids_and_info(self):
        uid = str(uuid.uuid5(uuid.NAMESPACE_URL, 'iotguard-sim:unit/heavy'))
        self.assertEqual(uid + '/vda', self.heavy)
        self.assertTrue(self.light.endswith('/vdb'))
        self.assertEqual(
            {'instance_uuid': uid, 'name': 'heavy', 'dev': 'vda',
             'host': 'host2', 'domain': 'pool', 'project_id': 'p1',
             'volume_id': None, 'tier': 'std'},
            self.world.disk_info(self.heavy))
        info = self.world.disk_info(self.light)
        self.assertEqual(('host1', 'vol-1', 'project-unit'),
                         (info['host'], info['volume_id'],
                          info['project_id']))
        # same scenario, same ids
        self.assertEqual(self.world.disk_ids(),
                         world.World(self.scenario).disk_ids())

    def test_time_and_counters(self):
        self.assertEqual(0.0, self.world.now)
        before = self.world.counters(self.light)
        self.assertEqual(set(rates.COUNTER_KEYS), set(before))
        self.assertEqual(0, sum(before.values()))
        previous = before
        for _ in range(8):
            self.world.step(2.5)
            now = self.world.counters(self.light)
            for key in rates.COUNTER_KEYS:
                self.assertIsInstance(now[key], int)
                self.assertGreaterEqual(now[key], previous[key])
            previous = now
        self.assertEqual(20.0, self.world.now)
        c = previous
        total = c['rd_reqs'] + c['wr_reqs']
        self.assertAlmostEqual(0.6, c['rd_reqs'] / total, delta=0.01)
        self.assertEqual(16384 * c['rd_reqs'], c['rd_bytes'])
        self.assertGreater(c['rd_times'], 0)
        heavy = self.world.counters(self.heavy)
        # the static 2 MB/s ceiling holds
        self.assertLessEqual(heavy['wr_bytes'], 2000000 * 20 + 2 * 65536)
        self.assertEqual(0, heavy['rd_reqs'])

    def test_counter_array_is_counters_in_rows(self):
        self.world.step(7.5)
        ids = [self.heavy, self.light]
        rows = self.world.counter_array(ids)
        self.assertEqual([[self.world.counters(i)[k]
                           for k in rates.COUNTER_KEYS] for i in ids],
                         rows.tolist())
        self.assertRaises(KeyError, self.world.counter_array, ['nope'])

    def test_step_validation(self):
        self.world.step(0)
        self.assertEqual(0.0, self.world.now)
        self.assertRaises(ValueError, self.world.step, -1)
        self.assertRaises(ValueError, self.world.step, float('nan'))

    def test_deterministic_for_a_seed(self):
        sc = helpers.make(domain=dict(helpers.BASE['domain'], noise=0.1))
        runs = []
        for seed in (1, 1, 2):
            w = world.World(sc, seed=seed)
            w.step(10)
            runs.append([w.counters(d) for d in w.disk_ids()])
        self.assertEqual(runs[0], runs[1])
        self.assertNotEqual(runs[0], runs[2])

    def test_iotune(self):
        static = self.world.static_iotune(self.heavy)
        self.assertEqual(set(caps.IOTUNE_KEYS), set(static))
        self.assertEqual(2000000, static['total_bytes_sec'])
        self.assertEqual(static, self.world.get_iotune(self.heavy))
        self.world.set_iotune(self.heavy, {'total_iops_sec': 5})
        tune = self.world.get_iotune(self.heavy)
        self.assertEqual((5, 2000000), (tune['total_iops_sec'],
                                        tune['total_bytes_sec']))
        self.world.set_iotune(self.heavy, {'write_bytes_sec': 1000})
        tune = self.world.get_iotune(self.heavy)
        self.assertEqual((0, 1000, 5), (tune['total_bytes_sec'],
                                        tune['write_bytes_sec'],
                                        tune['total_iops_sec']))
        # the static ceilings are what the scenario says, whatever is set
        self.assertEqual(static, self.world.static_iotune(self.heavy))
        self.world.step(10)
        self.assertLessEqual(self.world.counters(self.heavy)['wr_reqs'],
                             5 * 10 + 2)

    def test_iotune_errors(self):
        for params in ({'nope': 1}, {'total_iops_sec': -5},
                       {'total_bytes_sec': 1, 'write_bytes_sec': 2}):
            e = self.assertRaises(ValueError, self.world.set_iotune,
                                  self.heavy, params)
            self.assertTrue(str(e))
        # a refused call changes nothing
        self.assertEqual(self.world.static_iotune(self.heavy),
                         self.world.get_iotune(self.heavy))
        for call in (self.world.counters, self.world.get_iotune,
                     self.world.static_iotune, self.world.disk_info):
            self.assertRaises(KeyError, call, 'nope/vda')
        self.assertRaises(KeyError, self.world.set_iotune, 'nope/vda', {})
