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

"""A disk's page: its numbers now and its last hour charted in SVG.

The record stubbed has the shape of api-ref/source/samples/instances/
disk-record-response.json, over the hour 03:00 to 04:00.
"""

import copy
import re
from unittest import mock

from django.template import loader
from django.urls import reverse
from django.utils import translation
from openstack_dashboard.test import helpers

from iotguard_dashboard.api import iotguard
from iotguard_dashboard.content import chart
from iotguard_dashboard.tests import test_panels as data

CAPPED = ('capped at 2900 IOPS and 11.9 MB/s: its storage was contended '
          'and it was doing 3200 IOPS and 13.0 MB/s, more than its fair '
          'share')


def _minute(minute, kept, capped=0.0, iops=2100.0, reason=None):
    return {'minute': '2026-11-22T03:%02d:00Z' % minute, 'seconds': 60.0,
            'floor_due_s': 60.0, 'floor_kept_s': kept, 'capped_s': capped,
            'iops': iops, 'bytes_sec': iops * 4096, 'cap_reason': reason,
            'floor_kept_ratio': kept / 60}


RECORD = {
    'instance_uuid': data.UUID, 'dev': 'vda',
    'since': '2026-11-22T03:00:00Z', 'until': '2026-11-22T04:00:00Z',
    'floor_due_s': 240.0, 'floor_kept_ratio': 230 / 240, 'capped_s': 95.0,
    'minutes': [_minute(40, 60.0),
                _minute(41, 55.0, 35.0, 3150.0, CAPPED),
                _minute(42, 55.0, 60.0, 2900.0, CAPPED),
                # a minute missing (no fresh samples), then capped again
                _minute(44, 60.0)]}
DISK_URL = reverse('horizon:project:iotguard_disks:disk',
                   args=[data.UUID, 'vda'])


class ChartTests(helpers.TestCase):

    def test_bars_lines_and_scale(self):
        # RECORD's minutes have no floor nor cap of their own (an API
        # without them): the disk's of now, as lines.
        iops, mb, kept = chart.charts(RECORD, data.DISK)
        self.assertEqual(['iops', 'bytes_sec', 'kept'],
                         [c.slug for c in (iops, mb, kept)])
        slot = chart.WIDTH / 60
        # One bar a minute where the minute is, its height to scale: the
        # highest of 3150 IOPS, floor 2000 and cap 2900 rounds up to 5000.
        self.assertEqual(
            [(chart.LEFT + n * slot, chart.HEIGHT * v / 5000)
             for n, v in ((40, 2100), (41, 3150), (42, 2900), (44, 2100))],
            [(round(b.x, 6), round(b.height, 6)) for b in iops.bars])
        self.assertEqual(['rate', 'capped', 'capped', 'rate'],
                         [b.kind for b in iops.bars])
        self.assertEqual('03:41: 3150 IOPS; capped 35 s: ' + CAPPED,
                         iops.bars[1].title)
        self.assertEqual(
            [('floor', 'floor now: 2000 IOPS', 2000),
             ('cap', 'cap in force now: 2900 IOPS', 2900)],
            [(line.kind, line.title,
              round(5000 * (chart.TOP + chart.HEIGHT - line.y)
                    / chart.HEIGHT)) for line in iops.lines])
        self.assertEqual(['0', '2500 IOPS', '5000 IOPS'],
                         [t.label for t in iops.scale])
        self.assertEqual(['03:00', '03:15', '03:30', '03:45', '04:00'],
                         [t.label for t in iops.times])
        # The MB/s chart: floor 20 MB/s, cap 11.9 MB/s.
        self.assertIn('floor now: 20.0 MB/s', [t for _, t in mb.legend])
        self.assertIn('cap in force now: 11.9 MB/s', [t for _, t in mb.legend])
        self.assertEqual(['kept', 'missed', 'missed', 'kept'],
                         [b.kind for b in kept.bars])
        self.assertEqual('03:41: floor kept 55 of 60 s (91.7 %)',
                         kept.bars[1].title)

    def test_floor_and_cap_by_the_minute(self):
        # An API that records each minute's floor and cap: step lines of
        # what was in force then, not lines of now.
        record = copy.deepcopy(RECORD)
        for m, floor, cap in zip(record['minutes'],
                                 (2000.0, 2000.0, 3000.0, 3000.0),
                                 (None, 2900.0, 2900.0, None)):
            m.update(floor_iops=floor, floor_bytes_sec=None, cap_iops=cap,
                     cap_bytes_sec=None)
        iops, mb, _kept = chart.charts(record, data.DISK)
        self.assertEqual(([], []), (iops.lines, mb.lines))

        def x(minute):
            return round(chart.LEFT + minute * chart.WIDTH / 60, 2)

        def y(iops):    # the scale's top: 3150 IOPS rounds up to 5000
            return round(chart.TOP + chart.HEIGHT * (1 - iops / 5000), 2)

        self.assertEqual([
            # 2000 for two minutes, up to 3000 at 03:42; 03:43 is missing
            ('floor', '03:40 to 03:42: floor 2000 IOPS',
             'M %s %s H %s' % (x(40), y(2000), x(42))),
            ('floor', '03:42 to 03:43: floor 3000 IOPS',
             'M %s %s V %s H %s' % (x(42), y(2000), y(3000), x(43))),
            ('floor', '03:44 to 03:45: floor 3000 IOPS',
             'M %s %s H %s' % (x(44), y(3000), x(45))),
            ('cap', '03:41 to 03:43: cap in force 2900 IOPS',
             'M %s %s H %s' % (x(41), y(2900), x(43)))],
            [(s.kind, s.title, s.path) for s in iops.steps])
        self.assertEqual([('floor step', 'floor in force, by the minute'),
                          ('cap step', 'cap in force, by the minute')],
                         [(k, str(t)) for k, t in iops.legend[2:]])
        # No floor nor cap in bytes/s those minutes: none drawn, not the
        # disk's of now either.
        self.assertEqual(([], 2), (mb.steps, len(mb.legend)))
        svg = loader.render_to_string(
            'iotguard_dashboard/project/_chart.html', {'chart': iops})
        self.assertEqual(3, svg.count('<path class="step floor" d="M '))
        self.assertIn('<title>03:41 to 03:43: cap in force 2900 IOPS</title>',
                      svg)

    def test_a_disk_without_floor_nor_cap_has_no_lines(self):
        disk = dict(data.IDLE, floor={'min_iops': 0.0, 'min_bytes_sec': 0.0})
        record = dict(RECORD, minutes=[dict(
            _minute(10, 0.0, 60.0, 0.0, CAPPED), floor_due_s=0.0,
            floor_kept_ratio=None)])
        iops, _mb, kept = chart.charts(record, disk)
        self.assertEqual([], iops.lines)
        # A minute at zero shows as a sliver; no floor due, no kept bar.
        self.assertEqual(1, len(iops.bars))
        self.assertGreater(iops.bars[0].height, 0)
        self.assertEqual([], kept.bars)

    def test_spells_of_the_same_cap(self):
        record = copy.deepcopy(RECORD)
        record['minutes'].append(_minute(45, 60.0, 20.0, 2900.0, CAPPED))
        self.assertEqual(
            [('03:41', '03:43', 95.0, CAPPED),
             ('03:45', '03:46', 20.0, CAPPED)],
            [(s.start, s.end, s.capped_s, s.reason)
             for s in chart.spells(record)])

    def test_svg_numbers_whatever_the_language(self):
        # German writes 2,5: SVG needs 2.5.
        svg = None
        with translation.override('de'):
            svg = loader.render_to_string(
                'iotguard_dashboard/project/_chart.html',
                {'chart': chart.charts(RECORD, data.DISK)[0]})
        numbers = re.findall(r' (?:x|y|width|height|y1|y2)="([^"]*)"', svg)
        self.assertGreater(len(numbers), 10)
        for number in numbers:
            if number != '100%':    # the SVG's own width
                float(number)


class DiskViewTests(data.StubbedAPIMixin, helpers.TestCase):

    def setUp(self):
        super().setUp()
        self.record = mock.patch.object(
            iotguard, 'disk_record',
            return_value=iotguard.Record(copy.deepcopy(RECORD))).start()

    def test_the_disks_last_hour(self):
        response = self.client.get(DISK_URL)
        self.assertEqual(200, response.status_code)
        self.assertTemplateUsed(response,
                                'iotguard_dashboard/project/disk.html')
        self.record.assert_called_once_with(mock.ANY, data.UUID, 'vda')
        self.assertEqual('Disk vda of web-1', response.context['page_title'])
        html = response.content.decode()
        self.assertEqual(3, html.count('<svg'))
        for text in ('gold (api)', '2000 IOPS, 20.0 MB/s', data.REASON,
                     '95.8 %', '95 s', '03:41: 3150 IOPS; capped 35 s: ',
                     'cap in force now: 2900 IOPS',
                     '03:42: floor kept 55 of 60 s (91.7 %)',
                     'from 03:00 to 04:00 (UTC)',
                     'href="%s"' % data.TIER):
            self.assertContains(response, text)
        self.assertEqual([('03:41', '03:43')], [
            (s.start, s.end) for s in response.context['spells']])

    def test_the_disks_table_links_each_disk(self):
        self.assertContains(self.client.get(data.INDEX),
                            'href="%s"' % DISK_URL)

    def test_nothing_recorded(self):
        self.record.return_value = iotguard.Record(
            RECORD, floor_due_s=0.0, floor_kept_ratio=None, capped_s=0.0,
            minutes=[])
        response = self.client.get(DISK_URL)
        self.assertContains(response, 'Nothing recorded in the last hour')
        self.assertContains(response, 'no floor due')
        self.assertNotContains(response, '<svg')

    def test_record_unavailable(self):
        self.record.side_effect = iotguard.APIError(503, 'away')
        response = self.client.get(DISK_URL)
        self.assertEqual(200, response.status_code)
        self.assertContains(response, 'gold (api)')
        self.assertNotContains(response, '<svg')
        self.assertMessageCount(response, error=1)

    def test_unknown_disk(self):
        response = self.client.get(reverse(
            'horizon:project:iotguard_disks:disk', args=[data.UUID, 'vdz']))
        self.assertRedirectsNoFollow(response, data.INDEX)
        self.record.assert_not_called()


class RecordAPITests(data.CatalogMixin, helpers.TestCase):

    def test_path_and_window(self):
        with mock.patch.object(iotguard, '_call',
                               return_value={'record': RECORD}) as call:
            self.assertEqual(RECORD, iotguard.disk_record(
                self.request, data.UUID, 'vda', since='2026-11-22T03:00:00Z'))
        call.assert_called_once_with(
            self.request, 'GET', '/instances/%s/disks/vda/record' % data.UUID,
            params={'since': '2026-11-22T03:00:00Z', 'until': None})
