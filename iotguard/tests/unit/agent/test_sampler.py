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
from unittest import mock

import fixtures
import numpy as np

from iotguard.agent import manager
from iotguard.agent import sampler
from iotguard.agent.virt import base
from iotguard.tests import base as test_base
from iotguard.tests.unit.agent import fakes
from iotguard.tests.unit.agent import test_manager
from iotguard.wire import batch as batch_mod
from iotguard.wire import caps
from iotguard.wire import rates

A = (fakes.UUID_A, 'vda')
B = (fakes.UUID_B, 'vdb')


def disks(batch):
    """The batch's disks as the controller reads them, a dict each."""
    got = batch_mod.decode(batch.to_wire())
    out = []
    for i in range(len(got)):
        disk = {'dev': got.dev[i], 'gap': got.gap[i],
                'volume_id': got.volume_id[i],
                'project_id': got.project_id[i],
                'static_iops': got.static[0, i],
                'static_bytes_sec': got.static[1, i]}
        for name, row in zip(batch_mod.RATES, got.rates):
            disk[name] = None if math.isnan(row[i]) else row[i]
        out.append(disk)
    return out


class Clock:
    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now


class SamplerTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(host='compute1')
        self.flags(sample_interval=5.0, group='agent')
        self.driver = fakes.FakeDriver([
            base.Disk(A[0], A[1], project_id='p1',
                      static=caps.full({'total_iops_sec': 1000})),
            base.Disk(B[0], B[1], volume_id='vol-1', static=caps.full({}))])
        self.clock = Clock(100.0)
        self.wall = Clock(1800000000.0)
        self.mgr = manager.AgentManager(
            self.conf, self.driver, clock=self.wall,
            store=fakes.MemoryStore())
        self.api = fakes.FakeControllerAPI()
        self.sampler = sampler.Sampler(self.conf, self.driver, self.mgr,
                                       self.api, clock=self.clock,
                                       wall_clock=self.wall)

    def set_counters(self, key, **c):
        self.driver.counters[key] = dict(
            dict.fromkeys(rates.COUNTER_KEYS, 0), **c)

    def advance(self, dt):
        self.clock.now += dt
        self.wall.now += dt

    def by_dev(self, batch):
        return {d['dev']: d for d in disks(batch)}

    def test_first_pass_is_gap_then_rates(self):
        self.set_counters(A, wr_reqs=0, wr_bytes=0, wr_times=0)
        self.set_counters(B)
        first = self.sampler.run_once()
        self.assertEqual('first', self.by_dev(first)['vda']['gap'])
        self.assertIsNone(self.by_dev(first)['vda']['write_iops'])
        self.advance(5.0)
        self.set_counters(A, wr_reqs=500, wr_bytes=500 * 4096,
                          wr_times=500 * 3 * 10 ** 6, fl_reqs=10)
        second = self.by_dev(self.sampler.run_once())
        vda = second['vda']
        self.assertIsNone(vda['gap'])
        self.assertEqual(100.0, vda['write_iops'])
        self.assertEqual(409600.0, vda['write_bytes_sec'])
        self.assertAlmostEqual(3.0, vda['write_latency_ms'])
        self.assertNotIn('flush_ops', vda)
        self.assertEqual(0.0, vda['read_iops'])
        self.assertEqual((1000.0, math.inf),
                         (vda['static_iops'], vda['static_bytes_sec']))
        self.assertEqual('p1', vda['project_id'])
        self.assertEqual('vol-1', second['vdb']['volume_id'])
        self.assertEqual(math.inf, second['vdb']['static_iops'])

    def urgent_passes(self, a_reqs, a_times_ms):
        """Three passes 1 s apart; A's writes and latency per pass."""
        self.set_counters(B)
        marked = []
        reqs, times = getattr(self, 'a_counters', (0, 0))
        for n, ms in zip(a_reqs, a_times_ms):
            reqs, times = reqs + n, times + n * ms * 10 ** 6
            self.a_counters = (reqs, times)
            self.set_counters(A, wr_reqs=reqs, wr_bytes=reqs * 4096,
                              wr_times=times)
            batch = self.sampler.run_once()
            marked.append([batch.dev[i] for i in batch.urgent_rows()])
            self.advance(1.0)
        return marked

    def test_urgent_disks_idle_to_busy_or_queue_filling(self):
        self.flags(urgent_samples=True, group='agent')
        self.sampler = sampler.Sampler(self.conf, self.driver, self.mgr,
                                       self.api, clock=self.clock,
                                       wall_clock=self.wall)
        # woke: idle one second, 50 writes the next
        self.assertEqual([[], [], ['vda']],
                         self.urgent_passes([0, 0, 50], [0, 0, 2]))
        # its latency per write went from 2 to 9 ms: its queue filled
        self.assertEqual([[], [], ['vda']],
                         self.urgent_passes([50, 50, 40], [2, 2, 9]))
        # steady, or slower by less than the ratio: not urgent
        self.assertEqual([[], [], []],
                         self.urgent_passes([50, 50, 50], [2, 3, 5]))
        # what the controller reads: the positions, decoded
        reqs, times = self.a_counters
        self.set_counters(A, wr_reqs=reqs + 50,
                          wr_bytes=(reqs + 50) * 4096,
                          wr_times=times + 50 * 100 * 10 ** 6)
        sent = self.sampler.run_once()
        self.assertEqual([0], batch_mod.decode(sent.to_wire()).urgent_rows())

    def test_watch_sees_a_queue_filling_between_passes(self):
        self.flags(urgent_samples=True, group='agent')
        self.sampler = sampler.Sampler(self.conf, self.driver, self.mgr,
                                       self.api, clock=self.clock,
                                       wall_clock=self.wall)
        # (the second pass woke from the first's gap)
        self.assertEqual([[], ['vda'], []],
                         self.urgent_passes([50, 50, 50], [2, 2, 2]))

        def step(n, ms):
            # a quarter of a second more of A's writes, then a watch read
            reqs, times = self.a_counters
            self.a_counters = (reqs + n, times + n * ms * 10 ** 6)
            self.set_counters(A, wr_reqs=self.a_counters[0],
                              wr_bytes=self.a_counters[0] * 4096,
                              wr_times=self.a_counters[1])
            self.advance(0.25)
            return self.sampler.watch()
        self.assertEqual(frozenset(), step(12, 2))     # the first read
        self.assertEqual(frozenset(), step(13, 2))     # steady
        # a neighbour filled the queue: 2 -> 9 ms in a quarter second,
        # seen before the pass (whose own rates since the last pass, 2.7
        # ms, are not twice the last pass's)
        rose = step(2, 9)
        self.assertEqual({A}, rose)
        sent = self.sampler.run_once(rose=rose)
        self.assertEqual(['vda'], [sent.dev[i] for i in sent.urgent_rows()])
        self.assertLess(sent.rates[rates.RATE_FIELDS.index(
            'write_latency_ms')][0], 4.0)
        # the disks changed since the pass: nothing until the next one
        self.driver.counters.pop(B)
        self.assertEqual(frozenset(), step(2, 90))

    def test_no_watch_unless_urgent_samples(self):
        self.driver.get_block_stats = mock.Mock()
        self.assertEqual(frozenset(), self.sampler.watch())
        self.driver.get_block_stats.assert_not_called()

    def test_the_driver_s_percentiles_go_into_the_batch(self):
        self.set_counters(A)
        self.set_counters(B)
        self.set_counters(('c' * 8 + A[0][8:], 'vda'))   # not listed
        listed = {key: self.driver.disks[key] for key in (A, B)}
        read = self.driver.get_block_stats

        def with_p99():
            got = read()
            return rates.Readings(got.keys, got.counters, np.array(
                [{A: 4.5, B: math.nan}.get(k, 9.0) for k in got.keys]))
        self.useFixture(fixtures.MockPatchObject(
            self.driver, 'get_block_stats', with_p99))
        sent = self.sampler.run_once(listed)
        self.assertEqual([A, B], sent.keys())
        self.assertEqual([4.5, None], sent.to_wire()['disks']['p99_ms'])
        got = batch_mod.decode(sent.to_wire()).p99_ms
        self.assertEqual(4.5, got[0])
        self.assertTrue(math.isnan(got[1]))
        # a driver that measures none: no column
        self.useFixture(fixtures.MockPatchObject(
            self.driver, 'get_block_stats', read))
        self.advance(5.0)
        self.assertIsNone(self.sampler.run_once(listed).p99_ms)

    def test_no_urgent_disk_unless_asked(self):
        self.assertEqual([[], [], []],
                         self.urgent_passes([0, 0, 50], [0, 0, 2]))
        self.assertNotIn('urgent', self.api.batches[-1][1].to_wire()[
            'disks'])

    def test_one_batch_and_heartbeat_per_pass_all_valid(self):
        self.set_counters(A)
        self.set_counters(B)
        self.sampler.run_once()
        self.advance(5.0)
        batch = self.sampler.run_once()
        self.assertEqual(2, len(self.api.batches))
        self.assertEqual(2, len(self.api.heartbeats))
        host, sent = self.api.batches[-1]
        self.assertEqual('compute1', host)
        self.assertIs(batch, sent)
        self.assertEqual(self.wall.now, batch.read_at)
        # columns, one check for all
        self.assertEqual(2, len(batch_mod.decode(batch.to_wire())))
        info = self.api.heartbeats[-1][1]
        self.assertEqual(2, info['disks'])
        self.assertEqual('FakeDriver', info['driver'])

    def test_a_cap_in_force_is_not_sent(self):
        # the controller's database holds the caps it set; the static
        # ceiling stays the disk's own (the cap is not its ceiling)
        self.set_counters(A)
        self.set_counters(B)
        before = self.sampler.run_once().to_wire()
        self.mgr.periodic()
        self.mgr.apply_caps({}, [test_manager.cap(
            total_iops_sec=300, lease=self.wall.now + 60)])
        self.assertIsNotNone(self.mgr.cap_in_force(A))
        self.advance(5.0)
        after = self.sampler.run_once().to_wire()
        self.assertEqual(before['disks']['static_iops_sec'],
                         after['disks']['static_iops_sec'])
        self.assertEqual(set(batch_mod.WIRE_LISTS), set(after['disks']))

    def test_counter_reset_is_gap_and_marks_dirty(self):
        self.set_counters(A, rd_reqs=1000)
        self.sampler.run_once()
        self.advance(5.0)
        self.set_counters(A, rd_reqs=3)
        vda = self.by_dev(self.sampler.run_once())['vda']
        self.assertEqual('reset', vda['gap'])
        self.assertIsNone(vda['read_iops'])
        self.assertIn(A[0], self.mgr._dirty)

    def test_long_hole_is_a_gap(self):
        self.set_counters(A)
        self.sampler.run_once()
        self.advance(15.1)
        self.set_counters(A, rd_reqs=10)
        vda = self.by_dev(self.sampler.run_once())['vda']
        self.assertEqual('too_long', vda['gap'])

    def test_disk_without_listing_is_skipped(self):
        self.set_counters(A)
        # Appeared between the listing and the statistics read.
        self.driver.add(base.Disk('c0ffee00-0000-4000-8000-000000000000',
                                  'vdc', static=caps.full({})))
        self.set_counters(('c0ffee00-0000-4000-8000-000000000000', 'vdc'))
        self.assertEqual(3, len(self.driver.get_all_block_stats()))
        batch = self.sampler.run_once(disks={A: self.driver.disks[A]})
        self.assertEqual([A[0]], batch.instance_uuid)

    def test_report_outage_warns_once_then_recovers(self):
        log = self.useFixture(fixtures.FakeLogger())
        self.set_counters(A)
        self.set_counters(B)
        sent = self.api.report_samples
        self.api.report_samples = mock.Mock(side_effect=RuntimeError(
            "404 no exchange 'iotguard-controller_fanout'"))
        for _ in range(3):
            batch = self.sampler.run_once()
            self.advance(5.0)
        # The interval still returns its batch; one warning, not three.
        self.assertEqual(2, len(batch))
        self.assertEqual(1, log.output.count('Cannot report samples'))
        self.assertIn("no exchange 'iotguard-controller_fanout'",
                      log.output)
        self.assertEqual([], self.api.heartbeats)
        self.api.report_samples = sent
        self.assertTrue(self.sampler.report(self.sampler.collect(
            self.driver.list_disks())))
        self.assertIn('again after 15 s', log.output)
        self.assertEqual(1, len(self.api.batches))
        # A second outage is warned about again.
        self.api.report_samples = mock.Mock(side_effect=OSError('down'))
        self.assertFalse(self.sampler.report(self.sampler.collect({})))
        self.assertEqual(2, log.output.count('Cannot report samples'))
