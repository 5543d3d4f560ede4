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

import dataclasses
import datetime
import logging
import math
from unittest import mock

import fixtures
import numpy as np

from iotguard.controller import effects
from iotguard.controller import loop
from iotguard.controller import samples
from iotguard import policy as policy_mod
from iotguard.policy import admission
from iotguard.policy import base as policy_base
from iotguard.policy import estimator
from iotguard.tests import base
from iotguard.tests.unit.controller import fakes

T0 = 1_800_000_000.0
KIB64 = 65536.0


class LoopTestBase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(decision_interval=5.0, lease_seconds=15.0,
                   group='controller')
        self.db = fakes.real_db(self)
        self.bulk_reads = fakes.spy(self, self.db, 'domains_disks')
        self.caps_reads = fakes.spy(self, self.db, 'domains_caps')
        self.renews = fakes.spy(self, self.db, 'caps_renew')
        self.rate_writes = fakes.spy(self, self.db, 'disk_rates_bulk_update')
        self.store = samples.SampleStore(5.0, clock=lambda: T0)
        self.agents = fakes.FakeAgentAPI()
        self.notifier = fakes.FakeNotifier()
        self.scripted = fakes.ScriptedPolicy()

        def load(name, **params):
            if name == 'scripted':
                return self.scripted
            return policy_mod.load(name, **params)
        self.loop = loop.DomainLoop(
            self.conf, self.db, self.store, self.agents,
            self.notifier, clock=lambda: T0,
            load_policy=load)

    def feed(self, disk, at=T0 - 1, **kw):
        self.assertEqual(1, fakes.add(
            self.store, fakes.sample(disk['instance_uuid'], disk['dev'],
                                     timestamp=at, **kw), received_at=at))

    def cap_of(self, disk):
        return fakes.cap_of(self.db, disk)

    def owned_a_while(self, name='pool'):
        """This controller has decided ``name`` for a while: warmed up.

        Its disks unheard or stale no longer hold its decisions back.
        """
        self.loop._seen[name] = T0 - 1000.0

    def renewals(self):
        return [sorted(c.args[0]) for c in self.renews.call_args_list]

    def rates_written(self):
        return [c.args[0] for c in self.rate_writes.call_args_list]

    def events(self, event_type):
        return [p for t, p in self.notifier.sent if t == event_type]


class StaticPolicyRoundTest(LoopTestBase):
    """The static policy: every disk with a ceiling gets it as a cap."""

    def setUp(self):
        super().setUp()
        self.domain = fakes.add_domain(self.db, 'pool', policy='static')
        gold = fakes.tier('gold', max_iops=500.0, max_bytes_sec=5e6)
        self.a = fakes.add_disk(self.db, 'pool', 'cn1', gold)
        self.b = fakes.add_disk(self.db, 'pool', 'cn1', gold)
        self.c = fakes.add_disk(self.db, 'pool', 'cn2', gold)
        self.free = fakes.add_disk(self.db, 'pool', 'cn2', None)
        for disk in (self.a, self.b, self.c, self.free):
            self.feed(disk)

    def test_caps_sent_per_host_with_leases_and_audited(self):
        result = self.loop.run_once(self.domain, T0)
        self.assertEqual((4, 0, 3, 3, 2), (result.disks, result.stale,
                                           result.decisions, result.applied,
                                           result.casts))
        by_host = {h: caps for m, h, caps in self.agents.casts}
        self.assertEqual(['apply_caps'] * 2,
                         [m for m, h, c in self.agents.casts])
        self.assertEqual(2, len(by_host['cn1']))
        self.assertEqual(1, len(by_host['cn2']))
        for cap in by_host['cn1'] + by_host['cn2']:
            self.assertEqual({'total_iops_sec': 500,
                              'total_bytes_sec': 5000000}, cap['limits'])
            self.assertEqual(T0 + 15.0, cap['lease_expires_at'])
            row = fakes.decisions(self.db)[int(cap['decision_id']) - 1]
            self.assertEqual('cap', row['action'])
            self.assertEqual('static', row['policy'])
            self.assertEqual(cap['instance_uuid'], row['instance_uuid'])
            self.assertIn('ceiling', row['reason'])
            self.assertEqual(cap['limits'], row['new_limits'])
            self.assertEqual({}, row['old_limits'])
        in_force = self.cap_of(self.a)
        self.assertEqual(effects.to_datetime(T0 + 15.0),
                         in_force['lease_expires_at'])
        self.assertIsNone(self.cap_of(self.free))
        applied = self.events('iotguard.cap.apply')
        self.assertEqual(3, len(applied))
        self.assertEqual({'pool'}, {p['domain'] for p in applied})

    def test_unchanged_caps_are_only_renewed(self):
        self.loop.run_once(self.domain, T0)
        first_ids = {c['instance_uuid']: c['decision_id']
                     for _, _, caps in self.agents.casts for c in caps}
        self.agents.casts.clear()
        # an extra round one second later: leases are fresh, nothing sent
        result = self.loop.run_once(self.domain, T0 + 1)
        self.assertEqual((0, 0, 0), (result.casts, result.applied,
                                     result.renewed))
        # the next regular round renews every cap, same decision, new lease
        result = self.loop.run_once(self.domain, T0 + 5)
        self.assertEqual((2, 0, 3), (result.casts, result.applied,
                                     result.renewed))
        for _, _, caps in self.agents.casts:
            for cap in caps:
                self.assertEqual(first_ids[cap['instance_uuid']],
                                 cap['decision_id'])
                self.assertEqual(T0 + 20.0, cap['lease_expires_at'])
        self.assertEqual(3, len(fakes.decisions(self.db)))
        self.assertEqual(effects.to_datetime(T0 + 20.0),
                         self.cap_of(self.c)['lease_expires_at'])

    def test_lapsed_cap_is_not_in_force(self):
        self.loop.run_once(self.domain, T0)
        self.agents.casts.clear()
        # no round for 20 s (controller down): the leases lapsed, the
        # agents restored the static limits; the caps are decided anew
        # (on fresh samples: stale ones never tighten).
        for disk in (self.a, self.b, self.c):
            self.feed(disk, at=T0 + 19)
        self.loop.run(self.db.domain_list(), T0 + 20)
        self.assertEqual(0, len(self.renewals()))
        self.assertEqual(6, len(fakes.decisions(self.db)))
        self.assertEqual([{}] * 3, [d['old_limits']
                                    for d in fakes.decisions(self.db)[3:]])

    def test_failed_cast_records_no_cap_for_that_host(self):
        self.agents.failing.add('cn2')
        result = self.loop.run_once(self.domain, T0)
        self.assertEqual((1, 2), (result.casts, result.applied))
        self.assertIsNotNone(self.cap_of(self.a))
        self.assertIsNone(self.cap_of(self.c))
        # the decision is in the audit trail all the same
        self.assertEqual(3, len(fakes.decisions(self.db)))
        self.agents.failing.clear()
        result = self.loop.run_once(self.domain, T0 + 5)
        self.assertIsNotNone(self.cap_of(self.c))


class ScriptedRoundTest(LoopTestBase):

    def setUp(self):
        super().setUp()
        self.domain = fakes.add_domain(self.db, 'pool', policy='scripted')
        self.gold = fakes.tier('gold', min_iops=50.0)
        self.a = fakes.add_disk(self.db, 'pool', 'cn1', self.gold)
        self.b = fakes.add_disk(self.db, 'pool', 'cn1', self.gold)

    def id_of(self, disk):
        return '%s/%s' % (disk['instance_uuid'], disk['dev'])

    def test_snapshot_built_from_db_and_samples(self):
        self.owned_a_while()
        self.feed(self.a, iops=40.0, bytes_sec=40 * KIB64, latency_ms=8.0,
                  static={'total_iops_sec': 900})
        self.loop.run_once(self.domain, T0)
        snap, now = self.scripted.seen[0]
        self.assertEqual(T0, now)
        self.assertEqual((self.id_of(self.a), self.id_of(self.b)),
                         snap.disk_ids)
        self.assertEqual([40.0, 0.0], list(snap.iops))
        self.assertEqual([40 * KIB64, 0.0], list(snap.bytes_sec))
        self.assertEqual([8.0, 0.0], list(snap.latency_ms))
        self.assertEqual([50.0, 50.0], list(snap.floor_iops))
        self.assertEqual([900.0, math.inf], list(snap.ceil_iops))
        # b has no sample at all: stale
        self.assertEqual([False, True], list(snap.stale))
        self.assertEqual(300.0, snap.profile.iops_4k)

    def test_gap_and_old_samples_are_stale(self):
        self.owned_a_while()
        self.feed(self.a, at=T0 - 1, gap='reset')
        self.feed(self.b, at=T0 - 14)
        self.loop.run_once(self.domain, T0)
        self.assertEqual([True, False], list(self.scripted.seen[-1][0].stale))
        self.loop.run_once(self.domain, T0 + 5)
        self.assertEqual([True, True], list(self.scripted.seen[-1][0].stale))

    def test_never_tightens_on_stale_data(self):
        self.owned_a_while()
        self.feed(self.a)
        self.scripted.answer = [
            policy_base.Decision(self.id_of(self.a), 'cap', 'fresh',
                                 iops=100.0),
            policy_base.Decision(self.id_of(self.b), 'cap', 'blind',
                                 iops=100.0)]
        result = self.loop.run_once(self.domain, T0)
        self.assertEqual((1, 1), (result.applied, result.dropped))
        self.assertIsNone(self.cap_of(self.b))
        # loosening a cap of a stale disk is allowed
        fakes.cap_set(self.db, self.b, {'total_iops_sec': 50},
                      effects.to_datetime(T0 + 15), None)
        self.scripted.answer = [policy_base.Decision(
            self.id_of(self.b), 'cap', 'loosen', iops=75.0)]
        result = self.loop.run_once(self.domain, T0 + 5)
        self.assertEqual((1, 0), (result.applied, result.dropped))
        self.assertEqual({'total_iops_sec': 75},
                         self.cap_of(self.b)['limits'])

    def test_release(self):
        self.owned_a_while()
        self.feed(self.a)
        self.scripted.answer = [policy_base.Decision(
            self.id_of(self.a), 'cap', 'noisy', iops=100.0,
            numbers={'load': 0.9})]
        self.loop.run_once(self.domain, T0)
        cap_id = int(self.cap_of(self.a)['decision_id'])
        self.scripted.answer = [
            policy_base.Decision(self.id_of(self.a), 'release', 'calm'),
            policy_base.Decision(self.id_of(self.b), 'release', 'no-op')]
        self.agents.casts.clear()
        result = self.loop.run_once(self.domain, T0 + 5)
        self.assertEqual((1, 1), (result.released, result.casts))
        self.assertEqual([('release_caps', 'cn1',
                           [{'instance_uuid': self.a['instance_uuid'],
                             'dev': 'vda'}])], self.agents.casts)
        self.assertIsNone(self.cap_of(self.a))
        row = fakes.decisions(self.db)[-1]
        self.assertEqual(('release', 'calm', {'total_iops_sec': 100}, {}),
                         (row['action'], row['reason'], row['old_limits'],
                          row['new_limits']))
        self.assertEqual(2, len(fakes.decisions(self.db)))
        released = self.events('iotguard.cap.release')
        self.assertEqual(row['id'], released[0]['decision_id'])
        self.assertEqual({'load': 0.9},
                         fakes.decisions(self.db)[cap_id - 1]['numbers'])

    def test_takeover_without_samples_only_renews(self):
        # caps set by the previous owner, lease running out soon
        for disk in (self.a, self.b):
            fakes.cap_set(self.db, disk, {'total_iops_sec': 50},
                          effects.to_datetime(T0 + 4), None)
        self.scripted.answer = [policy_base.Decision(
            self.id_of(self.a), 'release', 'blind')]
        result = self.loop.run_once(self.domain, T0)
        self.assertEqual(([], 'warming up', 2),
                         (self.scripted.seen, result.skipped,
                          result.renewed))
        self.assertIsNotNone(self.cap_of(self.a))
        # one interval later the policy runs, even on stale data (its
        # release held back while the floor-holders are unheard)
        result = self.loop.run_once(self.domain, T0 + 5)
        self.assertEqual(1, len(self.scripted.seen))
        self.assertEqual(0, result.released)
        # a domain handed over and back is warmed up again
        self.loop.forget(['pool'])
        self.assertEqual('warming up',
                         self.loop.run_once(self.domain, T0 + 10).skipped)

    def test_takeover_waits_for_every_disk_an_interval_at_most(self):
        # a heard, b's host not yet: what b asks is unknown, not nothing
        fakes.cap_set(self.db, self.b, {'total_iops_sec': 50},
                      effects.to_datetime(T0 + 4), None)
        self.feed(self.a, at=T0)
        self.scripted.answer = [policy_base.Decision(
            self.id_of(self.b), 'cap', 'loosened', iops=80.0)]
        result = self.loop.run_once(self.domain, T0 + 0.5)
        self.assertEqual(([], 'warming up', 1),
                         (self.scripted.seen, result.skipped,
                          result.renewed))
        self.feed(self.b, at=T0 + 1)
        result = self.loop.run_once(self.domain, T0 + 1.5)
        self.assertEqual((1, None), (len(self.scripted.seen),
                                     result.skipped))
        # b silent since: decided an interval after the takeover all the same
        self.loop.forget(['pool'])
        self.scripted.seen.clear()
        self.feed(self.a, at=T0 + 20)
        self.assertEqual('warming up',
                         self.loop.run_once(self.domain, T0 + 30).skipped)
        self.loop.run_once(self.domain, T0 + 35)
        self.assertEqual(1, len(self.scripted.seen))

    def test_no_cap_loosened_while_a_floor_is_unheard(self):
        # a capped by the previous owner and heard; b (gold) not yet: its
        # samples may be held up (a hung controller's share of the queue)
        fakes.cap_set(self.db, self.a, {'total_iops_sec': 50},
                      effects.to_datetime(T0 + 100), None)
        self.feed(self.a, at=T0)
        self.assertEqual('warming up',
                         self.loop.run_once(self.domain, T0).skipped)
        release = policy_base.Decision(self.id_of(self.a), 'release', 'calm')
        self.scripted.answer = [release]
        self.feed(self.a, at=T0 + 5)
        result = self.loop.run_once(self.domain, T0 + 5)
        self.assertEqual((0, {'total_iops_sec': 50}),
                         (result.released, self.cap_of(self.a)['limits']))
        # a cut stands
        self.scripted.answer = [policy_base.Decision(
            self.id_of(self.a), 'cap', 'cut', iops=40.0)]
        self.feed(self.a, at=T0 + 10)
        self.loop.run_once(self.domain, T0 + 10)
        self.assertEqual({'total_iops_sec': 40},
                         self.cap_of(self.a)['limits'])
        # b heard: the release goes
        self.scripted.answer = [release]
        self.feed(self.a, at=T0 + 15)
        self.feed(self.b, at=T0 + 15)
        self.assertEqual(1, self.loop.run_once(self.domain,
                                               T0 + 15).released)
        # nor is one held back two leases after the takeover, heard or not
        self.loop.forget(['pool'])
        fakes.cap_set(self.db, self.a, {'total_iops_sec': 50},
                      effects.to_datetime(T0 + 100), None)
        self.feed(self.a, at=T0 + 40)
        self.loop.run_once(self.domain, T0 + 40)        # warming up
        self.feed(self.a, at=T0 + 70)
        self.assertEqual(1, self.loop.run_once(self.domain,
                                               T0 + 70).released)

    def test_cap_set_at_comes_from_the_decision(self):
        self.owned_a_while()
        self.feed(self.a)
        self.scripted.answer = [policy_base.Decision(
            self.id_of(self.a), 'cap', 'noisy', iops=100.0)]
        self.loop.run_once(self.domain, T0)
        self.scripted.answer = []
        self.loop.run_once(self.domain, T0 + 5)
        snap = self.scripted.seen[-1][0]
        self.assertEqual(T0, snap.cap_set_at[0])
        self.assertEqual(100.0, snap.cap_iops[0])
        self.assertTrue(math.isnan(snap.cap_set_at[1]))

    def test_fresh_rates_written_for_the_api_every_interval(self):
        first = T0 + effects.rates_offset('pool', 30.0)
        self.feed(self.a, at=first - 1, iops=40.0, bytes_sec=40 * KIB64,
                  latency_ms=8.0)
        self.loop.run_once(self.domain, first - 0.5)   # not due yet
        self.assertEqual([], self.rates_written())
        self.loop.run_once(self.domain, first)
        self.assertEqual([[{
            'id': self.a['id'], 'sampled_at': effects.to_datetime(first - 1),
            'read_iops': 20.0, 'write_iops': 20.0,
            'read_bytes_sec': 20 * KIB64, 'write_bytes_sec': 20 * KIB64,
            'latency_ms': 8.0, 'latency_p99_ms': None}]],
            self.rates_written())   # b: no sample; no p99 measured
        self.loop.run_once(self.domain, first + 5)
        self.assertEqual(1, len(self.rates_written()))
        self.feed(self.b, at=first + 29)
        self.loop.run_once(self.domain, first + 30)
        # a's sample is stale by now: only b's rates are written
        self.assertEqual([self.b['id']],
                         [r['id'] for r in self.rates_written()[-1]])

    def test_the_measured_p99_written_beside_the_mean(self):
        first = T0 + effects.rates_offset('pool', 30.0)
        sent = fakes.batch(*[
            fakes.sample(disk['instance_uuid'], disk['dev'],
                         timestamp=first - 1, latency_ms=8.0)
            for disk in (self.a, self.b)])
        self.store.add_batch(dataclasses.replace(
            sent, p99_ms=np.array([21.5, math.nan])), first - 1)
        self.loop.run_once(self.domain, first - 0.5)   # not due yet
        self.loop.run_once(self.domain, first)
        written = {r['id']: r for r in self.rates_written()[-1]}
        # b's agent measured no p99: NULL, not its mean
        self.assertEqual(
            {self.a['id']: (8.0, 21.5), self.b['id']: (8.0, None)},
            {k: (r['latency_ms'], r['latency_p99_ms'])
             for k, r in written.items()})
        stored = {d['id']: d['latency_p99_ms'] for d in self.db.disk_list()}
        self.assertEqual((21.5, None),
                         (stored[self.a['id']], stored[self.b['id']]))

    def test_rates_writes_are_spread_over_the_interval(self):
        offsets = {effects.rates_offset('pool-%d' % i, 30.0)
                   for i in range(50)}
        self.assertGreater(len(offsets), 40)
        self.assertTrue(all(0 <= o < 30.0 for o in offsets))

    def test_unknown_disk_in_decision_is_ignored(self):
        self.scripted.answer = [policy_base.Decision(
            'ffffffff-ffff-ffff-ffff-ffffffffffff/vda', 'cap', 'x',
            iops=1.0)]
        result = self.loop.run_once(self.domain, T0)
        self.assertEqual((0, 0), (result.applied, result.casts))

    def test_violation_notified_when_it_starts(self):
        # 10 IOPS against a 50 IOPS floor, 200 ms per op, 2 in flight
        self.feed(self.a, iops=10.0, bytes_sec=10 * 4096.0,
                  latency_ms=200.0)
        self.feed(self.b, iops=60.0, bytes_sec=60 * 4096.0,
                  latency_ms=200.0)
        result = self.loop.run_once(self.domain, T0)
        self.assertEqual(1, result.violations)
        sent = self.events('iotguard.guarantee.violation')
        self.assertEqual([self.a['instance_uuid']],
                         [p['instance_uuid'] for p in sent])
        self.assertEqual('gold', sent[0]['tier'])
        self.feed(self.a, at=T0 + 4, iops=10.0, bytes_sec=40960.0,
                  latency_ms=200.0)
        self.loop.run_once(self.domain, T0 + 5)
        self.assertEqual(1, len(self.events('iotguard.guarantee.violation')))
        # a slow disk that is idle between its ops has no unmet demand
        self.feed(self.a, at=T0 + 9, iops=2.0, bytes_sec=8192.0,
                  latency_ms=200.0)
        self.assertEqual(0, self.loop.run_once(self.domain,
                                               T0 + 10).violations)


class RunTest(LoopTestBase):

    def _domains(self, n):
        gold = fakes.tier('gold', max_iops=100.0)
        disks = []
        for k in range(n):
            fakes.add_domain(self.db, 'pool-%d' % k, policy='static')
            disks.append(fakes.add_disk(self.db, 'pool-%d' % k, 'cn%d' % k,
                                        gold))
            self.feed(disks[-1])
        return disks

    def test_a_round_reads_once_and_writes_once(self):
        self.loop.effects.rates_write_s = 5.0   # all due next round
        disks = self._domains(3)
        results = self.loop.run(self.db.domain_list(), T0)
        self.assertEqual(1, self.bulk_reads.call_count)
        self.assertEqual([1, 1, 1], [r.applied for r in results])
        for disk in disks:
            self.feed(disk, at=T0 + 4)
        results = self.loop.run(self.db.domain_list(), T0 + 5)
        # the disks did not change: only their caps are read again (as
        # every round)
        self.assertEqual((1, 2), (self.bulk_reads.call_count,
                                  self.caps_reads.call_count))
        self.assertEqual([1, 1, 1], [r.renewed for r in results])
        # one renewal write and one rates write for the three domains
        self.assertEqual([sorted(d['id'] for d in disks)], self.renewals())
        self.assertEqual(1, len(self.rates_written()))
        self.assertEqual(sorted(d['id'] for d in disks),
                         sorted(r['id'] for r in self.rates_written()[0]))
        for disk in disks:
            self.assertEqual(effects.to_datetime(T0 + 20.0),
                             self.cap_of(disk)['lease_expires_at'])

    def test_disks_read_again_when_they_change(self):
        disks = self._domains(2)
        self.loop.run(self.db.domain_list(), T0)
        self.loop.run(self.db.domain_list(), T0 + 5)
        self.assertEqual(1, self.bulk_reads.call_count)
        # another process gives a disk a tier without a ceiling: its cap
        # is released in the very next round
        self.db.tier_create(fakes.tier('plain'))
        self.db.disk_tier_set(disks[0]['instance_uuid'], 'vda', 'plain',
                              'api', 'p1')
        results = self.loop.run(self.db.domain_list(), T0 + 10)
        self.assertEqual(2, self.bulk_reads.call_count)
        self.assertEqual([1, 0], [r.released for r in results])
        # a new domain is read in full too, and so is everything after a
        # while whatever the version says
        fakes.add_domain(self.db, 'pool-new', policy='static')
        self.loop.run(self.db.domain_list(), T0 + 15)
        self.assertEqual(3, self.bulk_reads.call_count)
        self.loop.run(self.db.domain_list(), T0 + 20)
        self.assertEqual(3, self.bulk_reads.call_count)
        self.loop.run(self.db.domain_list(), T0 + 15 + loop.FULL_READ_S)
        self.assertEqual(4, self.bulk_reads.call_count)

    def test_caps_read_every_round_from_the_database(self):
        disks = self._domains(1)
        self.loop.run(self.db.domain_list(), T0)
        # the cap went away behind the loop's back (released, lapsed):
        # the next round sees it gone and applies it again
        self.db.caps_release([(disks[0]['instance_uuid'], 'vda')])
        results = self.loop.run(self.db.domain_list(), T0 + 5)
        self.assertEqual((1, 1, 0), (self.bulk_reads.call_count,
                                     results[0].applied, results[0].renewed))
        self.assertIsNotNone(self.cap_of(disks[0]))

    def test_failed_renewal_write_is_logged_and_not_counted(self):
        self._domains(2)
        self.loop.run(self.db.domain_list(), T0)

        def broken(ids, lease):
            raise RuntimeError('db down')
        self.db.caps_renew = broken
        logs = self.useFixture(fixtures.FakeLogger(level=logging.ERROR))
        results = self.loop.run(self.db.domain_list(), T0 + 5)
        self.assertEqual([0, 0], [r.renewed for r in results])
        self.assertEqual(4, len(self.agents.casts))   # the agents have them
        self.assertIn('Could not record the renewal of 2 caps', logs.output)

    def test_one_failing_domain_does_not_stop_the_others(self):
        fakes.add_domain(self.db, 'bad', policy='static')
        fakes.add_domain(self.db, 'good', policy='static')
        fakes.add_domain(self.db, 'uncalibrated', iops_4k=None, bytes_sec=None)
        fakes.add_domain(self.db, 'unknown-policy', policy='nope')
        gold = fakes.tier('gold', max_iops=100.0)
        disk = fakes.add_disk(self.db, 'good', 'cn1', gold)
        fakes.add_disk(self.db, 'unknown-policy', 'cn1', gold)
        self.feed(disk)
        read = self.db.domains_disks

        def on_fire(names):
            if 'bad' in names:
                raise RuntimeError('database on fire')
            return read(names)
        self.useFixture(fixtures.MockPatchObject(self.db, 'domains_disks',
                                                 on_fire))
        results = self.loop.run(self.db.domain_list(), T0)
        by_name = {r.domain: r for r in results}
        self.assertEqual({'good', 'uncalibrated'}, set(by_name))
        self.assertEqual(1, by_name['good'].applied)
        self.assertEqual('no capacity profile',
                         by_name['uncalibrated'].skipped)
        logs = self.useFixture(fixtures.FakeLogger(level=logging.WARNING))
        self.loop.run(self.db.domain_list(), T0 + 5)
        self.assertNotIn('no capacity profile', logs.output)

    def test_policy_params_and_default(self):
        self.flags(default_policy='none', group='controller')
        seen = []

        def load(name, **params):
            seen.append((name, params))
            return policy_mod.load(name, **params)
        self.loop = loop.DomainLoop(self.conf, self.db, self.store,
                                    self.agents, self.notifier,
                                    clock=lambda: T0, load_policy=load)
        plain = fakes.add_domain(self.db, 'plain')
        tuned = fakes.add_domain(self.db, 'tuned', policy='guarantee',
                                 params={'high_watermark': 0.8})
        self.loop.run([plain, tuned], T0)
        self.loop.run([plain, tuned], T0 + 5)
        self.assertEqual([('none', {}),
                          ('guarantee', {'high_watermark': 0.8})], seen)
        tuned = dataclasses.replace(tuned, params={'high_watermark': 0.95})
        self.loop.run([tuned], T0 + 10)
        self.assertEqual(('guarantee', {'high_watermark': 0.95}), seen[-1])

    def test_guarantee_caps_the_noisy_neighbour_only(self):
        # paper-like: 64 KiB writes; 614400 B/s floors; the heavy disk
        # takes most of the array while the others starve.
        domain = fakes.add_domain(self.db, 'paper', iops_4k=300.0,
                                  bytes_sec=3.4e6, policy='guarantee')
        tier = fakes.tier('paper', min_bytes_sec=614400.0)
        heavy = fakes.add_disk(self.db, 'paper', 'cn1', tier)
        lights = [fakes.add_disk(self.db, 'paper', 'cn%d' % k, tier)
                  for k in (1, 2, 3)]
        self.feed(heavy, iops=32.0, bytes_sec=32 * KIB64, latency_ms=300.0)
        for disk in lights:
            self.feed(disk, iops=4.0, bytes_sec=4 * KIB64, latency_ms=300.0)
        result = self.loop.run_once(domain, T0)
        self.assertGreaterEqual(result.applied, 1)
        self.assertIsNotNone(self.cap_of(heavy))
        self.assertEqual([None] * 3, [self.cap_of(d) for d in lights])
        row = fakes.decisions(self.db)[-1]
        self.assertEqual(heavy['instance_uuid'], row['instance_uuid'])
        self.assertIn('guarantee', row['reason'])
        self.assertIn('load', row['numbers'])
        self.assertLess(self.cap_of(heavy)['limits']['total_bytes_sec'],
                        32 * KIB64)

    def test_the_round_goes_into_the_disks_records(self):
        # and into the per-disk series, asked for
        self.flags(per_disk_series=True, group='prometheus')
        self.loop = loop.DomainLoop(self.conf, self.db, self.store,
                                    self.agents, self.notifier,
                                    clock=lambda: T0)
        domain = fakes.add_domain(self.db, 'paper', iops_4k=300.0,
                                  bytes_sec=3.4e6, policy='guarantee')
        tier = fakes.tier('paper', min_bytes_sec=614400.0)
        heavy = fakes.add_disk(self.db, 'paper', 'cn1', tier)
        light = fakes.add_disk(self.db, 'paper', 'cn2', tier)
        self.feed(heavy, iops=32.0, bytes_sec=32 * KIB64, latency_ms=300.0)
        self.feed(light, iops=4.0, bytes_sec=4 * KIB64, latency_ms=300.0)
        result = self.loop.run_once(domain, T0)
        self.assertIsNotNone(self.cap_of(heavy))
        cap = self.cap_of(heavy)['limits']['total_bytes_sec']
        series = {row.disk: row for row in result.per_disk}
        heavy_s = series['%s/%s' % (heavy['instance_uuid'], heavy['dev'])]
        light_s = series['%s/%s' % (light['instance_uuid'], light['dev'])]
        self.assertEqual((614400.0, cap, 5.0, 5.0), (
            heavy_s.floor_bytes_sec, heavy_s.cap_bytes_sec,
            heavy_s.checked_s, heavy_s.kept_s))
        self.assertEqual((None, 5.0, 0.0), (
            light_s.cap_bytes_sec, light_s.checked_s, light_s.kept_s))
        start = datetime.datetime.utcfromtimestamp(T0 // 60 * 60)
        end = start + datetime.timedelta(minutes=1)

        def minutes(disk):
            return self.db.disk_minutes(disk['instance_uuid'], disk['dev'],
                                        start, end)
        self.assertEqual([], minutes(heavy))     # the minute is not over
        self.loop.effects.flush(effects.Writes(), T0 + 60)
        heavy_m, = minutes(heavy)
        light_m, = minutes(light)
        self.assertEqual((5.0, 5.0, 5.0), (
            heavy_m.seconds, heavy_m.floor_due_s, heavy_m.capped_s))
        # the floor in force and the cap the round set
        self.assertEqual((None, 614400.0, cap), (
            heavy_m.floor_iops, heavy_m.floor_bytes_sec,
            heavy_m.cap_bytes_sec))
        self.assertEqual((614400.0, None), (light_m.floor_bytes_sec,
                                            light_m.cap_bytes_sec))
        self.assertTrue(heavy_m.cap_reason.startswith('capped at '),
                        heavy_m.cap_reason)
        self.assertIn('doing 32 IOPS and 2.1 MB/s', heavy_m.cap_reason)
        # below its floor, asking for more, slow: not kept
        self.assertEqual((5.0, 0.0, 0.0, None), (
            light_m.floor_due_s, light_m.floor_kept_s, light_m.capped_s,
            light_m.cap_reason))

    def test_capacity_learned_and_used_once_chosen(self):
        # a token bucket of 100 IOPS and 4 MiB/s whose profile was typed
        # additive: a deep 64 KiB writer saturates it at 64 ops/s
        domain = fakes.add_domain(self.db, 'bucket', iops_4k=100.0,
                                  bytes_sec=4194304.0, policy='none')
        heavy = fakes.add_disk(self.db, 'bucket', 'cn1', fakes.tier('bulk'))
        for k in range(loop.LEARN_WRITE_ROUNDS):
            self.feed(heavy, iops=64.0, bytes_sec=64 * KIB64,
                      latency_ms=125.0, at=T0 + 5 * k)
            self.loop.run_once(domain, T0 + 5 * k)
        row = self.db.domain_get('bucket')
        self.assertEqual(loop.LEARN_WRITE_ROUNDS, len(
            self.db.domain_estimator_state('bucket')['saturated']))
        self.assertEqual('max', row.fit.form)
        self.assertAlmostEqual(4194304.0, row.fit.bytes_sec)
        self.assertEqual(('bytes_sec',), row.fit.identified)
        # pinned to the manual profile until the admin chooses the learned
        self.assertEqual('additive', admission.profile_of(row).form)
        row = dataclasses.replace(row, profile_source='learned')
        self.assertEqual('max', admission.profile_of(row).form)
        # a controller taking the domain over starts from the stored state
        self.loop.forget(['bucket'])
        self.feed(heavy, iops=64.0, bytes_sec=64 * KIB64, latency_ms=125.0,
                  at=T0 + 100)
        self.loop.run_once(domain, T0 + 100)
        self.assertEqual(loop.LEARN_WRITE_ROUNDS + 1, len(
            self.loop._learning['bucket'].saturated))


class PolicyStateTest(LoopTestBase):
    """The policies' states kept with their domains in the database."""

    def setUp(self):
        super().setUp()
        self.state_writes = fakes.spy(self, self.db,
                                      'domain_policy_states_update')
        self.state_reads = fakes.spy(self, self.db, 'domain_policy_state')
        self.domains = [fakes.add_domain(self.db, name, policy='scripted')
                        for name in ('d1', 'd2')]
        self.disks = [fakes.add_disk(self.db, name) for name in ('d1', 'd2')]
        self.fresh(T0 - 1)

    def fresh(self, at):
        for disk in self.disks:
            self.feed(disk, at=at)

    def stored(self, name):
        return self.db.domain_policy_state(name)

    def restart(self):
        self.loop = loop.DomainLoop(self.conf, self.db, self.store,
                                    self.agents, self.notifier,
                                    clock=lambda: T0,
                                    load_policy=lambda name, **p: (
                                        self.scripted))

    def test_written_every_round_at_once_and_read_back_after_a_restart(self):
        for k in range(3):
            self.loop.run(self.domains, T0 + 5 * k)
        # one write per round, of both domains; read once each
        self.assertEqual([{'d1', 'd2'}] * 3, [
            set(c.args[0]) for c in self.state_writes.call_args_list])
        self.assertEqual(2, self.state_reads.call_count)
        self.assertEqual([None, None, 1, 1, 2, 2], self.scripted.states)
        self.assertEqual({'policy': 'scripted', 'state': {'count': 3}},
                         self.stored('d1'))
        # a restart (or a takeover) goes on from what is stored
        self.restart()
        self.fresh(T0 + 14)
        self.loop.run(self.domains, T0 + 15)
        self.assertEqual([3, 3], self.scripted.states[-2:])
        self.assertEqual({'count': 4}, self.stored('d2')['state'])

    def test_unchanged_state_is_not_written_again(self):
        static = fakes.add_domain(self.db, 'quiet', policy='static')
        self.feed(fakes.add_disk(self.db, 'quiet'))
        self.loop.run([static], T0)
        self.loop.run([static], T0 + 5)
        self.assertEqual([{'quiet': {'policy': 'static', 'state': None}}],
                         [c.args[0] for c in
                          self.state_writes.call_args_list])

    def test_read_again_after_a_change_of_params_or_ownership(self):
        d1 = self.domains[0]
        self.loop.run([d1], T0)
        self.loop.run([d1], T0 + 5)
        self.assertEqual(1, self.state_reads.call_count)
        # another controller decided it meanwhile
        self.db.domain_policy_states_update(
            {'d1': {'policy': 'scripted', 'state': {'count': 40}}})
        self.loop.run([dataclasses.replace(d1, params={'x': 1})], T0 + 10)
        self.assertEqual(40, self.scripted.states[-1])
        self.loop.forget(['d1'])
        self.db.domain_policy_states_update(
            {'d1': {'policy': 'scripted', 'state': {'count': 50}}})
        self.fresh(T0 + 14)
        self.loop.run([d1], T0 + 15)
        self.assertEqual(50, self.scripted.states[-1])
        self.assertEqual(3, self.state_reads.call_count)

    def test_another_policys_or_an_unreadable_state_is_not_used(self):
        d1, d2 = self.domains
        self.db.domain_policy_states_update({
            'd1': {'policy': 'guarantee', 'state': {'count': 7}},
            'd2': {'policy': 'scripted', 'state': {'counted': 7}}})
        logs = self.useFixture(fixtures.FakeLogger(level=logging.WARNING))
        self.loop.run(self.domains, T0)
        self.assertEqual([None, None], self.scripted.states)
        self.assertIn('Domain d2: the stored state of policy scripted is '
                      'unreadable', logs.output)
        self.assertNotIn('d1', logs.output)
        self.assertEqual({'policy': 'scripted', 'state': {'count': 1}},
                         self.stored('d1'))

    def test_a_state_given_back_is_not_serialised_again(self):
        same = fakes.Counted(7)
        to_dict = mock.Mock(wraps=same.to_dict)
        same.to_dict = to_dict
        self.scripted.decide = lambda snapshot, state, now: ([], same)
        d1 = self.domains[0]
        self.loop.run([d1], T0)
        self.fresh(T0 + 4)
        self.loop.run([d1], T0 + 5)
        self.fresh(T0 + 9)
        self.loop.run([d1], T0 + 10)
        self.assertEqual(1, to_dict.call_count)
        self.assertEqual({'policy': 'scripted', 'state': {'count': 7}},
                         self.stored('d1'))
        # another object: serialised (and, the same, not written again)
        self.scripted.decide = lambda snapshot, state, now: (
            [], fakes.Counted(7))
        self.fresh(T0 + 14)
        self.loop.run([d1], T0 + 15)
        self.assertEqual(1, self.state_writes.call_count)

    def test_a_failed_write_is_logged_and_written_next_round(self):
        # (static: its state, none, does not change from round to round)
        static = fakes.add_domain(self.db, 'quiet', policy='static')
        self.feed(fakes.add_disk(self.db, 'quiet'))
        self.state_writes.side_effect = [RuntimeError('db gone'),
                                         mock.DEFAULT, mock.DEFAULT]
        logs = self.useFixture(fixtures.FakeLogger(level=logging.WARNING))
        self.loop.run([static], T0)
        self.assertIn('Could not write the policy state of 1 domains',
                      logs.output)
        self.assertIsNone(self.stored('quiet'))
        self.loop.run([static], T0 + 5)
        self.loop.run([static], T0 + 10)
        self.assertEqual(2, self.state_writes.call_count)
        self.assertEqual({'policy': 'static', 'state': None},
                         self.stored('quiet'))


class UrgentTest(LoopTestBase):
    """A domain decided at once for an urgent disk short of its floor."""

    def setUp(self):
        super().setUp()
        self.flags(urgent_interval=1.0, group='controller')
        self.loop = loop.DomainLoop(
            self.conf, self.db, self.store, self.agents, self.notifier,
            clock=lambda: T0, load_policy=lambda name, **p: self.scripted)
        self.domain = fakes.add_domain(self.db, 'pool', policy='scripted')
        self.floor = fakes.add_disk(self.db, 'pool', 'cn1', fakes.tier(
            'gold', min_iops=100.0))
        self.free = fakes.add_disk(self.db, 'pool', 'cn1')
        self.keys = [(d['instance_uuid'], d['dev'])
                     for d in (self.floor, self.free)]

    def urgent(self, at, iops, keys=None):
        """The floor-holder's sample at ``at``; an urgent call just after."""
        self.feed(self.floor, at=at, iops=iops)
        self.feed(self.free, at=at)
        return self.decided(keys or self.keys[:1], at + 0.01)

    def decided(self, keys, now):
        """The result of the domain's urgent decision, or None."""
        results = self.loop.urgent({'pool': (self.domain, keys)}, now)
        self.assertLessEqual(len(results), 1)
        return results[0] if results else None

    def test_short_of_its_floor_decides_now_at_most_once_a_second(self):
        # nothing before the domain's first round here (not known to be
        # this controller's)
        self.assertIsNone(self.urgent(T0 - 1, 10.0))
        self.loop.run([self.domain], T0)
        self.assertEqual(1, len(self.scripted.seen))
        result = self.urgent(T0 + 1, 10.0)
        self.assertEqual(('pool', 2, 0), (result.domain, result.disks,
                                          result.stale))
        self.assertEqual(2, len(self.scripted.seen))
        snapshot, now = self.scripted.seen[-1]
        self.assertEqual((T0 + 1.01, 10.0), (now, snapshot.iops[0]))
        # the state goes on from the round's
        self.assertEqual([None, 1], self.scripted.states)
        # not again within urgent_interval, then again
        self.assertIsNone(self.urgent(T0 + 1.5, 10.0))
        self.assertEqual(T0 + 2.01, self.loop.urgent_due('pool', T0 + 1.5))
        self.assertIsNotNone(self.urgent(T0 + 2.5, 10.0))
        self.assertEqual(3, len(self.scripted.seen))

    def test_not_for_a_floor_reached_or_a_disk_without_one(self):
        self.owned_a_while()
        self.feed(self.floor)
        self.loop.run([self.domain], T0)
        self.assertEqual(1, len(self.scripted.seen))
        self.assertIsNone(self.urgent(T0 + 1, 100.0))
        self.assertIsNone(self.urgent(T0 + 2.5, 10.0, keys=self.keys[1:]))
        self.assertIsNone(self.decided([('unknown', 'vda')], T0 + 4))
        self.assertEqual(1, len(self.scripted.seen))
        # a stale sample is not short: nothing is known of it
        self.assertIsNone(self.decided(self.keys[:1], T0 + 60))

    def test_several_domains_at_once_as_a_round(self):
        other = fakes.add_domain(self.db, 'pool2', policy='scripted')
        floor2 = fakes.add_disk(self.db, 'pool2', 'cn2', fakes.tier(
            'gold', min_iops=100.0))
        self.feed(self.floor)
        self.feed(floor2)
        self.loop.run([self.domain, other], T0)
        self.feed(self.floor, at=T0 + 1, iops=10.0)
        self.feed(floor2, at=T0 + 1, iops=10.0)
        reads = self.caps_reads.call_count
        results = self.loop.urgent({
            'pool': (self.domain, self.keys[:1]),
            'pool2': (other, [(floor2['instance_uuid'], floor2['dev'])])},
            T0 + 1.01)
        self.assertEqual(['pool', 'pool2'], [r.domain for r in results])
        # their caps in force read at once
        self.assertEqual(reads + 1, self.caps_reads.call_count)

    def test_after_a_round_that_warmed_up(self):
        # the first round after a start hears no sample: nothing decided,
        # the state not read yet; an urgent sample decides (and reads it)
        self.loop.run([self.domain], T0 - 2)
        self.assertEqual([], self.scripted.seen)
        self.assertIsNotNone(self.urgent(T0, 10.0))
        self.assertEqual([None], self.scripted.states)

    def test_off_with_urgent_interval_0(self):
        self.flags(urgent_interval=0.0, group='controller')
        self.loop = loop.DomainLoop(
            self.conf, self.db, self.store, self.agents, self.notifier,
            clock=lambda: T0, load_policy=lambda name, **p: self.scripted)
        self.owned_a_while()
        self.feed(self.floor)
        self.loop.run([self.domain], T0)
        self.assertEqual(1, len(self.scripted.seen))
        self.assertEqual(math.inf, self.loop.urgent_due('pool', T0))
        self.assertIsNone(self.urgent(T0 + 1, 10.0))
        self.assertEqual(1, len(self.scripted.seen))


class OvercommitTest(LoopTestBase):
    """Floors admitted on a profile the fit later finds too optimistic."""

    #: what the storage serves: a bucket of 100 IOPS and 4 MiB/s
    TRUE = estimator.Fit('max', 100.0, 4194304.0, 0.01, 60, 2, 1.0,
                         ('iops_4k', 'bytes_sec'))

    def setUp(self):
        super().setUp()
        # typed twice what it serves; eight 600 KiB/s floors admitted at
        # 0.59 of it cost 1.17 of the bucket
        self.domain = fakes.add_domain(self.db, 'bucket', iops_4k=200.0,
                                       bytes_sec=8388608.0, policy='none',
                                       form='max')
        quiet = fakes.tier('quiet', min_iops=10.0,
                           min_bytes_sec=600 * 1024.0)
        self.disks = [fakes.add_disk(self.db, 'bucket', 'cn1', quiet)
                      for _ in range(8)]
        self.fit = self.TRUE
        self.useFixture(fixtures.MockPatchObject(
            loop.estimator, 'fit', lambda state, prior: self.fit))
        self.t = T0

    def tiers(self):
        views = fakes.disks(self.db)
        return [views[(d['instance_uuid'], d['dev'])]['tier']
                for d in self.disks]

    def learn(self):
        """Rounds until the controller writes (and judges) a fit."""
        for _ in range(loop.LEARN_WRITE_ROUNDS):
            for disk in self.disks:
                self.feed(disk, iops=2.0, bytes_sec=2 * KIB64,
                          latency_ms=5.0, at=self.t)
            self.loop.run_once(self.domain, self.t)
            self.t += 5.0

    def test_reported_once_per_transition_and_nothing_changed(self):
        log = self.useFixture(fixtures.FakeLogger(level=logging.WARNING))
        tiers = self.tiers()
        self.learn()
        self.learn()
        over = self.events('iotguard.domain.overcommitted')
        self.assertEqual(1, len(over))
        payload = over[0]
        self.assertEqual('bucket', payload['domain'])
        self.assertAlmostEqual(8 * 0.0732421875, payload['committed'])
        self.assertAlmostEqual(8 * 0.146484375,
                               payload['committed_learned'])
        self.assertEqual(0.9, payload['max_commit_ratio'])
        self.assertEqual(1.0, payload['confidence'])
        self.assertIs(True, payload['beyond_capacity'])
        self.assertIn('Domain bucket is overcommitted', log.output)
        # report only: every tier kept, no cap
        self.assertEqual(tiers, self.tiers())
        self.assertEqual([None] * 8, [self.cap_of(d) for d in self.disks])
        # a fit that does not identify both parameters judges nothing
        self.fit = dataclasses.replace(self.TRUE, iops_4k=200.0,
                                       bytes_sec=8388608.0,
                                       identified=('bytes_sec',))
        self.learn()
        self.assertEqual([], self.events('iotguard.domain.overcommit_cleared'))
        # a trusted fit under which the floors fit clears it, once
        self.fit = dataclasses.replace(self.fit,
                                       identified=('iops_4k', 'bytes_sec'))
        self.learn()
        self.learn()
        cleared = self.events('iotguard.domain.overcommit_cleared')
        self.assertEqual(1, len(cleared))
        self.assertIs(False, cleared[0]['overcommitted'])
        self.assertEqual(1, len(self.events('iotguard.domain.overcommitted')))

    def test_within_the_learned_capacity_nothing_is_sent(self):
        fakes.add_domain(self.db, 'elsewhere')
        for disk in self.disks[6:]:
            self.db.disk_upsert(disk['instance_uuid'], disk['dev'], 'cn1',
                                'elsewhere', 'p1')
        self.disks = self.disks[:6]      # 0.88 of the bucket
        self.learn()
        self.assertEqual([], self.notifier.sent)
