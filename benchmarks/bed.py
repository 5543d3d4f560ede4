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

"""The shared-queue bed with iotguard, as the benchmarks build and read it.

:class:`Bed`: the bed (:mod:`iotguard.tests.fixtures.sharedqueue`) with
its own RabbitMQ node and PostgreSQL cluster (never the machine's shared
ones), two quiet guests on a tier (their demand measured alone first),
iotguard's api, controller and agent as processes and, unless told
otherwise, a noisy guest capped. :class:`Poller` reads the bed at a fixed
pace in a thread; :func:`windows` turns its cumulative counters into
rates per window. Used by :mod:`benchmarks.faults` and
:mod:`benchmarks.guarantee`.
"""

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import fixtures
import numpy as np
from oslo_config import cfg

from iotguard.sim import measures
from iotguard.tests.fixtures import database
from iotguard.tests.fixtures import rabbit
from iotguard.tests.fixtures import sharedqueue
from iotguard.tests.functional import test_shared_queue as sq
from iotguard.wire import rpc
from iotguard.wire import rpcapi

ADMIN = {'X-Project-Id': 'admin-proj', 'X-Roles': 'admin,member,reader'}
MEMBER_A = {'X-Project-Id': 'proj-a', 'X-Roles': 'member,reader'}
#: The size of the tmpfs the agent's state directory is on (``state_fs``).
STATE_FS_SIZE = '1m'


class Bed(fixtures.Fixture):
    """The shared-queue bed with iotguard; see the module doc.

    ``state_fs``: the agent's state directory on a small tmpfs;
    ``noisy``: start the noisy guest (``sq.NOISY``) and wait until it is
    capped; ``slices``: guests the queue serves in all (two quiet ones,
    the rest for guests started later with :meth:`guest`); ``extra``:
    config text for iotguard's processes (``sharedqueue.Services``).
    """

    def __init__(self, workdir, state_fs=False, noisy=True, slices=3,
                 extra='', prefix='f'):
        super().__init__()
        self.dir, self.state_fs, self.with_noisy = workdir, state_fs, noisy
        self.slices, self.extra, self.prefix = slices, extra, prefix
        self.run_id = uuid.uuid4().hex[:8]

    def _setUp(self):
        why = sharedqueue.unavailable()
        if why:
            raise RuntimeError(why)
        self.rabbit = self.useFixture(rabbit.RabbitNode(second_port=True))
        self.pg = self.useFixture(database.PostgresCluster())
        db = self.useFixture(database.Database(
            'postgresql', admin_url=self.pg.admin_url))
        self.queue = self.useFixture(sharedqueue.SharedQueue(
            self.dir, iops=sq.IOPS, bytes_sec=sq.BYTES_SEC,
            slices=self.slices))
        self.quiet = [self.guest('q%d' % i, 'proj-a', sq.QUIET)
                      for i in (1, 2)]
        self.queue.wait_writing(self.quiet)
        self.state_dir = os.path.join(self.dir, 'state')
        os.makedirs(self.state_dir)
        if self.state_fs:
            subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=%s'
                            % STATE_FS_SIZE, 'tmpfs', self.state_dir],
                           check=True)
            self.addCleanup(subprocess.run, ['umount', self.state_dir])
        self.services = self.useFixture(sharedqueue.Services(
            self.dir, self.rabbit.url, db.url, 'bed-' + self.run_id,
            state_dir=self.state_dir, agent_rabbit=self.rabbit.url2,
            extra=self.extra))
        wait(lambda: len(self.api('GET', '/v1/instances?all_projects=true',
                                  ADMIN)['instances']) == 2, 60,
             'the quiet guests registered')
        self.api('PATCH', '/v1/domains/local:' + self.services.host, ADMIN,
                 {'iops_4k': sq.IOPS, 'bytes_sec': sq.BYTES_SEC,
                  'form': 'max'})
        self.tiers = ['quiet-%s-%d' % (self.run_id, i) for i in (1, 2)]
        for tier in self.tiers:
            self.api('POST', '/v1/tiers', ADMIN,
                     {'name': tier, 'min_bytes_sec': sq.FLOOR,
                      'min_iops': sq.FLOOR_IOPS})
        for dom in self.quiet:
            self.choose(dom, self.tiers[0])
        self.demand = rates_alone(self.quiet)
        if self.with_noisy:
            self.noisy = self.guest('noisy', 'proj-b', sq.NOISY)
            self.static = limits(self.noisy)
            self.queue.wait_writing([self.noisy])
            wait(self.capped, 60, 'the noisy guest capped')

    def guest(self, role, project, writers):
        """A guest on the next slice, named after ``role``; its domain."""
        return self.queue.guest('iotg-%s-%s-%s' % (
            self.prefix, role, self.run_id), project, **writers)

    def capped(self):
        return limits(self.noisy) != self.static

    def choose(self, dom, tier):
        return self.services.call(
            'PUT', '/v1/instances/%s/tier' % dom.UUIDString(), MEMBER_A,
            {'tier': tier}, timeout=10)

    def api(self, method, path, who, body=None):
        status, answer, _ = self.services.call(method, path, who, body)
        if status >= 300:
            raise RuntimeError('%s %s -> %s %s' % (method, path, status,
                                                   answer))
        return answer

    def reconnect(self):
        """The bed on a new libvirt connection (libvirtd was restarted).

        The connection and the guests' domain objects keep their identity
        (the queue's cleanups hold them): each takes the new connection's
        handle, and the dead one goes with the object it is swapped into.
        """
        import libvirt
        fresh = libvirt.open(sharedqueue.LIBVIRT_URI)
        doms = [(d, fresh.lookupByUUIDString(d.UUIDString()))
                for d in self.quiet + [self.noisy]]
        for old, new in [(self.queue.conn, fresh)] + doms:
            old._o, new._o = new._o, old._o

    def agent_lease(self):
        """The noisy disk's lease and decision in the agent's memory.

        Asked over RPC (``get_state``, through the controllers' port of
        the broker), for when its state file cannot be written; None when
        the agent holds no cap on it.
        """
        if getattr(self, '_agent_api', None) is None:
            conf = cfg.ConfigOpts()
            conf(['--config-file', os.path.join(self.dir, 'controller.conf')])
            transport = rpc.get_transport(conf)
            self.addCleanup(transport.cleanup)
            self._agent_api = rpcapi.AgentAPI(transport, timeout=5)
        state = self._agent_api.get_state({}, self.services.host)
        for disk in state['disks']:
            if (disk['instance_uuid'], disk['dev']) == (
                    self.noisy.UUIDString(), 'vda') and disk['cap']:
                return disk['lease_expires_at'], disk['decision_id']
        return None

    def lease(self):
        """The noisy disk's lease and decision in the agent's state file."""
        return state_lease(self.services.state_file, self.noisy)

    def ready(self):
        """Before an episode: the noisy guest capped (again)."""
        wait(self.capped, 60, 'the noisy guest capped again')


def state_lease(path, dom):
    """``dom``'s vda lease and decision in the agent state file ``path``.

    On the true clock: an agent whose wall clock is off (the clock
    faults) writes its leases on its own, and says when it wrote the file
    by it (``@clock``); the file's modification time is the kernel's, the
    true one. None when the file holds no cap on the disk.
    """
    try:
        with open(path) as f:
            held = json.load(f)
            mtime = os.fstat(f.fileno()).st_mtime
    except (OSError, ValueError):
        return None
    cap = held.get('%s/vda' % dom.UUIDString())
    if not cap:
        return None
    skew = held.get('@clock', {}).get('wall', mtime) - mtime
    return cap['lease_expires_at'] - skew, cap['decision_id']


def missing():
    """Why the bed cannot run here (a test skips), or None."""
    for why in (sharedqueue.unavailable(), rabbit.RabbitNode.missing(),
                database.PostgresCluster.missing()):
        if why:
            return why
    return None


@contextlib.contextmanager
def workdir(keep=None):
    """The bed's directory: ``keep`` (left behind) or a temporary one."""
    with tempfile.TemporaryDirectory(dir='/var/tmp') as tmp:
        path = keep or tmp
        os.makedirs(path, exist_ok=True)
        os.chmod(path, 0o755)
        yield path


def ready_line(bed, started):
    """The line a runner prints once its bed is up (since ``started``)."""
    return 'bed ready in %.0f s; quiet demand (KiB/s): %s; load %.1f %.1f ' \
        '%.1f' % (time.monotonic() - started,
                  ' '.join('%.0f' % (d / 1024) for d in bed.demand),
                  *os.getloadavg())


def wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError('timed out after %d s waiting for %s'
                               % (timeout, what))
        time.sleep(0.5)


def rates_alone(doms, seconds=3 * sq.WINDOW_S):
    """Bytes/s each of ``doms`` writes over ``seconds`` (its demand)."""
    before = [written(d) for d in doms]
    time.sleep(seconds)
    return np.array([(written(d) - b) / seconds
                     for d, b in zip(doms, before)])


def written(dom):
    return dom.blockStatsFlags('vda')['wr_bytes']


def limits(dom):
    """The disk's limits in force (libvirt's ``<iotune>``, the set ones)."""
    return {k: v for k, v in dom.blockIoTune('vda', 0).items()
            if k.endswith('_sec') and v}


class Poller(threading.Thread):
    """Calls ``read()`` every ``interval`` s: samples ``(time, *read())``.

    ``read`` returns a tuple of ``width`` values; a failed read (libvirtd
    away) is a sample of Nones, said on stderr.
    """

    def __init__(self, read, width, interval):
        super().__init__(daemon=True)
        self.read, self.width, self.interval = read, width, interval
        self.samples = []
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.wait(self.interval):
            try:
                self.samples.append((time.time(),) + tuple(self.read()))
            except Exception as exc:
                self.samples.append((time.time(),) + (None,) * self.width)
                print('poll failed: %s' % exc, file=sys.stderr)

    def stop(self):
        self.stopping.set()
        self.join()
        return self.samples


def windows(samples, span_s, poll_s):
    """(start times, rates) of windows of ``span_s`` over ``samples``.

    The samples' last element is a list of cumulative counters (bytes
    written, ...); one window from each sample to the first at least
    ``span_s`` later (within half a poll), its rate per counter.
    """
    good = [(s[0], s[-1]) for s in samples if s[-1] is not None]
    times, rates = [], []
    j = 0
    for i, (t, w) in enumerate(good):
        j = max(j, i + 1)
        while j < len(good) and good[j][0] - t < span_s - poll_s / 2:
            j += 1
        if j == len(good):
            break
        dt = good[j][0] - t
        times.append(t)
        rates.append([(b - a) / dt for a, b in zip(w, good[j][1])])
    return np.array(times), np.array(rates).reshape(-1, len(good[0][1]))


def worst(times, rates, demand, start, end, span_s, poll_s):
    """The smallest rate / demand of the windows within [start, end]."""
    mask = (times >= start) & (times + span_s <= end + poll_s)
    if not mask.any():
        return float('nan')
    x = rates[mask]
    return measures.worst_window(
        x, np.broadcast_to(demand, x.shape), np.zeros(len(x), dtype=bool))
