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

"""How the panels write the API's numbers (rates in IOPS and MB/s)."""

from django.utils.translation import gettext_lazy as _

NONE = '-'


def mb_sec(value):
    return _('%.1f MB/s') % (value / 1e6)


def iops_and_bytes(iops, bytes_sec, zero=NONE):
    """``2000 IOPS, 20.0 MB/s``; a zero part is left out (0 means none)."""
    parts = []
    if iops:
        parts.append(_('%g IOPS') % round(iops, 1))
    if bytes_sec:
        parts.append(mb_sec(bytes_sec))
    return ', '.join(str(p) for p in parts) or zero


def tier_limit(tier, kind, zero):
    """A tier's floor (``kind`` min) or ceiling (max), per GiB if any.

    ``3 IOPS per GiB, at least 100 IOPS``.
    """
    fixed = iops_and_bytes(tier.get(kind + '_iops', 0),
                           tier.get(kind + '_bytes_sec', 0), '')
    per_gb = iops_and_bytes(tier.get(kind + '_iops_per_gb', 0),
                            tier.get(kind + '_bytes_sec_per_gb', 0), '')
    if not per_gb:
        return fixed or zero
    text = _('%s per GiB') % per_gb
    if not fixed:
        return text
    bound = _('%(rate)s, at least %(fixed)s') if kind == 'min' else _(
        '%(rate)s, at most %(fixed)s')
    return bound % {'rate': text, 'fixed': fixed}


def burst(tier):
    """``bursts to 3x for 60 s``; none without a burst."""
    if not tier.get('burst_factor'):
        return _('none')
    return _('bursts to %(factor)gx for %(seconds)g s') % {
        'factor': tier['burst_factor'], 'seconds': tier['burst_seconds']}


def latency(tier):
    """``5 ms``; none without a latency objective."""
    if not tier.get('latency_p99_ms'):
        return _('none')
    return _('%g ms') % tier['latency_p99_ms']


def floor(disk):
    return iops_and_bytes(disk['floor']['min_iops'],
                          disk['floor']['min_bytes_sec'], _('none'))


def rates(disk):
    """The latest sampled rates (read + write) and latency.

    The latency: the mean, and the 99th percentile where the agent
    measured one (``[agent] latency_histograms``).
    """
    r = disk.get('rates')
    if not r:
        return _('not sampled yet')
    # A rate the agent did not report is null.
    text = iops_and_bytes((r['read_iops'] or 0) + (r['write_iops'] or 0),
                          (r['read_bytes_sec'] or 0)
                          + (r['write_bytes_sec'] or 0), '0 IOPS')
    if r.get('latency_ms') is not None:
        text = _('%(rates)s, %(latency).1f ms') % {
            'rates': text, 'latency': r['latency_ms']}
    if r.get('latency_p99_ms') is not None:
        text = _('%(rates)s (p99 %(p99).1f ms)') % {
            'rates': text, 'p99': r['latency_p99_ms']}
    return text


def limits(limits):
    """libvirt iotune limits: ``total 2900 IOPS, total 11.9 MB/s``."""
    parts = []
    for key in sorted(limits):
        value = limits[key]
        kind = key.split('_')[0]
        if key.endswith('_bytes_sec'):
            parts.append('%s %s' % (kind, mb_sec(value)))
        elif key.endswith('_iops_sec'):
            parts.append('%s %s' % (kind, _('%g IOPS') % value))
        else:
            parts.append('%s %s' % (key, value))
    return ', '.join(str(p) for p in parts) or _('none')


def cap(disk):
    return limits(disk['cap']['limits']) if disk.get('cap') else _('none')


def cap_reason(disk):
    return disk['cap']['reason'] if disk.get('cap') else NONE


def tier(disk):
    """The tier and where it comes from; a refused one is told."""
    if disk.get('tier'):
        text = '%s (%s)' % (disk['tier'], disk['tier_source'])
    else:
        text = str(_('none'))
    if disk.get('tier_refused'):
        text += ' ' + str(_('- %s refused by admission')
                          % disk['tier_refused'])
    return text


def fraction(value):
    return NONE if value is None else '%.3f' % value


def percent(value):
    return NONE if value is None else '%.1f %%' % (100 * value)


def moment(text):
    """An API timestamp to the second: ``2026-11-22 03:40:10``."""
    return text[:19].replace('T', ' ') if text else NONE
