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

"""``iotguard-sim``: run scenarios, compare policies, benchmark decisions.

::

    iotguard-sim list
    iotguard-sim run SCENARIO --policy P [--seed N] [--json F] [--plot F.png]
                     [--param k=v ...] [--sample-interval S] [--fast-path]
                     [--watch-interval S]
    iotguard-sim compare SCENARIO --policies none,ntt,guarantee [--seed N]
                     [--json F] [--plot F.png] [--sample-interval S]
                     [--fast-path] [--watch-interval S]
    iotguard-sim bench --disks N [--domains M]
    iotguard-sim targets [--seeds N] [--first-seed S] [--fast-path]
                     [--watch-interval S] [--scenarios a,b] [--jobs J]
                     [--json F]

Errors (unknown scenario, bad file, unknown policy, bad parameter, a
sample interval that does not divide the scenario's, a watch interval
that does not divide the sample interval or comes without
``--fast-path``) print
one line on stderr and exit with status 2. ``targets`` exits with 1 when
a seed misses a target.
"""

import argparse
import json
import sys
from typing import Any

import yaml

from iotguard import exception
from iotguard import policy as policy_mod
from iotguard.sim import bench
from iotguard.sim import loop
from iotguard.sim import report
from iotguard.sim import scenario as scenario_mod
from iotguard.sim import targets

USAGE_ERROR = 2
WATCH_HELP = ("with --fast-path: the agents also read every S seconds "
              "between their samples and send a sample at once when a "
              "disk's demand rose (their watch_interval); urgent "
              "decisions then at most one per S seconds (a divisor of "
              "the sample interval)")


class Progress:
    """A one-line progress bar on stderr (only when it is a terminal)."""

    def __init__(self, label: str, stream: Any = None) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.shown = -1

    def __call__(self, fraction: float) -> None:
        done = int(fraction * 30)
        if not self.enabled or done == self.shown:
            return
        self.shown = done
        self.stream.write('\r%-24s [%s%s] %3d%%' % (
            self.label[:24], '#' * done, '.' * (30 - done), fraction * 100))
        if fraction >= 1:
            self.stream.write('\n')
        self.stream.flush()


def parse_params(items: list[str]) -> dict[str, Any]:
    """``k=v`` pairs; values are read as YAML scalars (numbers, bools)."""
    params = {}
    for item in items:
        key, sep, value = item.partition('=')
        if not sep or not key:
            raise ValueError('--param wants key=value, not %r' % item)
        params[key] = yaml.safe_load(value)
    return params


def simulate(scenario: scenario_mod.Scenario, names: list[str], seed: int,
             params: dict[str, Any], fast: loop.FastPath | None = None
             ) -> dict[str, loop.Run]:
    """Run each policy (and ``none`` as the reference) on one scenario.

    A policy's parameters are the scenario's (its ``policies`` section)
    overridden by ``params``; ``fast``: every run samples and decides so
    (:class:`iotguard.sim.loop.FastPath`).
    """
    policies = {name: policy_mod.load(
        name, **{**scenario.policies.get(name, {}), **params})
        for name in names}
    if 'none' not in policies:
        policies = {'none': policy_mod.load('none'), **policies}
    return {name: loop.run(scenario, policy, seed,
                           Progress('%s %s' % (scenario.name, name)), fast)
            for name, policy in policies.items()}


def fast_path(args: argparse.Namespace) -> loop.FastPath | None:
    """The runs' sampling and urgent decisions, from the options.

    ``--watch-interval`` (with ``--fast-path``): the agents' watch
    (``watch_interval``); urgent decisions stay at most one a second
    (``urgent_interval``'s default).
    """
    watch = _watch(args)
    if args.fast_path:
        return loop.FastPath(args.sample_interval or 1.0, 1.0, watch)
    if args.sample_interval:
        return loop.FastPath(args.sample_interval, 0.0)
    return None


def _watch(args: argparse.Namespace) -> float:
    """``--watch-interval`` (0.0: none); ValueError without the fast path."""
    if args.watch_interval is None:
        return 0.0
    if not args.fast_path or args.watch_interval <= 0:
        raise ValueError('--watch-interval wants --fast-path and a number '
                         'of seconds > 0')
    return float(args.watch_interval)


def cmd_run(args: argparse.Namespace, names: list[str]) -> int:
    scenario = scenario_mod.load(args.scenario)
    runs = simulate(scenario, names, args.seed,
                    parse_params(getattr(args, 'param', None) or []),
                    fast_path(args))
    results = {n: report.result(runs[n], runs['none']) for n in names}
    sys.stdout.write(report.table(scenario.name, results))
    if args.json:
        with open(args.json, 'w', encoding='utf-8') as f:
            json.dump(report.document(scenario.name, args.seed, results), f,
                      indent=2)
            f.write('\n')
    if args.plot:
        report.plot({n: runs[n] for n in names}, args.plot)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    for key, value in bench.run(args.disks, args.domains).items():
        sys.stdout.write('%-16s %s\n' % (key, value))
    return 0


def cmd_targets(args: argparse.Namespace) -> int:
    names = ([n.strip() for n in args.scenarios.split(',') if n.strip()]
             if args.scenarios else list(targets.SCENARIOS))
    if args.seeds < 1 or args.jobs < 1 or not names:
        raise ValueError('--seeds and --jobs must be >= 1, --scenarios '
                         'not empty')
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    watch = _watch(args)
    rows = targets.summary(targets.run(names, seeds, args.fast_path,
                                       args.jobs, watch))
    sys.stdout.write(targets.table(rows, len(seeds)))
    if args.json:
        with open(args.json, 'w', encoding='utf-8') as f:
            json.dump({'seeds': seeds, 'fast_path': args.fast_path,
                       'watch_interval': watch, 'rows': rows}, f, indent=2)
            f.write('\n')
    return 0 if all(r['met'] for r in rows) else 1


def cmd_list() -> int:
    for name in scenario_mod.names():
        sc = scenario_mod.load(name)
        sys.stdout.write('%-18s %s\n' % (name, sc.description))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='iotguard-sim',
        description='Simulate shared storage under iotguard decision '
                    'policies: scenarios, comparisons, benchmarks.')
    sub = parser.add_subparsers(dest='command', required=True)
    sub.add_parser('list', help='list the shipped scenarios')
    for name, help_text in (('run', 'run one policy on a scenario'),
                            ('compare', 'run several policies, same seed')):
        p = sub.add_parser(name, help=help_text)
        p.add_argument('scenario', help='a shipped scenario name or a path '
                                        'to a scenario YAML file')
        if name == 'run':
            p.add_argument('--policy', required=True)
            p.add_argument('--param', action='append', metavar='KEY=VALUE',
                           help="a policy parameter (repeatable)")
        else:
            p.add_argument('--policies', default='none,ntt,guarantee',
                           help='comma-separated (default: %(default)s)')
        p.add_argument('--seed', type=int, default=0)
        p.add_argument('--sample-interval', type=float, metavar='S',
                       help="the agent's sample interval, a divisor of "
                            "the scenario's interval_s (the decision "
                            "rounds): measures per sample window "
                            "(default: the scenario's interval_s)")
        p.add_argument('--fast-path', action='store_true',
                       help='samples every second (or --sample-interval) '
                            'and a domain decided at once, at most once a '
                            'second, when a disk whose demand rose is '
                            'short of its floor (the agents\' '
                            'urgent_samples)')
        p.add_argument('--watch-interval', type=float, metavar='S',
                       help=WATCH_HELP)
        p.add_argument('--json', metavar='FILE', help='write the figures')
        p.add_argument('--plot', metavar='FILE.png', help='write the plot')
    p = sub.add_parser('bench', help='CPU time of one guarantee decision')
    p.add_argument('--disks', type=int, required=True)
    p.add_argument('--domains', type=int, default=1)
    p = sub.add_parser('targets', help='guarantee against the targets '
                       'to the second, over many seeds')
    p.add_argument('--seeds', type=int, default=3,
                   help='how many seeds (default: %(default)s)')
    p.add_argument('--first-seed', type=int, default=0)
    p.add_argument('--fast-path', action='store_true',
                   help="urgent decisions between the rounds (samples "
                        "are every second either way)")
    p.add_argument('--watch-interval', type=float, metavar='S',
                   help=WATCH_HELP)
    p.add_argument('--scenarios', metavar='A,B',
                   help='comma-separated (default: %s)'
                        % ','.join(targets.SCENARIOS))
    p.add_argument('--jobs', type=int, default=1,
                   help='processes (default: %(default)s)')
    p.add_argument('--json', metavar='FILE', help='write the rows')
    return parser


def dispatch(args: argparse.Namespace) -> int:
    if args.command == 'list':
        return cmd_list()
    if args.command == 'bench':
        return cmd_bench(args)
    if args.command == 'targets':
        return cmd_targets(args)
    names = ([args.policy] if args.command == 'run'
             else [n.strip() for n in args.policies.split(',') if n.strip()])
    if not names or len(set(names)) != len(names):
        raise ValueError('give each policy once: %r' % names)
    return cmd_run(args, names)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return dispatch(args)
    except (exception.Invalid, ValueError, TypeError, OSError) as e:
        sys.stderr.write('iotguard-sim: error: %s\n' % e)
        return USAGE_ERROR


if __name__ == '__main__':
    sys.exit(main())
