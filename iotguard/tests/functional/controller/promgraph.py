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

"""A noisy neighbour being capped, as Prometheus saw it (test_e2e).

The end-to-end test reads a few series of its run back through
Prometheus' range query API (:func:`series`) and, for the admin guide
(doc/source/admin/prometheus.rst), draws them with matplotlib
(:func:`draw`).
"""

import json
import math
import urllib.parse
import urllib.request

#: (title, y label, [(curve label, PromQL with %(d)s for the domain
#: matcher)]); a label in MARKS is drawn as a marker where its value is
#: not 0. The floors' counters step at each decision round (2 s): their
#: rates over two rounds, one divided by the other, do not alias.
PANELS = [
    ("The domain's load, of its capacity (controllers)", 'ratio', [
        ('load', 'max(iotguard_domain_load_ratio%(d)s)')]),
    ('Caps in force on the host (agent); caps set, changed or released '
     '(controllers)',
     'caps', [
         ('in force', 'sum(iotguard_agent_caps)'),
         ('set, changed or released',
          'sum(idelta(iotguard_domain_cap_changes_total%(d)s[1s]))')]),
    ('Floors missed in the domain, of the floors due (controllers)',
     'share', [
         ('floor-missed / floor-checked seconds, last two rounds',
          'sum(rate(iotguard_domain_floor_missed_seconds_total%(d)s[4s]))'
          ' / sum(rate(iotguard_domain_floor_checked_seconds_total'
          '%(d)s[4s]))')]),
]
MARKS = {'set, changed or released'}


def query_range(url, expr, start, end, step=0.5):
    """``[(unix time, value), ...]`` of ``expr``'s one series (or []).

    The steps end at ``end`` (not up to a step before it): the last
    scrape is in.
    """
    start = end - step * math.ceil((end - start) / step)
    query = urllib.parse.urlencode({'query': expr, 'start': start,
                                    'end': end, 'step': step})
    with urllib.request.urlopen('%s/api/v1/query_range?%s' % (url, query),
                                timeout=10) as answer:
        result = json.loads(answer.read())['data']['result']
    assert len(result) <= 1, (expr, result)
    return [(float(t), float(v)) for t, v in
            (result[0]['values'] if result else [])]


def series(url, domain, start, end):
    """``{(panel, curve): points}`` of :data:`PANELS` over the run."""
    matcher = '{domain="%s"}' % domain
    return {(title, label): query_range(url, expr % {'d': matcher},
                                        start, end)
            for title, _unit, curves in PANELS for label, expr in curves}


def draw(points, events, t0, path):
    """Write the PNG of ``points`` (from :func:`series`).

    ``events`` ``{label: unix time}`` are marked on each panel; times
    are drawn from ``t0``.
    """
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    fig, axes = pyplot.subplots(len(PANELS), 1, figsize=(9, 7.5),
                                sharex=True)
    for ax, (title, unit, curves) in zip(axes, PANELS):
        for label, _expr in curves:
            xy = points[title, label]
            if label in MARKS:
                xy = [(t, v) for t, v in xy if v]
            ax.step([t - t0 for t, _v in xy], [v for _t, v in xy],
                    where='post', label=label, linewidth=1.8,
                    **(dict(marker='v', linestyle='none', markersize=9)
                       if label in MARKS else {}))
        for when in events.values():
            ax.axvline(when - t0, color='grey', linestyle=':')
        ax.set_title(title, loc='left', fontsize='medium')
        ax.set_ylabel(unit)
        ax.set_ylim(0, 1.05 if unit == 'share' else None)
        ax.yaxis.get_major_locator().set_params(integer=unit == 'caps')
        ax.grid(alpha=0.3)
        ax.legend(loc='center left' if unit == 'caps' else 'upper left',
                  fontsize='small')
    for text, when in events.items():
        axes[1].annotate(text, (when - t0, 0.5),
                         xycoords=('data', 'axes fraction'),
                         xytext=(-3, 0), textcoords='offset points',
                         rotation=90, ha='right', va='center',
                         fontsize='small',
                         color='dimgrey')
    axes[-1].set_xlabel('seconds since the agent started')
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    pyplot.close(fig)
