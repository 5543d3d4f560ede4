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

The README's main job. The API (noauth, wsgiref on localhost), the
controller and one agent per simulated host run as the real services, in
threads of one process, over oslo.messaging's in-memory ``fake://``
transport (fanout casts and RPC servers with the threading executor work
on it) and a SQLite database (migrated on start). The agents use the
``simulated`` driver over one :class:`~iotguard.sim.world.World` running a
scenario. It shows every control interval what each VM gets, its floor,
the cap in force and the latest decision, answers API queries while it
runs, and ends with the table and the plot of ``iotguard-sim compare`` for
what really happened (next to the simulator's uncontrolled ``none`` run,
the reference of the measures).

Simulated time drives everything: each control interval of the scenario
the world advances by one interval, the agents run their interval (leases
first, then one report cast), and the controller runs one decision round
at the simulated UNIX time ``start + world.now``; its leases and the
staleness of samples are in that time, so ``--speed`` only changes how
long a wall-clock second lasts. The windows are recorded by the
simulator's own :class:`iotguard.sim.loop.Recorder` so the simulator's
measures, table and plot judge what really happened, counted alike.
"""

import argparse
from collections.abc import Callable
import contextlib
import dataclasses
import json
import os
import socketserver
import sys
import tempfile
import threading
import time
from typing import Any
from typing import TextIO
from wsgiref import simple_server

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging

from iotguard.agent import service as agent_service
from iotguard.agent.virt import simulated
from iotguard.api import app as api_app
from iotguard import conf as iotguard_conf
from iotguard.controller import effects
from iotguard.controller import service as controller_service
from iotguard.db import api as db_api
from iotguard.db import migration
from iotguard import exception
from iotguard import policy as policy_mod
from iotguard.sim import loop
from iotguard.sim import report
from iotguard.sim import scenario as scenario_mod
from iotguard.sim import workload
from iotguard.sim import world as world_mod
from iotguard.wire import caps
from iotguard.wire import rpc

LOG = logging.getLogger(__name__)

TRANSPORT_URL = 'fake://'
DOMAIN_KIND = 'local'
#: How long (wall seconds) a window waits for casts to be delivered.
DELIVERY_TIMEOUT_S = 2.0


@dataclasses.dataclass
class Options:
    scenario: str = 'paper-4vm'
    policy: str = 'guarantee'
    speed: float = 10.0
    duration_s: float | None = None
    port: int = 9737
    db_path: str | None = None
    seed: int = 0
    log_file: str | None = None


def make_conf(host: str, log_file: str | None = None,
              db_url: str | None = None) -> cfg.ConfigOpts:
    """A fresh ConfigOpts on embedded defaults (no config file read)."""
    conf = cfg.ConfigOpts()
    logging.register_options(conf)
    iotguard_conf.register_opts(conf)
    conf([], project='iotguard', default_config_files=[])
    conf.set_override('host', host)
    conf.set_override('auth_strategy', 'noauth', group='api')
    conf.set_override('nova_metadata_sync', False, group='api')
    conf.set_override('virt_driver', 'simulated', group='agent')
    conf.set_override('state_file', '', group='agent')
    if log_file:
        conf.set_override('log_file', log_file)
    if db_url:
        conf.set_override('connection', db_url, group='database')
    return conf


def cut(scenario: scenario_mod.Scenario,
        duration_s: float | None) -> scenario_mod.Scenario:
    """The scenario ending at ``duration_s`` (whole intervals)."""
    if duration_s is None or duration_s >= scenario.duration_s:
        return scenario
    windows = max(1, int(duration_s // scenario.interval_s))
    return dataclasses.replace(scenario,
                               duration_s=windows * scenario.interval_s)


def seed(db: db_api.Connection, scenario: scenario_mod.Scenario,
         world: world_mod.World, policy: str) -> list[dict[str, Any]]:
    """What membership would find: the domain, the tiers and the disks.

    The domain's profile and the policy's parameters come from the
    scenario (its ``policies`` section), the tiers from its tiers, one disk
    per VM on the VM's host with the VM's tier (as a flavor would give).
    """
    domain = scenario.domain
    db.domain_create(domain.name, DOMAIN_KIND, iops_4k=domain.iops_4k,
                     bytes_sec=domain.bytes_sec, policy=policy,
                     params=dict(scenario.policies.get(policy, {})))
    for tier in scenario.tiers.values():
        db.tier_create(dict(dataclasses.asdict(tier), is_public=True,
                            description='from scenario ' + scenario.name))
    disks: list[dict[str, Any]] = []
    for disk_id in world.disk_ids():
        info: dict[str, Any] = world.disk_info(disk_id)
        db.disk_upsert(info['instance_uuid'], info['dev'], info['host'],
                       domain.name, info['project_id'],
                       volume_id=info['volume_id'])
        db.disk_tier_set(info['instance_uuid'], info['dev'], info['tier'],
                         'volume_type' if info['volume_id'] else 'flavor',
                         info['project_id'])
        disks.append(info)
    return disks


def action(decision: dict[str, Any], index: int, start: float) -> loop.Action:
    """A recorded decision of the audit trail as a simulator Action."""
    old, new = decision['old_limits'] or {}, decision['new_limits'] or {}
    tightened = decision['action'] == 'cap' and any(
        caps.limit(new, k) < caps.limit(old, k)
        for k in ('total_iops_sec', 'total_bytes_sec'))
    return loop.Action(
        time=effects.to_timestamp(decision['created_at']) - start,
        disk=index, action=decision['action'], changed=old != new,
        reason=decision['reason'], tightened=tightened)


class _ThreadingWSGIServer(socketserver.ThreadingMixIn,
                           simple_server.WSGIServer):
    daemon_threads = True


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, *args: Any) -> None:
        LOG.debug('api: ' + args[0], *args[1:])


def serve_api(conf: cfg.ConfigOpts, db: db_api.Connection,
              port: int) -> _ThreadingWSGIServer:
    """The API on 127.0.0.1 in a thread; ``port`` 0 or taken: a free one."""
    application = api_app.deploy(conf, db=db)

    def make(on: int) -> _ThreadingWSGIServer:
        return simple_server.make_server(
            '127.0.0.1', on, application,
            server_class=_ThreadingWSGIServer, handler_class=_QuietHandler)
    try:
        server = make(port)
    except OSError as e:
        LOG.warning('Port %s is taken (%s); using a free one', port, e)
        server = make(0)
    thread = threading.Thread(target=server.serve_forever,
                              name='iotguard-allinone-api', daemon=True)
    thread.start()
    return server


@dataclasses.dataclass
class VmView:
    name: str
    role: str
    kbs: float
    floor_kbs: float
    cap_kbs: float | None
    reason: str


@dataclasses.dataclass
class Window:
    """What the live view shows after each window."""

    index: int
    windows: int
    sim_s: float
    vms: list[VmView]
    decisions: int
    caps: int


class AllInOne:
    """The services of one all-in-one run; ``run()`` drives them."""

    def __init__(self, options: Options, workdir: str) -> None:
        self.options = options
        self.scenario = cut(scenario_mod.load(options.scenario),
                            options.duration_s)
        self.world = world_mod.World(self.scenario, seed=options.seed)
        #: Held while the world steps and while an agent reads or sets it.
        self.lock = threading.RLock()
        self.start_epoch = 0.0
        db_path = options.db_path or os.path.join(workdir, 'iotguard.sqlite')
        self.db_url = 'sqlite:///' + os.path.abspath(db_path)
        self.log_file = os.path.abspath(
            options.log_file
            or os.path.join(workdir, 'iotguard-allinone.log'))
        self.conf: cfg.ConfigOpts
        self.db: db_api.Connection
        self.controller: controller_service.ControllerService
        self.api: _ThreadingWSGIServer
        self._stack = contextlib.ExitStack()
        self.agents: list[agent_service.AgentService] = []
        self.recorder = loop.Recorder(self.scenario, self.world)
        self.disks: list[dict[str, Any]] = []
        self._last_decision = 0
        self._reasons: dict[tuple[str, str], str] = {}
        #: windows whose samples did not all reach the controller in time
        self.late_windows = 0

    @property
    def api_url(self) -> str:
        return 'http://127.0.0.1:%d' % self.api.server_address[1]

    def clock(self) -> float:
        """Simulated UNIX time."""
        return self.start_epoch + self.world.now

    def start(self) -> None:
        sc = self.scenario
        self.start_epoch = time.time()
        self.conf = make_conf('allinone-controller', self.log_file,
                              self.db_url)
        logging.setup(self.conf, 'iotguard')
        interval = sc.interval_s
        for name, value in (('decision_interval', interval),
                            ('lease_seconds', 3 * interval),
                            ('rates_write_interval', interval),
                            ('register_local_disks', False),
                            ('default_policy', self.options.policy)):
            self.conf.set_override(name, value, group='controller')
        self.db = db_api.Connection(self.conf)
        self._stack.callback(self.db.dispose)
        migration.upgrade(self.db.get_engine())
        self.disks = seed(self.db, sc, self.world, self.options.policy)
        transport = rpc.get_transport(self.conf, url=TRANSPORT_URL)
        self._stack.callback(transport.cleanup)
        notification_transport = oslo_messaging.get_notification_transport(
            self.conf, url=TRANSPORT_URL)
        self.controller = controller_service.ControllerService(
            self.conf, transport=transport,
            notification_transport=notification_transport, db=self.db,
            clock=self.clock, timer=False)
        self._stack.callback(self.controller.stop)
        self.controller.start()
        for host in sorted({d['host'] for d in self.disks}):
            conf = make_conf(host, db_url=self.db_url)
            conf.set_override('sample_interval', interval, group='agent')
            driver = simulated.SimulatedDriver(
                conf, world=self.world, clock=self.clock, lock=self.lock)
            agent = agent_service.AgentService(
                conf, driver=driver, transport=transport,
                clock=self.clock, timer=False)
            agent.start()
            # A first reading at the start, as agents already running when
            # the VMs start would take: window 0 has rates, as in the
            # simulator's loop.
            agent.tick()
            self.agents.append(agent)
            self._stack.callback(agent.stop)
        self.api = serve_api(self.conf, self.db, self.options.port)
        self._stack.callback(self.api.server_close)
        self._stack.callback(self.api.shutdown)
        LOG.info('all-in-one: %s on %s, %d agent(s), API on %s',
                 sc.name, self.db_url, len(self.agents), self.api_url)

    def _wait(self, predicate: Callable[[], bool]) -> bool:
        """Whether ``predicate()`` came true within the delivery timeout."""
        deadline = time.monotonic() + DELIVERY_TIMEOUT_S
        while not predicate():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
        return True

    def _samples_in(self, stamp: float) -> bool:
        store = self.controller.store
        for disk in self.disks:
            sample = store.latest(disk['instance_uuid'], disk['dev'])
            at = None if sample is None else sample['timestamp']
            if at is None or at < stamp - 1e-6:
                return False
        return True

    def _caps_applied(self) -> bool:
        wanted = {(d['instance_uuid'], d['dev']): str(d['cap']['decision_id'])
                  for d in self.db.disk_list() if d['cap']}
        held: dict[tuple[str, str], str] = {}
        for agent in self.agents:
            for key in agent.driver.list_disks():
                in_force = agent.manager.cap_in_force(key)
                if in_force is not None:
                    held[key] = str(in_force[2])
        return wanted == held

    def _new_decisions(self) -> int:
        index = {(d['instance_uuid'], d['dev']): i
                 for i, d in enumerate(self.disks)}
        new = [d for d in self.db.decision_list(limit=1000)
               if d['id'] > self._last_decision]
        for decision in reversed(new):
            key = (decision['instance_uuid'], decision['dev'])
            self._last_decision = max(self._last_decision, decision['id'])
            self._reasons[key] = '%s: %s' % (decision['action'],
                                             decision['reason'])
            if key in index:
                self.recorder.actions.append(
                    action(decision, index[key], self.start_epoch))
        return len(new)

    def window(self, k: int) -> None:
        """One control interval: step, agents, controller, caps applied."""
        dt = self.scenario.interval_s
        with self.lock:
            self.recorder.begin(k)
            self.world.step(dt)
            self.recorder.end(k)
        stamp = self.clock()
        for agent in self.agents:
            agent.tick()
        if not self._wait(lambda: self._samples_in(stamp)):
            self.late_windows += 1
            if self.late_windows == 1:
                LOG.warning('Window %d: the agents\' samples did not all '
                            'reach the controller within %.1f s (see %s)',
                            k + 1, DELIVERY_TIMEOUT_S, self.log_file)
        self.controller.tick(stamp)
        self._wait(self._caps_applied)
        self._new_decisions()

    def view(self, k: int) -> Window:
        run = self.recorder
        caps = {(d['instance_uuid'], d['dev']): d['cap']
                for d in self.db.disk_list()}
        tiers = [self.scenario.tiers[vm.tier] for vm in run.vms]
        vms = []
        for i, disk in enumerate(self.disks):
            key = (disk['instance_uuid'], disk['dev'])
            cap = caps.get(key)
            limit = (cap['limits'].get('total_bytes_sec') if cap else None)
            vms.append(VmView(
                name=run.vms[i].name, role=run.vms[i].role,
                kbs=float(run.kbs[k, i]),
                floor_kbs=tiers[i].min_bytes_sec / workload.KIB,
                cap_kbs=limit / workload.KIB if limit else None,
                reason=self._reasons.get(key, '')))
        return Window(index=k, windows=len(run.queue),
                      sim_s=self.world.now, vms=vms,
                      decisions=self._last_decision,
                      caps=sum(1 for c in caps.values() if c))

    def run(self,
            on_window: Callable[[Window], object] | None = None) -> loop.Run:
        """Every window, paced at ``speed``; returns the recorded Run."""
        windows = len(self.recorder.queue)
        pace = self.scenario.interval_s / self.options.speed
        started = time.monotonic()
        done = 0
        try:
            for k in range(windows):
                self.window(k)
                done = k + 1
                if on_window is not None:
                    on_window(self.view(k))
                delay = started + done * pace - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
        except KeyboardInterrupt:
            LOG.info('Interrupted after %d of %d windows', done, windows)
        if done and self.late_windows >= done:
            # Nothing was decided on measurements: the figures would be
            # those of no control, presented as iotguard's.
            raise exception.AllInOneFailed(
                reason='the agents\' samples never reached the controller '
                       'in %d windows; see %s' % (done, self.log_file))
        return self.recorder.run(done)

    def stop(self) -> None:
        self._stack.close()


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


def options(args: argparse.Namespace) -> Options:
    if not args.speed > 0:
        raise ValueError('--speed must be > 0, not %r' % args.speed)
    if args.duration is not None and not args.duration > 0:
        raise ValueError('--duration must be > 0, not %r' % args.duration)
    if not 0 <= args.port < 65536:
        raise ValueError('--port must be 0-65535, not %r' % args.port)
    policy_mod.load(args.policy)   # unknown names fail before any start
    return Options(scenario=args.scenario, policy=args.policy,
                   speed=args.speed, duration_s=args.duration,
                   port=args.port, db_path=args.db, seed=args.seed,
                   log_file=args.log_file)


def _kbs(value: float | None) -> str:
    return '-' if value is None else '%.0f' % value


def render(window: Window, head: list[str]) -> list[str]:
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

    def __call__(self, window: Window) -> None:
        lines = render(window, self.head if self.tty else [])
        if self.tty:
            self.stream.write(CLEAR + '\n'.join(lines) + '\n')
        else:
            self.stream.write('\n'.join(lines[:1] + lines[3:]) + '\n')
        self.stream.flush()


def banner(aio: AllInOne) -> list[str]:
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
        aio = AllInOne(opts, tmp)
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
