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

"""What a simulator run shows: JSON figures, a text table, a plot.

The plot follows the paper's Fig. 3: per-VM throughput stacked over time,
one panel per policy, and under each the storage queue length and the mean
response time. matplotlib is imported only when a plot is asked for, with
the Agg backend (no display needed).
"""

from typing import Any

from iotguard.sim import learning
from iotguard.sim import loop
from iotguard.sim import measures


def result(run: loop.Run, reference: loop.Run) -> dict[str, Any]:
    """The JSON figures of one run (``reference``: the ``none`` run).

    ``estimator`` only for a run that learned (the all-in-one's
    controller keeps its fits in its database).
    """
    figures = {
        'vms': measures.vm_table(run),
        'measures': {k: round(v, 4)
                     for k, v in measures.measure(run, reference).items()},
        'window_s': run.window_s,
        'aggregate_kbs': round(float(run.kbs.sum(axis=1).mean()), 1),
        'queue_max': round(float(run.queue.max()), 2),
        'response_ms_max': round(float(run.response_ms.max()), 1),
        'caps': sum(1 for a in run.actions if a.action == 'cap'),
    }
    if run.fits:
        figures['estimator'] = learning.convergence(
            run.fits, run.scenario.domain.profile, run.window_s)
    return figures


def document(scenario: str, seed: int,
             results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The whole JSON output: the scenario, the seed, one entry a policy."""
    return {'scenario': scenario, 'seed': seed, 'policies': results}


def _fmt(value: Any) -> str:
    if value is None:
        return '-'
    if isinstance(value, float):
        return '%.0f' % value if abs(value) >= 100 else '%.3g' % value
    return str(value)


def table(scenario: str, results: dict[str, dict[str, Any]]) -> str:
    """Policies side by side: per-VM avg/min/max KB/s, then the measures."""
    policies = list(results)
    first = results[policies[0]]['vms']
    head = ['VM', 'role', 'demand', 'floor'] + [
        '%s %s' % (p, s) for p in policies for s in ('avg', 'min', 'max')]
    rows = [head]
    for i, vm in enumerate(first):
        row = [vm['name'], vm['role'], _fmt(vm['demand_kbs']),
               _fmt(vm['floor_kbs'])]
        for p in policies:
            r = results[p]['vms'][i]
            row += [_fmt(r['avg_kbs']), _fmt(r['min_kbs']),
                    _fmt(r['max_kbs'])]
        rows.append(row)
    row = ['aggregate', '', '', '']
    for p in policies:
        row += [_fmt(results[p]['aggregate_kbs']), '', '']
    rows.append(row)
    window_s = results[policies[0]].get('window_s', 5.0)
    title = '%s: throughput per VM, KB/s (%g s windows)' % (
        scenario, window_s)
    out = [title, _grid(rows), '', 'measures']
    rows = [['measure'] + policies]
    for key in measures.KEYS + ('queue_max', 'response_ms_max', 'caps'):
        rows.append([key] + [
            _fmt(results[p]['measures'].get(key, results[p].get(key)))
            for p in policies])
    out.append(_grid(rows))
    out += ['', _estimator(results)]
    return '\n'.join(out) + '\n'


def _estimator(results: dict[str, dict[str, Any]]) -> str:
    """The learned profile of each run that learned, against the truth."""
    results = {name: result for name, result in results.items()
               if 'estimator' in result}
    if not results:
        return ''
    true = next(iter(results.values()))['estimator']['true']
    rows = [['policy', 'form', 'iops_4k', 'bytes_sec', 'error',
             'confidence', 'identified', 'within 10 % from (s)']]
    rows.append(['(true)', true['form'], _fmt(true['iops_4k']),
                 _fmt(true['bytes_sec']), '', '', '', ''])
    for name, result in results.items():
        learned = result['estimator']
        fit = learned['fit']
        if fit is None:
            rows.append([name, '-', '-', '-', '-', '-', '-', '-'])
            continue
        rows.append([name, fit['form'], _fmt(fit['iops_4k']),
                     _fmt(fit['bytes_sec']), _fmt(fit['error']),
                     _fmt(fit['confidence']),
                     ','.join(fit['identified']) or '-',
                     _fmt(learned['converged_s'])])
    return ('capacity estimator: the fit after the run (prior: the '
            'profile as typed, additive)\n' + _grid(rows))


def _grid(rows: list[list[str]]) -> str:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    lines = ['  '.join(cell.rjust(w) if c else cell.ljust(w)
                       for c, (cell, w) in enumerate(zip(r, widths)))
             for r in rows]
    lines.insert(1, '  '.join('-' * w for w in widths))
    return '\n'.join(lines)


def plot(runs: dict[str, loop.Run], path: str) -> None:
    """Write the Fig. 3-like PNG of one or more runs of one scenario."""
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    names = list(runs)
    fig, axes = pyplot.subplots(
        2, len(names), figsize=(5.5 * len(names), 7.5), squeeze=False,
        sharex=True, gridspec_kw={'height_ratios': [3, 1.4]})
    top = max(float(r.kbs.sum(axis=1).max()) for r in runs.values()) * 1.1
    for c, name in enumerate(names):
        run = runs[name]
        ax = axes[0][c]
        labels = ['%s (%s)' % (n, r) for n, r in zip(run.names, run.roles)]
        ax.stackplot(run.times + run.window_s, run.kbs.T, labels=labels,
                     step='pre')
        ax.set_title('%s: %s' % (run.scenario.name, name))
        ax.set_ylim(0, top or 1)
        ax.set_ylabel('throughput (KB/s, stacked)')
        if c == 0:
            ax.legend(loc='upper left', fontsize='small',
                      ncol=1 if len(labels) <= 8 else 2)
        low = axes[1][c]
        low.plot(run.times + run.window_s, run.queue, color='black',
                 label='queue length')
        low.set_ylabel('queue (requests)')
        low.set_xlabel('time (s)')
        right = low.twinx()
        right.plot(run.times + run.window_s, run.response_ms,
                   color='tab:red', label='response time')
        right.set_ylabel('response time (ms)', color='tab:red')
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    pyplot.close(fig)
