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

"""iotguard-allinone: API, controller and agents in one process.

Embedded defaults: SQLite, oslo.messaging's in-memory transport, the
simulated hypervisor running a scenario. It shows every control interval
what each VM gets, its floor, the cap in force and the latest decision,
answers API queries on localhost while it runs, and ends with the table
and the plot of ``iotguard-sim compare`` for what really happened (next to
the simulator's uncontrolled ``none`` run, the reference of the measures).
"""

import argparse
import json
import sys
import tempfile
from typing import TextIO

from iotguard import allinone
from iotguard import exception
from iotguard import policy as policy_mod
from iotguard.sim import loop
from iotguard.sim import report

USAGE_ERROR = 2
CLEAR = '\x1b[H\x1b[2J'


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='iotguard-allinone',
        description='Run iotguard (API, controller, one agent per host) in '
                    'one process on SQLite, the in-memory message bus and '
                    'the simulated hypervisor, and watch it work.')
    parser.add_argument('--scenario', default='paper-4vm',
                        help='a shipped scenario name or a scenario YAML '
                             'file (default: %(default)s; list them with '
                             '"iotguard-sim list")')
    parser.add_argument('--policy', default='guarantee',
                        help='the domain\'s decision policy '
                             '(default: %(default)s)')
    parser.add_argument('--speed', type=float, default=10.0,
                        help='simulated seconds per wall-clock second '
                             '(default: %(default)s; 1 is real time)')
    parser.add_argument('--duration', type=float, metavar='S',
                        help='stop after S simulated seconds (default: the '
                             'whole scenario)')
    parser.add_argument('--port', type=int, default=9737,
                        help='API port on 127.0.0.1 (default: %(default)s; '
                             '0 or a taken port: a free one)')
    parser.add_argument('--db', metavar='PATH',
                        help='SQLite file to keep (default: a temporary '
                             'one)')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--log-file', metavar='FILE',
                        default='iotguard-allinone.log',
                        help='the services\' log (default: %(default)s)')
    parser.add_argument('--plot', metavar='FILE.png',
                        default='iotguard-allinone.png',
                        help='write the plot here (default: %(default)s)')
    parser.add_argument('--json', metavar='FILE',
                        help='write the figures as JSON')
    return parser


def options(args: argparse.Namespace) -> allinone.Options:
    if not args.speed > 0:
        raise ValueError('--speed must be > 0, not %r' % args.speed)
    if args.duration is not None and not args.duration > 0:
        raise ValueError('--duration must be > 0, not %r' % args.duration)
    if not 0 <= args.port < 65536:
        raise ValueError('--port must be 0-65535, not %r' % args.port)
    policy_mod.load(args.policy)   # unknown names fail before any start
    return allinone.Options(scenario=args.scenario, policy=args.policy,
                            speed=args.speed, duration_s=args.duration,
                            port=args.port, db_path=args.db, seed=args.seed,
                            log_file=args.log_file)


def _kbs(value: float | None) -> str:
    return '-' if value is None else '%.0f' % value


def render(window: allinone.Window, head: list[str]) -> list[str]:
    """The live view of one window, as lines."""
    lines = head + [
        't = %4.0f s  window %d/%d   decisions so far: %d   caps in force: '
        '%d' % (window.sim_s, window.index + 1, window.windows,
                window.decisions, window.caps), '',
        '%-8s %-6s %9s %9s %9s  %s' % ('VM', 'role', 'KB/s', 'floor',
                                       'cap', 'latest decision')]
    for vm in window.vms:
        lines.append('%-8s %-6s %9.0f %9.0f %9s  %s' % (
            vm.name, vm.role, vm.kbs, vm.floor_kbs, _kbs(vm.cap_kbs),
            vm.reason[:70]))
    return lines


class LiveView:
    """Redraws in place on a terminal, appends lines otherwise."""

    def __init__(self, stream: TextIO, head: list[str]) -> None:
        self.stream, self.head = stream, head
        self.tty = stream.isatty()

    def __call__(self, window: allinone.Window) -> None:
        lines = render(window, self.head if self.tty else [])
        if self.tty:
            self.stream.write(CLEAR + '\n'.join(lines) + '\n')
        else:
            self.stream.write('\n'.join(lines[:1] + lines[3:]) + '\n')
        self.stream.flush()


def banner(aio: allinone.AllInOne) -> list[str]:
    url = aio.api_url
    first = aio.disks[0]['instance_uuid']
    return [
        'iotguard all-in-one: scenario %s, policy %s, %gx real time'
        % (aio.scenario.name, aio.options.policy, aio.options.speed),
        'API: %s/ (noauth)   log: %s' % (url, aio.log_file),
        '  curl -s -H "X-User-Id: admin" -H "X-Project-Id: admin" '
        '-H "X-Roles: admin" %s/v1/instances/%s' % (url, first),
        '  openstack --os-auth-type none --os-iotguard-url %s '
        '--os-iotguard-noauth-user admin --os-iotguard-noauth-project admin '
        '--os-iotguard-noauth-roles admin iotguard tier list' % url, '']


def run(args: argparse.Namespace, out: TextIO) -> int:
    opts = options(args)
    with tempfile.TemporaryDirectory(prefix='iotguard-allinone-') as tmp:
        aio = allinone.AllInOne(opts, tmp)
        try:
            aio.start()
            head = banner(aio)
            out.write('\n'.join(head) + '\n')
            out.flush()
            done = aio.run(LiveView(out, head))
            if not len(done.times):
                raise ValueError('no window ran')
        finally:
            aio.stop()
    reference = loop.run(done.scenario, policy_mod.load('none'), opts.seed)
    results = {'none': report.result(reference, reference),
               opts.policy: report.result(done, reference)}
    out.write('\nnone: the simulator without control (the reference); '
              '%s: this all-in-one run\n' % opts.policy)
    out.write(report.table(done.scenario.name, results))
    if args.json:
        document = report.document(done.scenario.name, opts.seed, results)
        document['allinone'] = {'speed': opts.speed,
                                'duration_s': done.scenario.duration_s,
                                'decisions': len(done.actions)}
        with open(args.json, 'w', encoding='utf-8') as f:
            json.dump(document, f, indent=2)
            f.write('\n')
    if args.plot:
        report.plot({'none': reference, opts.policy: done}, args.plot)
        out.write('plot: %s\n' % args.plot)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args, sys.stdout)
    except (exception.Invalid, ValueError, TypeError, OSError) as e:
        sys.stderr.write('iotguard-allinone: error: %s\n' % e)
        return USAGE_ERROR
    except exception.AllInOneFailed as e:
        sys.stderr.write('iotguard-allinone: %s\n' % e)
        return 1


if __name__ == '__main__':
    sys.exit(main())
