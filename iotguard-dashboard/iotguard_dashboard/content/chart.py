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

"""A disk's record as charts drawn on the server, in inline SVG.

No JavaScript and nothing fetched from elsewhere (Horizon often runs
where there is no internet): one bar per minute of the record (its mean
rate, or the fraction of its floor kept) and, on the rates, the floor and
the cap in force each minute as step lines (from an API whose record has
no such fields: the disk's floor and cap in force now, as lines across).
A bar's or a step's title, which browsers show as its tooltip, has its
numbers. Times are in the user's time zone (Horizon's setting).
"""

import dataclasses
import datetime
import math

from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from iotguard_dashboard.content import format as fmt

#: The plot in SVG units (the chart scales to the page's width), with room
#: on the left for the scale, above for its top label and below for times.
WIDTH, HEIGHT, LEFT, TOP, BOTTOM = 720, 140, 80, 10, 22
MINUTE = datetime.timedelta(minutes=1)
#: Minutes between two times on the axis.
TIME_STEP = 15
#: Bootstrap's colours, as Horizon's own charts use them.
COLOURS = {'rate': '#337ab7', 'capped': '#f0ad4e', 'floor': '#3c763d',
           'cap': '#d9534f', 'kept': '#5cb85c', 'missed': '#d9534f'}


@dataclasses.dataclass(frozen=True)
class Mark:
    """A bar, or a line across the plot (``y`` only), and its tooltip."""

    kind: str
    title: str
    y: float
    x: float = 0.0
    width: float = 0.0
    height: float = 0.0

    @property
    def colour(self):
        return COLOURS[self.kind]


@dataclasses.dataclass(frozen=True)
class Step:
    """Minutes in a row with the same floor (or cap), as an SVG path.

    Level across them, rising or falling from the minutes just before.
    """

    kind: str
    title: str
    path: str

    @property
    def colour(self):
        return COLOURS[self.kind]


@dataclasses.dataclass(frozen=True)
class Tick:
    at: float
    label: str


@dataclasses.dataclass(frozen=True)
class Chart:
    slug: str
    title: str
    bars: list
    lines: list
    scale: list      # ticks up the left side
    times: list      # ticks along the bottom
    legend: list     # (kind, text)
    steps: list = dataclasses.field(default_factory=list)

    left, top, width, height = LEFT, TOP, WIDTH, HEIGHT
    right, bottom = LEFT + WIDTH, TOP + HEIGHT
    view_width, view_height = LEFT + WIDTH + 10, TOP + HEIGHT + BOTTOM


@dataclasses.dataclass(frozen=True)
class Spell:
    """Minutes in a row under a cap for the same reason."""

    start: str
    end: str
    capped_s: float
    reason: str


def _time(text):
    return datetime.datetime.fromisoformat(text)


def _clock(when):
    return timezone.localtime(when).strftime('%H:%M')


def clock(text):
    """An API time as the user's clock reads it: ``03:40``."""
    return _clock(_time(text))


def _top(value):
    """The scale's top: 1, 2, 2.5 or 5 times a power of ten, >= value."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 2.5, 5, 10)
                if value <= step * power * (1 + 1e-9))


class _Axis:
    """The record's window, a bar's slot per minute."""

    def __init__(self, record):
        since = _time(record['since'])
        self.start = since.replace(second=0, microsecond=0)
        self.count = max(1, math.ceil(
            (_time(record['until']) - self.start) / MINUTE))
        self.slot = WIDTH / self.count

    def x(self, minute):
        return LEFT + (_time(minute) - self.start) / MINUTE * self.slot

    def times(self):
        # from the next quarter of the user's clock
        first = -(timezone.localtime(self.start).minute % -TIME_STEP)
        return [Tick(round(LEFT + i * self.slot, 2),
                     _clock(self.start + i * MINUTE))
                for i in range(first, self.count + 1, TIME_STEP)]

    def bar(self, kind, title, minute, value, top):
        # a minute at zero still shows, as a sliver
        height = round(max(1.5, HEIGHT * min(value, top) / top), 2)
        return Mark(kind, title, round(TOP + HEIGHT - height, 2),
                    round(self.x(minute), 2),
                    round(max(1.0, self.slot - 1), 2), height)


def _y(value, top):
    return round(TOP + HEIGHT * (1 - value / top), 2)


def _iops(value):
    return fmt.iops_and_bytes(value, 0, '0 IOPS')


#: The rate charts: the record's field (the minute's floor and cap are
#: floor_<field> and cap_<field>), the disk's floor's and cap's, how a
#: value reads, the title.
RATES = (
    ('iops', 'min_iops', 'total_iops_sec', _iops, _('Rate (IOPS)')),
    ('bytes_sec', 'min_bytes_sec', 'total_bytes_sec', fmt.mb_sec,
     _('Rate (MB/s)')))


#: The step lines' tooltips.
STEP_TITLES = {'floor': _('%(start)s to %(end)s: floor %(value)s'),
               'cap': _('%(start)s to %(end)s: cap in force %(value)s')}


def _steps(axis, minutes, kind, field, top, say):
    """The floor or cap (``kind``) each minute had, as steps.

    A minute without one (None) breaks the line, as does a minute missing
    from the record.
    """
    runs = []     # [first minute, last minute, value]
    for m in minutes:
        value = m[field]
        if value is None:
            continue
        run = runs[-1] if runs else None
        if (run and run[2] == value
                and _time(run[1]) + MINUTE == _time(m['minute'])):
            run[1] = m['minute']
        else:
            runs.append([m['minute'], m['minute'], value])
    steps, before = [], None    # the run before: its end and its y
    for first, last, value in runs:
        x0 = round(axis.x(first), 2)
        x1 = round(axis.x(last) + axis.slot, 2)
        y = _y(min(value, top), top)
        path = ('M %s %s V %s' % (x0, before[1], y)
                if before and before[0] == x0 else 'M %s %s' % (x0, y))
        steps.append(Step(kind, str(STEP_TITLES[kind] % {
            'start': clock(first), 'end': _clock(_time(last) + MINUTE),
            'value': say(value)}), '%s H %s' % (path, x1)))
        before = (x1, y)
    return steps


def _rates(axis, record, disk, key, floor_key, cap_key, say, title):
    minutes = record['minutes']
    legend = [('rate', _('mean rate of the minute')),
              ('capped', _('a minute under a cap'))]
    lines, steps = [], []
    # The floor and the cap in force each minute, where the API records
    # them; otherwise those of now.
    by_minute = bool(minutes) and 'floor_' + key in minutes[0]
    if by_minute:
        limits = [m[kind + '_' + key] or 0.0 for m in minutes
                  for kind in ('floor', 'cap')]
    else:
        floor = disk['floor'][floor_key] or 0.0
        cap = ((disk.get('cap') or {}).get('limits') or {}).get(
            cap_key) or 0.0
        limits = [floor, cap]
    top = _top(max([m[key] for m in minutes] + limits))
    bars = []
    for m in minutes:
        text = _('%(time)s: %(rate)s') % {'time': clock(m['minute']),
                                          'rate': say(m[key])}
        if m['capped_s']:
            text = _('%(rate)s; capped %(seconds)d s: %(reason)s') % {
                'rate': text, 'seconds': m['capped_s'],
                'reason': m['cap_reason'] or fmt.NONE}
        bars.append(axis.bar('capped' if m['capped_s'] else 'rate',
                             str(text), m['minute'], m[key], top))
    if by_minute:
        for kind, text in (('floor', _('floor in force, by the minute')),
                           ('cap', _('cap in force, by the minute'))):
            kind_steps = _steps(axis, minutes, kind, kind + '_' + key, top,
                                say)
            if kind_steps:
                steps += kind_steps
                legend.append((kind + ' step', text))   # a solid swatch
    else:
        for kind, value, text in (
                ('floor', floor, _('floor now: %s')),
                ('cap', cap, _('cap in force now: %s'))):
            if value:
                text = str(text % say(value))
                lines.append(Mark(kind, text, _y(value, top)))
                legend.append((kind, text))
    return Chart(key, title, bars, lines,
                 [Tick(_y(v, top), str(say(v)) if v else '0')
                  for v in (0, top / 2, top)],
                 axis.times(), legend, steps)


def _kept(axis, record):
    bars = []
    for m in record['minutes']:
        ratio = m['floor_kept_ratio']
        if ratio is None:
            continue    # no floor due that minute
        text = _('%(time)s: floor kept %(kept)d of %(due)d s (%(percent)s)')
        bars.append(axis.bar(
            'kept' if ratio >= 1 else 'missed', str(text % {
                'time': clock(m['minute']),
                'kept': m['floor_kept_s'], 'due': m['floor_due_s'],
                'percent': fmt.percent(ratio)}),
            m['minute'], ratio, 1.0))
    return Chart('kept', _('Floor kept'), bars, [],
                 [Tick(_y(v, 1.0), fmt.percent(v)) for v in (0, 0.5, 1)],
                 axis.times(),
                 [('kept', _('all of the minute')),
                  ('missed', _('part of the minute'))])


def charts(record, disk):
    """The rate charts (IOPS, MB/s) and the floor kept, by the minute."""
    axis = _Axis(record)
    return [_rates(axis, record, disk, *rates) for rates in RATES] + [
        _kept(axis, record)]


def spells(record):
    """The record's caps: minutes in a row capped for the same reason."""
    out = []
    for m in record['minutes']:
        if not m['capped_s']:
            continue
        reason = m['cap_reason'] or fmt.NONE
        last = out[-1] if out else None
        if (last and last.reason == reason
                and _time(last.end) + MINUTE == _time(m['minute'])):
            out[-1] = dataclasses.replace(
                last, end=m['minute'], capped_s=last.capped_s + m['capped_s'])
        else:
            out.append(Spell(m['minute'], m['minute'], m['capped_s'], reason))
    return [dataclasses.replace(s, start=clock(s.start),
                                end=_clock(_time(s.end) + MINUTE))
            for s in out]
