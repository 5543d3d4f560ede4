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

"""Each disk's record, gathered from the rounds by the minute."""

import datetime
import types

import numpy as np

from iotguard.controller import record
from iotguard.policy import base as base_policy
from iotguard.tests import base
from iotguard.tests.unit.policy import fakes

GOLD = base_policy.Tier('gold', min_iops=100.0)
CAP = {'total_iops_sec': 300}
T0 = 1_700_000_040.0      # a minute's start


def members(*ids):
    return [types.SimpleNamespace(id=i) for i in ids]


class RecorderTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.recorder = record.Recorder(interval_s=5.0)
        # a floor-holder, a capped best-effort disk, a plain one, a stale
        self.snap = fakes.snapshot(
            fakes.disk('a', 50.0, tier=GOLD), fakes.disk('b', 400.0),
            fakes.disk('c', 10.0), fakes.disk('d', 10.0, tier=GOLD,
                                              stale=True))
        self.floor = np.array([0.1, 0.0, 0.0, 0.1])

    def round(self, now, violated=(False,) * 4, capped=(None, CAP) + (
            None,) * 2, reasons=None):
        self.recorder.add(members(1, 2, 3, 4), self.snap,
                          np.array(violated), self.floor, list(capped),
                          reasons or {}, now)

    def test_a_minute_closes_with_its_seconds(self):
        self.round(T0, reasons={1: 'capped at 300 IOPS: why'})
        self.round(T0 + 5, violated=(True, False, False, False))
        self.round(T0 + 10)
        self.assertEqual([], self.recorder.closed(T0 + 59))
        minutes = {m.disk_id: m for m in self.recorder.closed(T0 + 60)}
        # the plain disk (no floor, no cap) and the stale one: nothing
        self.assertEqual({1, 2}, set(minutes))
        a, b = minutes[1], minutes[2]
        self.assertEqual(datetime.datetime.utcfromtimestamp(T0), a.minute)
        self.assertEqual((15.0, 15.0, 10.0, 0.0, None),
                         (a.seconds, a.floor_due_s, a.floor_kept_s,
                          a.capped_s, a.cap_reason))
        self.assertEqual((15.0, 0.0, 0.0, 15.0, 'capped at 300 IOPS: why'),
                         (b.seconds, b.floor_due_s, b.floor_kept_s,
                          b.capped_s, b.cap_reason))
        self.assertEqual(400.0, b.iops)
        # the floor in force (IOPS only: no bytes floor), the cap
        self.assertEqual((100.0, None, None, None),
                         (a.floor_iops, a.floor_bytes_sec, a.cap_iops,
                          a.cap_bytes_sec))
        self.assertEqual((None, None, 300.0, None),
                         (b.floor_iops, b.floor_bytes_sec, b.cap_iops,
                          b.cap_bytes_sec))
        self.assertEqual([], self.recorder.closed(T0 + 120))

    def test_a_minute_keeps_its_tightest_cap(self):
        eased = {'total_iops_sec': 600, 'total_bytes_sec': 8000000}
        self.round(T0, capped=(None, eased, None, None))
        self.round(T0 + 5)
        self.round(T0 + 10, capped=(None, eased, None, None))
        self.round(T0 + 60, capped=(None, eased, None, None))
        got = sorted((m.minute, m.cap_iops, m.cap_bytes_sec)
                     for m in self.recorder.closed(T0 + 120)
                     if m.disk_id == 2)
        self.assertEqual([[300.0, 8e6], [600.0, 8e6]],
                         [limits for _minute, *limits in got])

    def test_the_reason_stays_while_capped_and_goes_with_the_cap(self):
        self.round(T0, reasons={1: 'capped at 300 IOPS: why'})
        self.round(T0 + 60)
        self.round(T0 + 120, capped=(None,) * 4)
        self.round(T0 + 180)
        # uncapped at T0 + 120 (no floor either: no minute), capped
        # again at T0 + 180 without a reason heard: none, not the old one
        got = sorted((m.minute, m.cap_reason)
                     for m in self.recorder.closed(T0 + 240)
                     if m.disk_id == 2)
        self.assertEqual(['capped at 300 IOPS: why'] * 2 + [None],
                         [reason for _minute, reason in got])


class DiskRoundsTest(base.TestCase):

    def test_each_disk_with_its_rates_floor_cap_and_seconds(self):
        snap = fakes.snapshot(
            fakes.disk('a', 50.0, tier=GOLD), fakes.disk('b', 400.0),
            fakes.disk('d', 10.0, tier=GOLD, stale=True))
        got = record.disk_rounds(
            snap, np.array([True, False, False]),
            np.array([0.1, 0.0, 0.1]), [None, CAP, None], 5.0)
        a, b, d = got
        self.assertEqual((snap.disk_ids[0], 50.0, 100.0, None, None, 5.0,
                          0.0),
                         (a.disk, a.iops, a.floor_iops, a.floor_bytes_sec,
                          a.cap_iops, a.checked_s, a.kept_s))
        self.assertEqual((400.0, None, 300.0, None, 0.0, 0.0),
                         (b.iops, b.floor_iops, b.cap_iops, b.cap_bytes_sec,
                          b.checked_s, b.kept_s))
        # stale: no rates, no floor-seconds, its floor still shown
        self.assertEqual((None, None, 100.0, 0.0),
                         (d.iops, d.bytes_sec, d.floor_iops, d.checked_s))


class ReasonTest(base.TestCase):

    def test_tightened_and_eased_in_the_disks_own_numbers(self):
        reason = record.cap_reason(
            {}, {'total_iops_sec': 300, 'total_bytes_sec': 12000000},
            410.0, 16.4e6)
        self.assertEqual('capped at 300 IOPS and 12.0 MB/s: its storage was '
                         'contended and it was doing 410 IOPS and 16.4 MB/s, '
                         'more than its fair share', reason)
        self.assertEqual(
            'cap eased to 600 IOPS: its storage had room again',
            record.cap_reason({'total_iops_sec': 300},
                              {'total_iops_sec': 600}, 290.0, 1e6))
