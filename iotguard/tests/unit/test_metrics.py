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

"""The Prometheus families the controller and the agent serve."""

import math
import urllib.request

from prometheus_client import parser

from iotguard.controller import effects
from iotguard import metrics
from iotguard.tests import base
from iotguard.tests.fixtures import ports

UUIDS = {1: '6f1c3c34-5d9e-4a4f-9a43-0c5d1f1b2a01',
         2: '6f1c3c34-5d9e-4a4f-9a43-0c5d1f1b2a02'}
STATS = {'stored': 40, 'dropped': 2, 'foreign': 1, 'forwarded': 5,
         'registered': 3}


def samples(families):
    """{(name, labels): value} of what a scrape would read."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in families for s in family.samples}


class RoundsTest(base.TestCase):

    def test_totals_add_up_and_gauges_keep_the_last_round(self):
        rounds = metrics.Rounds(interval_s=5.0)
        rounds.add([effects.RoundResult('ceph', disks=4, applied=1,
                                        floored=3, violations=1, load=0.5,
                                        committed=0.4, overcommitted=False)],
                   0.2)
        rounds.add([effects.RoundResult('ceph', disks=4, stale=1, released=1,
                                        floored=2, load=0.25)], 0.3)
        got = samples(rounds.collect(STATS, refused=7))
        ceph = (('domain', 'ceph'),)
        self.assertEqual(2, got['iotguard_controller_rounds_total', ()])
        self.assertEqual(0.3, got['iotguard_controller_round_seconds', ()])
        self.assertEqual(2, got['iotguard_domain_cap_changes_total', ceph])
        self.assertEqual(25.0, got['iotguard_domain_floor_checked_seconds_'
                                   'total', ceph])
        self.assertEqual(5.0, got['iotguard_domain_floor_missed_seconds_'
                                  'total', ceph])
        self.assertEqual(0, got['iotguard_domain_floor_violations', ceph])
        self.assertEqual(1, got['iotguard_domain_stale_disks', ceph])
        self.assertEqual(0.25, got['iotguard_domain_load_ratio', ceph])
        # judged on the first round only: the verdict stands
        self.assertEqual(0.4, got['iotguard_domain_committed_ratio', ceph])
        self.assertEqual(0.0, got['iotguard_domain_overcommitted', ceph])
        self.assertEqual(2, got['iotguard_controller_samples_total',
                                (('result', 'dropped'),)])
        self.assertEqual(7, got['iotguard_controller_samples_refused_total',
                                ()])

    def test_urgent_decisions_count_their_cap_changes_alone(self):
        rounds = metrics.Rounds(interval_s=5.0)
        rounds.add([effects.RoundResult('ceph', disks=4, floored=3)], 0.2)
        rounds.urgent([effects.RoundResult('ceph', disks=4, applied=1,
                                           floored=3, violations=2)])
        got = samples(rounds.collect(STATS, refused=0))
        ceph = (('domain', 'ceph'),)
        self.assertEqual(1, got['iotguard_domain_cap_changes_total', ceph])
        self.assertEqual(1, got['iotguard_controller_rounds_total', ()])
        self.assertEqual(15.0, got['iotguard_domain_floor_checked_seconds_'
                                   'total', ceph])
        self.assertEqual(0, got['iotguard_domain_floor_violations', ceph])

    def test_a_domain_handed_over_is_no_longer_served(self):
        rounds = metrics.Rounds(interval_s=5.0)
        rounds.add([effects.RoundResult('a'), effects.RoundResult('b')], 0.1)
        rounds.forget(['b'])
        got = samples(rounds.collect(STATS, 0))
        self.assertEqual({(('domain', 'b'),)}, {
            labels for name, labels in got if name == 'iotguard_domain_disks'})
        self.assertEqual(1, got['iotguard_controller_domains', ()])

    def test_per_disk_series_add_up_and_leave_with_their_disk(self):
        rounds = metrics.Rounds(interval_s=5.0)

        def disk(n, kept=5.0, cap=None, iops=300.0):
            return metrics.DiskRound('%s/vda' % UUIDS[n], iops,
                                     iops and iops * 4096, 100.0, None, cap,
                                     None, 5.0, kept)
        rounds.add([effects.RoundResult('a', per_disk=[
            disk(1, cap=250.0), disk(2, kept=0.0)])], 0.1)
        rounds.add([effects.RoundResult('a', per_disk=[
            disk(1, iops=None), disk(2)])], 0.1)
        got = samples(rounds.collect(STATS, 0))
        one, two = ((('disk', '%s/vda' % UUIDS[i]), ('domain', 'a'))
                    for i in (1, 2))
        self.assertEqual((10.0, 10.0, 5.0), (
            got['iotguard_disk_floor_checked_seconds_total', one],
            got['iotguard_disk_floor_kept_seconds_total', one],
            got['iotguard_disk_floor_kept_seconds_total', two]))
        self.assertEqual(100.0, got['iotguard_disk_floor_iops', two])
        # stale in the last round: no rate; uncapped: no cap; no floor
        # in bytes: no such series
        self.assertEqual({('iotguard_disk_iops', two)}, {
            k for k in got if k[0] == 'iotguard_disk_iops'})
        for name in ('iotguard_disk_cap_iops',
                     'iotguard_disk_floor_bytes_per_second'):
            self.assertNotIn(name, {k[0] for k in got})
        # a disk gone from its domain, then the domain handed over
        rounds.add([effects.RoundResult('a', per_disk=[disk(2)])], 0.1)
        got = samples(rounds.collect(STATS, 0))
        self.assertEqual({two}, {labels for name, labels in got
                                 if name.startswith('iotguard_disk_')})
        self.assertEqual(10.0, got['iotguard_disk_floor_kept_seconds_total',
                                   two])
        rounds.forget([])
        self.assertFalse([k for k in samples(rounds.collect(STATS, 0))
                          if k[0].startswith('iotguard_disk_')])

    def test_no_per_disk_series_unless_asked(self):
        rounds = metrics.Rounds(interval_s=5.0)
        rounds.add([effects.RoundResult('a', disks=3)], 0.1)
        self.assertFalse([k for k in samples(rounds.collect(STATS, 0))
                          if k[0].startswith('iotguard_disk_')])

    def test_unknown_verdict_is_nan(self):
        rounds = metrics.Rounds(interval_s=5.0)
        rounds.add([effects.RoundResult('a', committed=1.2,
                                        overcommitted=None)], 0.1)
        got = samples(rounds.collect(STATS, 0))
        self.assertTrue(math.isnan(got['iotguard_domain_overcommitted',
                                       (('domain', 'a'),)]))


class ServeTest(base.TestCase):

    def test_scraped_over_http(self):
        passes = metrics.Passes()
        passes.add(0.05, disks=12)
        port = ports.free_port()
        server = metrics.serve('127.0.0.1', port,
                               lambda: passes.collect(caps=2, lapsed=1))
        self.addCleanup(server.shutdown)
        with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port,
                                    timeout=5) as answer:
            text = answer.read().decode()
        got = samples(parser.text_string_to_metric_families(text))
        self.assertEqual(12, got['iotguard_agent_disks', ()])
        self.assertEqual(2, got['iotguard_agent_caps', ()])
        self.assertEqual(1, got['iotguard_agent_leases_lapsed_total', ()])
        self.assertEqual(1, got['iotguard_agent_passes_total', ()])

    def test_port_zero_serves_nothing(self):
        self.assertIsNone(metrics.serve('127.0.0.1', 0, list))
