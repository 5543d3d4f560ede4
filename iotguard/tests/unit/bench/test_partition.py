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

"""The partition bench's bookkeeping: layout, re-ownership, leases."""

from unittest import mock

from benchmarks import controller as bench_controller
from benchmarks import partition as bench
from iotguard.controller import loop as loop_mod
from iotguard.tests import base as test_base


def _round(controller, k, started, owned):
    return bench.Round(controller=controller, round=k, started=started,
                       ended=started + 0.5, owned=owned, disks=0,
                       feed_s=0.0, feed_cpu_s=0.0, wall_s=0.5, cpu_s=0.1,
                       rss_mib=100.0,
                       decisions=0, applied=0, renewed=0)


class TestPartitionBench(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.args = bench.parser().parse_args([
            '--hosts', '6', '--disks-per-host', '5', '--domains', '4'])

    def test_owned_disks_are_the_domains_disks_by_host(self):
        names = bench_controller.domain_names(self.args)
        every = [bench_controller.place(self.args, n) for n in range(30)]
        mine = bench._owned_disks(self.args, [names[3], names[1]])
        self.assertEqual([d for d in every if d[2] in (1, 3)], mine)
        self.assertEqual(sorted(mine), mine)   # grouped by host
        self.assertEqual(every, bench._owned_disks(self.args, names))

    def test_feed_of_a_share_is_the_share_of_the_feed(self):
        """A controller's samples are those the single bench sends."""
        every = [bench_controller.place(self.args, n) for n in range(30)]
        mine = bench._owned_disks(self.args, ['bench-002'])
        whole = dict(bench_controller.batches(every, 100.0, {}))
        for host, share in bench_controller.batches(mine, 100.0, {}):
            for i, uuid in enumerate(share.instance_uuid):
                j = whole[host].instance_uuid.index(uuid)
                self.assertEqual(whole[host].rates[:, j].tolist(),
                                 share.rates[:, i].tolist())

    def test_reowned_after_the_last_of_the_victims_domains(self):
        rounds = [_round(0, 1, 0.0, ['a']), _round(1, 1, 0.0, ['b', 'c']),
                  _round(0, 2, 10.0, ['a', 'b']),
                  _round(0, 3, 15.0, ['a', 'b', 'c'])]
        domains, after = bench._reowned(rounds, 1, 8.0)
        self.assertEqual(['b', 'c'], domains)
        self.assertEqual(7.5, after)
        self.assertIsNone(bench._reowned(rounds[:3], 1, 8.0)[1])
        # a round that started before the kill does not count
        self.assertIsNone(bench._reowned(rounds[:2] + [
            _round(0, 2, 7.0, ['a', 'b', 'c'])], 1, 8.0)[1])

    def test_leases_renewed_released_or_lapsed(self):
        before = {1: 20.0, 2: 20.0, 3: 20.0, 4: 12.0}
        pending, leases = set(before), bench.Leases(checked=4)
        db = mock.Mock()
        with mock.patch.object(bench, '_caps', side_effect=[
                {1: 25.0, 3: 20.0, 4: 12.0},    # 1 renewed at 10 (lease 15)
                {3: 20.0, 4: 12.0}]):
            bench._watch_leases(db, [], before, 15.0, pending, leases, 11.0)
            # 2 gone before its lease: released by a decision
            self.assertEqual({3, 4}, pending)
            bench._watch_leases(db, [], before, 15.0, pending, leases, 13.0)
        self.assertEqual({3}, pending)      # its lease has not passed yet
        self.assertEqual(1, leases.renewed)
        self.assertEqual(10.0, leases.min_margin_s)
        self.assertEqual(1, leases.released)
        self.assertEqual([4], leases.lapsed)

    def test_renewed_after_its_lease_is_a_lapse(self):
        before = {1: 20.0}
        pending, leases = {1}, bench.Leases(checked=1)
        with mock.patch.object(bench, '_caps', return_value={1: 36.0}):
            bench._watch_leases(mock.Mock(), [], before, 15.0, pending,
                                leases, 21.0)
        self.assertEqual([1], leases.lapsed)

    def test_member_timeout_keeps_the_services_proportion(self):
        self.assertEqual(4, bench.member_timeout(5.0))
        self.assertEqual(2, bench.member_timeout(2.5))
        self.assertEqual(16, bench.member_timeout(20.0))
        self.assertEqual(1, bench.member_timeout(0.5))

    def test_stretched_interval_keeps_the_cadences_in_rounds(self):
        self.addCleanup(setattr, loop_mod, 'FULL_READ_S',
                        loop_mod.FULL_READ_S)
        args = bench.parser().parse_args(['--interval', '15'])
        bench._interval_conf(self.conf, args, 3, 'g')
        self.assertEqual(45.0, self.conf.controller.lease_seconds)
        self.assertEqual(90.0, self.conf.controller.rates_write_interval)
        self.assertEqual(180.0, loop_mod.FULL_READ_S)
        self.assertEqual(12, self.conf.coordination.member_timeout)
        self.assertEqual('g', self.conf.coordination.group_name)
