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

"""Real guests on one shared storage queue, with and without iotguard.

The bed (:mod:`iotguard.tests.fixtures.sharedqueue`): one throttle node of
``IOPS`` and ``BYTES_SEC`` below three guests' NBD slices. Two quiet
guests (project A) write 64 KiB blocks, one at a time, as fast as their
flavor's static ceiling lets them (their demand); a
noisy guest (project B) joins with sixteen writers of sixteen blocks. The
rates are read by the test itself from libvirt (``virDomainBlockStats``),
in windows of ``WINDOW_S``, independently of what iotguard measures.

* Without iotguard the noisy guest takes most of the queue and the quiet
  ones fall well below what they wrote alone: the bed reproduces the
  noisy-neighbour effect.
* With iotguard (api, controller and agent as separate processes over
  RabbitMQ and PostgreSQL, the agent on ``qemu:///system``, the domain
  profile set as the docs ask for a token bucket (``form: max``), the
  quiet guests on a tier chosen through
  the API), from the third window after the noisy guest started a quiet
  guest's median window is at least ``QUIET_SHARE`` of what it wrote
  alone and its worst ``QUIET_KEPT`` (``QUIET_WORST`` for a thinking
  one), the quiet guests' mean write latency stays under the domain's
  congestion threshold (``CONGESTION_MS``), and the noisy guest keeps at
  least ``SPARE_SHARE`` of the spare in its median window, its cap changed
  at most ``MAX_CAP_CHANGES`` times; with quiet guests that write as fast
  as their ceiling lets them, with quiet guests that think between their
  writes (closed-loop clients), and with two noisy guests starting apart
  (sharing the rest between them).
* The capacity estimator learns the bucket from a profile typed as fio
  gives it (additive), within ``LEARN_TOLERANCE`` of its limits, and
  admission then admits a floor the typed profile refuses.
"""

import os
import statistics
import time
import uuid

import fixtures
from testtools import content

from iotguard.tests import base
from iotguard.tests.fixtures import database
from iotguard.tests.fixtures import rabbit
from iotguard.tests.fixtures import sharedqueue

IOPS, BYTES_SEC = 100, 4 << 20
WINDOW_S = 5.0
#: A quiet guest writes one block at a time, as fast as its flavor's
#: ceiling lets it: that ceiling is its demand.
QUIET = dict(bs='64k', count=1, static_bytes_sec=768 << 10)
#: A quiet guest that thinks 100 ms after each block (a closed-loop
#: client: its rate falls as its requests wait longer).
THINKING = dict(bs='64k', count=1, pause='0.1')
NOISY = dict(bs='64k', count=16, par=16)
#: The quiet tier's floor (above what a quiet guest writes alone): 800
#: KiB/s or 13 operations per second, whichever the disk gets first (a
#: bytes-only floor is priced at 4 KiB operations, 200 IOPS here: more
#: than the queue serves).
FLOOR = 800 << 10
FLOOR_IOPS = 13
#: What the quiet guests keep of their demand, median and worst window,
#: and the noisy guest of the spare (median): guarantee holds a token
#: bucket at its border (``border_max``, 0.94, while the latency
#: objective holds) to keep its queue short, at the price of the rest of
#: the bucket: 0.90 of the spare with the ceiling-held guests and for two
#: noisy guests together, 0.91 with the thinking ones (see the
#: contributor guide's page on this bed for the figures; the margin is
#: for a busy host).
QUIET_SHARE = 0.9
QUIET_WORST = 0.8
SPARE_SHARE = 0.87
#: What a quiet guest held by its own ceiling keeps of its demand in every
#: window after the first ``SETTLE`` of each noisy start (its demand is
#: under its max-min fair share: issue 13's target), with one noisy guest
#: or two; a thinking one is held to ``QUIET_WORST`` (its pace depends on
#: the host's CPUs too). How close two noisy guests' shares are to each
#: other (the smaller median over the larger).
QUIET_KEPT = 0.95
NOISY_FAIRNESS = 0.7
#: The domain's congestion threshold as guarantee derives it by default:
#: ``congestion_factor`` (8) x the learned service time of the quiet
#: guests' 64 KiB writes on the bucket (64 KiB at 4 MiB/s: 15.6 ms). The
#: quiet guests' mean write latency stays under it (issue 13).
CONGESTION_MS = 8 * 1000.0 * (64 << 10) / BYTES_SEC
#: The noisy guest's cap changes (set, raised, released) in the whole
#: run: one or two when the caps do not churn.
MAX_CAP_CHANGES = 3
#: Guests that saturate the bucket with large writes (its bandwidth
#: binds) and with small ones (its IOPS bind).
LEARN_LARGE = dict(bs='64k', count=16, par=8)
LEARN_SMALL = dict(bs='4k', count=256, par=8)
#: How close to the bucket's limits the learned profile comes, and in
#: how long a phase of load.
LEARN_TOLERANCE = 0.1
LEARN_TIMEOUT_S = 180
#: Windows after the noisy guest starts that are not judged (two
#: decision intervals and the agent's sampling lag).
SETTLE = 2


class SharedQueueTest(base.TestCase):

    def setUp(self):
        super().setUp()
        for why in (sharedqueue.unavailable(), rabbit.unreachable(),
                    database.unavailable('postgresql')):
            if why:
                self.skipTest(why)
        self.useFixture(fixtures.Timeout(400, gentle=True))
        self.run_id = uuid.uuid4().hex[:8]
        self.dir = self.useFixture(fixtures.TempDir(rootdir='/var/tmp')).path
        os.chmod(self.dir, 0o755)
        self.bed = self.useFixture(sharedqueue.SharedQueue(
            self.dir, iops=IOPS, bytes_sec=BYTES_SEC, slices=4))

    def guest(self, role, project, writers):
        return self.bed.guest('iotg-sq-%s-%s' % (role, self.run_id),
                              project, **writers)

    def windows(self, domains, count):
        """Bytes/s written by each domain in ``count`` windows.

        Each domain's mean write latency in each window (ms, QEMU's own
        count: what the guest waits) is kept in ``self.latency_ms``.
        """
        rates = [[] for _ in domains]
        self.latency_ms = [[] for _ in domains]
        last = [self._written(d) for d in domains]
        for _ in range(count):
            time.sleep(WINDOW_S)
            now = [self._written(d) for d in domains]
            for rate, waited, a, b in zip(rates, self.latency_ms, last, now):
                rate.append((b[0] - a[0]) / WINDOW_S)
                ops = b[1] - a[1]
                waited.append((b[2] - a[2]) / ops / 1e6 if ops else 0.0)
            last = now
        return rates

    @staticmethod
    def _written(dom):
        stats = dom.blockStatsFlags('vda')
        return (stats['wr_bytes'], stats['wr_operations'],
                stats['wr_total_times'])

    def _quiet_latency(self, count):
        """The quiet guests' (the first two) settled windows' latency."""
        return [ms for waited in self.latency_ms[:count]
                for ms in waited[SETTLE:]]

    def start_noisy(self, role='noisy'):
        noisy = self.guest(role, 'proj-b', NOISY)
        self.bed.wait_writing([noisy])
        return noisy

    def test_without_iotguard_the_noisy_guest_drags_the_quiet_ones(self):
        quiet = [self.guest('q%d' % i, 'proj-a', QUIET) for i in (1, 2)]
        self.bed.wait_writing(quiet)
        alone = [statistics.median(r) for r in self.windows(quiet, 3)]
        noisy = self.start_noisy()
        rates = self.windows(quiet + [noisy], 2 + 4)
        shown = self._report(self._show(alone, rates))
        for before, after in zip(alone, rates[:2]):
            self.assertLess(max(after[2:]), 0.75 * before, shown)
        total = [sum(w) for w in zip(*rates)][2:]
        self.assertGreater(min(total), 0.85 * BYTES_SEC, shown)
        self.assertLess(max(total), 1.15 * BYTES_SEC, shown)

    def test_iotguard_keeps_the_quiet_guests_at_their_demand(self):
        self._contained(QUIET, QUIET_KEPT)

    def test_iotguard_keeps_thinking_quiet_guests_at_their_demand(self):
        self._contained(THINKING, QUIET_WORST)

    def test_iotguard_keeps_the_quiet_guests_with_two_noisy_neighbours(
            self):
        """Two aggressors, the second joining once the first is capped.

        The quiet guests keep their demand (under their max-min fair
        share here) in every window once two decision intervals have
        passed after each start; the two noisy guests share the rest
        between them.
        """
        quiet, alone = self._quiet_on_a_tier(QUIET)
        first = self.start_noisy('noisy1')
        before = self.windows(quiet + [first], SETTLE + 4)
        waited = self._quiet_latency(2)
        second = self.start_noisy('noisy2')
        after = self.windows(quiet + [first, second], SETTLE + 6)
        waited += self._quiet_latency(2)
        shown = self._report(
            'one noisy guest:\n%s\ntwo:\n%s\nquiet write latency (ms), '
            'alone: %s; settled windows: %s\n%s' % (
                self._show(alone, before), self._show(alone, after),
                self.alone_ms, ' '.join('%.1f' % ms for ms in waited),
                self._decisions()))
        self.assertLess(statistics.mean(waited), CONGESTION_MS, shown)
        for demand, one, two in zip(alone, before, after):
            for rate in one[SETTLE:] + two[SETTLE:]:
                self.assertGreaterEqual(rate, QUIET_KEPT * demand,
                                        shown)
        spare = BYTES_SEC - sum(alone)
        noisy = [statistics.median(r[SETTLE:]) for r in after[2:]]
        self.assertGreaterEqual(sum(noisy), SPARE_SHARE * spare, shown)
        self.assertGreaterEqual(min(noisy), NOISY_FAIRNESS * max(noisy),
                                shown)
        # the first is capped for its own start and cut again when the
        # second joins: one change more than a noisy guest alone may make
        for dom, most in ((first, MAX_CAP_CHANGES + 1),
                          (second, MAX_CAP_CHANGES)):
            changes = self.api('GET', '/v1/decisions?instance=%s&limit=100'
                               % dom.UUIDString(), self.ADMIN)['decisions']
            self.assertLessEqual(len(changes), most, shown)
        for kind, proc in self.procs.items():
            self.assertIsNone(proc.poll(), '%s died' % kind)

    def _quiet_on_a_tier(self, writers):
        """Two quiet guests on the quiet tier, iotguard running.

        Returns the guests and what each writes alone (its demand).
        """
        quiet = [self.guest('q%d' % i, 'proj-a', writers) for i in (1, 2)]
        self.bed.wait_writing(quiet)
        self._start_iotguard()
        domain = 'local:' + self.host
        self._wait(lambda: len(self._instances()) == 2, 60,
                   'the agent\'s disks registered')
        self.api('PATCH', '/v1/domains/' + domain, self.ADMIN,
                 {'iops_4k': IOPS, 'bytes_sec': BYTES_SEC, 'form': 'max'})
        self.api('POST', '/v1/tiers', self.ADMIN,
                 {'name': 'quiet-' + self.run_id, 'min_bytes_sec': FLOOR,
                  'min_iops': FLOOR_IOPS})
        for dom in quiet:
            self.api('PUT', '/v1/instances/%s/tier' % dom.UUIDString(),
                     self.MEMBER_A, {'tier': 'quiet-' + self.run_id})
        alone = [statistics.median(r) for r in self.windows(quiet, 3)]
        # (a guest held by its own ceiling waits in its own throttle too)
        self.alone_ms = ' '.join('%.1f' % statistics.mean(waited)
                                 for waited in self.latency_ms)
        return quiet, alone

    def _contained(self, writers, worst):
        quiet, alone = self._quiet_on_a_tier(writers)
        noisy = self.start_noisy()
        rates = self.windows(quiet + [noisy], SETTLE + 8)
        waited = self._quiet_latency(2)
        shown = self._report(
            '%s\nquiet write latency (ms), alone: %s; settled windows: '
            '%s\n%s' % (
                self._show(alone, rates), self.alone_ms,
                ' '.join('%.1f' % ms for ms in waited), self._decisions()))
        self.assertLess(statistics.mean(waited), CONGESTION_MS, shown)
        for before, after in zip(alone, rates[:2]):
            self.assertGreaterEqual(statistics.median(after[SETTLE:]),
                                    QUIET_SHARE * before, shown)
            self.assertGreaterEqual(min(after[SETTLE:]), worst * before,
                                    shown)
        spare = BYTES_SEC - sum(alone)
        self.assertGreaterEqual(statistics.median(rates[2][SETTLE:]),
                                SPARE_SHARE * spare, shown)
        changes = self.api('GET', '/v1/decisions?instance=%s&limit=100'
                           % noisy.UUIDString(), self.ADMIN)['decisions']
        self.assertLessEqual(len(changes), MAX_CAP_CHANGES, shown)
        for kind, proc in self.procs.items():
            self.assertIsNone(proc.poll(), '%s died' % kind)

    def test_iotguard_learns_the_bucket_and_admits_what_fits(self):
        """The estimator finds the bucket's limits; admission uses them.

        The profile is typed as fio gives it (100 IOPS, 4 MiB/s, additive:
        1.64 times too dear for 64 KiB writes on a token bucket); the
        domain only observes (policy ``none``). A guest saturates the
        bucket with 64 KiB writes, then another with 4 KiB writes.
        """
        big = self.guest('learn64', 'proj-b', LEARN_LARGE)
        self.bed.wait_writing([big])
        self._start_iotguard()
        domain = 'local:' + self.host
        path = '/v1/domains/' + domain
        self._wait(lambda: len(self._instances()) == 1, 60,
                   'the agent\'s disk registered')
        self.api('PATCH', path, self.ADMIN,
                 {'iops_4k': IOPS, 'bytes_sec': BYTES_SEC,
                  'policy': 'none'})
        started = time.monotonic()
        learned = self._learned(path, 'bytes_sec', BYTES_SEC)
        times = {'bytes_sec': time.monotonic() - started}
        small = self.guest('learn4', 'proj-b', LEARN_SMALL)
        self.bed.wait_writing([small])
        big.destroy()
        started = time.monotonic()
        learned = self._learned(path, 'iops_4k', IOPS)
        times['iops_4k'] = time.monotonic() - started
        shown = self._report('learned in %s: %s' % (
            ', '.join('%s %.0f s' % kv for kv in sorted(times.items())),
            learned))
        self.assertEqual('max', learned['form'], shown)
        self.assertLess(abs(learned['bytes_sec'] / BYTES_SEC - 1.0),
                        LEARN_TOLERANCE, shown)

        # Admission: a floor of 2.5 MiB/s or 40 IOPS costs 1.025 of the
        # bucket as typed (refused above 0.9), 0.625 as learned.
        tier = {'name': 'big-' + self.run_id, 'min_iops': 40,
                'min_bytes_sec': 5 << 19}
        self.api('POST', '/v1/tiers', self.ADMIN, tier)
        choose = '/v1/instances/%s/tier' % small.UUIDString()
        self.assertEqual(409, self.call('PUT', choose, self.MEMBER_B,
                                        {'tier': tier['name']})[0])
        self.api('PATCH', path, self.ADMIN, {'profile_source': 'learned'})
        self.assertEqual(200, self.call('PUT', choose, self.MEMBER_B,
                                        {'tier': tier['name']})[0])
        view = self.api('GET', path, self.ADMIN)['domain']
        self._report('utilisation as learned, 4 KiB writes saturating: '
                     '%s (profile in use %s)' % (view['utilisation'],
                                                 view['profile']))
        self.assertLessEqual(view['utilisation'], 1.05, view)

    def _learned(self, path, key, truth):
        """The domain's fit once ``key`` is identified within tolerance."""
        seen = []

        def close():
            view = self.api('GET', path, self.ADMIN)['domain']
            learned = (view['profile'] or {}).get('learned')
            seen.append(learned)
            return bool(learned and key in learned['identified']
                        and abs(learned[key] / truth - 1.0)
                        < LEARN_TOLERANCE)

        try:
            self._wait(close, LEARN_TIMEOUT_S, 'the estimator to find %s'
                       % key)
        except self.failureException:
            self.fail('%s not learned in %d s; fits seen: %s' % (
                key, LEARN_TIMEOUT_S, seen[-3:]))
        return seen[-1]

    # -- iotguard as processes ------------------------------------------

    ADMIN = {'X-Project-Id': 'admin-proj', 'X-Roles': 'admin,member,reader'}
    MEMBER_A = {'X-Project-Id': 'proj-a', 'X-Roles': 'member,reader'}
    MEMBER_B = {'X-Project-Id': 'proj-b', 'X-Roles': 'member,reader'}

    def _start_iotguard(self):
        db = self.useFixture(database.Database('postgresql'))
        self.addOnException(self._attach_logs)
        self.services = self.useFixture(sharedqueue.Services(
            self.dir, rabbit.URL, db.url, 'sq-' + self.run_id))
        self.host, self.procs = self.services.host, self.services.procs

    def _attach_logs(self, exc_info):
        for kind in ('api', 'controller', 'agent'):
            for suffix in ('.log', '.err'):
                path = os.path.join(self.dir, kind + suffix)
                if os.path.exists(path):
                    with open(path, errors='replace') as f:
                        self.addDetail(kind + suffix, content.text_content(
                            f.read()[-6000:]))

    def call(self, method, path, who, body=None):
        """(status, decoded body) of one API call."""
        return self.services.call(method, path, who, body)[:2]

    def api(self, method, path, who, body=None):
        """The body of an API call that must succeed."""
        status, answer = self.call(method, path, who, body)
        if status >= 300:
            self.fail('%s %s -> %s %s' % (method, path, status,
                                          str(answer)[:2000]))
        return answer

    def _instances(self):
        return self.api('GET', '/v1/instances?all_projects=true',
                        self.ADMIN)['instances']

    def _decisions(self):
        try:
            found = self.api('GET', '/v1/decisions?limit=20',
                             self.ADMIN)['decisions']
        except OSError as exc:
            return 'decisions unavailable: %s' % exc
        return '\n'.join('%s %s %s %s %s %s' % (
            d.get('created_at'), d.get('action'),
            str(d.get('instance_uuid'))[:8], d.get('new_limits'),
            d.get('reason'), d.get('numbers')) for d in found)

    def _wait(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                self.fail('timed out after %d s waiting for %s'
                          % (timeout, what))
            time.sleep(1)

    def _report(self, shown):
        """``shown``, also appended to ``$IOTGUARD_BED_REPORT`` if set."""
        base.bed_report(self, shown)
        return shown

    @staticmethod
    def _show(alone, rates):
        lines = ['load average: %.2f %.2f %.2f' % os.getloadavg(),
                 'alone (KiB/s): %s' % ' '.join('%.0f' % (a / 1024)
                                                for a in alone)]
        for i, window in enumerate(zip(*rates)):
            lines.append('window %d: %s' % (i, ' '.join(
                '%.0f' % (r / 1024) for r in window)))
        return '\n'.join(lines)
