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

import math

import fixtures
from oslo_db import exception as db_exc

from iotguard.controller import disk_index
from iotguard.controller import manager
from iotguard.controller import samples
from iotguard.tests import base
from iotguard.tests.unit.controller import fakes
from iotguard.wire import batch as batch_mod

T0 = 1_800_000_000.0


def domain_of(manager, instance_uuid, dev):
    found = manager.index.get((instance_uuid, dev))
    return found and found[0]


class ManagerFixture(base.TestCase):
    """A manager owning ``mine`` (not ``theirs``), with samples to send."""

    def setUp(self):
        super().setUp()
        self.db = fakes.real_db(self)
        fakes.add_domain(self.db, 'mine')
        fakes.add_domain(self.db, 'theirs')
        self.mine = fakes.add_disk(self.db, 'mine', 'cn1')
        self.theirs = fakes.add_disk(self.db, 'theirs', 'cn1')
        self.owned = {'mine', 'agent:cn1', 'local:cn1'}
        self.store = samples.SampleStore(5.0, clock=lambda: T0)
        self.manager = manager.ControllerManager(
            self.conf, self.db, self.store, owns=self.owned.__contains__,
            clock=lambda: T0)
        self.manager.index.refresh()

    def batch(self, *rows):
        """The wire form of some rows (:meth:`sample`), as an agent sends."""
        return fakes.wire(*rows)

    def sample(self, disk=None, **kw):
        if disk is not None:
            kw.setdefault('instance_uuid', disk['instance_uuid'])
            kw.setdefault('dev', disk['dev'])
        kw.setdefault('timestamp', T0 - 0.5)
        return fakes.sample(**kw)

    def columns(self, *disks, timestamp=T0 - 0.5, **static):
        """The wire form of a batch of ``disks``: ``(disk, project_id)``."""
        return fakes.wire(*[fakes.sample(
            disk['instance_uuid'], disk['dev'], timestamp, iops=10.0,
            bytes_sec=40960.0, static=static, project_id=project_id)
            for disk, project_id in disks])


class ManagerTest(ManagerFixture):

    def test_keeps_only_owned_domains(self):
        self.manager.report_samples({}, 'cn1', self.batch(
            self.sample(self.mine), self.sample(self.theirs)))
        self.assertIsNotNone(self.store.latest(self.mine['instance_uuid'],
                                               'vda'))
        self.assertIsNone(self.store.latest(self.theirs['instance_uuid'],
                                            'vda'))
        self.assertEqual(1, self.manager.stats['foreign'])
        self.assertEqual(1, self.manager.stats['stored'])

    def test_urgent_disks_of_owned_domains_go_to_on_urgent(self):
        seen = []
        other = fakes.add_disk(self.db, 'mine', 'cn1')
        self.manager.index.refresh()
        wire = self.batch(*[self.sample(d)
                            for d in (self.mine, self.theirs, other)])
        self.manager.report_samples({}, 'cn1', wire)
        self.manager.on_urgent = seen.append
        wire = self.batch(*[self.sample(d, timestamp=T0 - 0.3)
                            for d in (self.mine, self.theirs, other)])
        self.manager.report_samples({}, 'cn1', wire)
        self.assertEqual([], seen)      # none marked, none resumed
        wire = self.batch(*[self.sample(d, timestamp=T0 - 0.2)
                            for d in (self.mine, self.theirs, other)])
        wire['disks']['urgent'] = [0, 1]
        self.manager.report_samples({}, 'cn1', wire)
        # theirs is not kept here: its owner hears of it
        self.assertEqual([{'mine': [(self.mine['instance_uuid'], 'vda')]}],
                         seen)

    def test_disks_whose_samples_resume_go_to_on_urgent(self):
        # The first fresh sample with rates where the store holds none to
        # act on: this controller just started, the broker or the agent
        # is back, the disk restarted (a gap before).
        seen = []
        self.manager.on_urgent = seen.append
        other = fakes.add_disk(self.db, 'mine', 'cn1')
        self.manager.index.refresh()
        mine = (self.mine['instance_uuid'], 'vda')
        self.manager.report_samples({}, 'cn1', self.batch(
            self.sample(self.mine, timestamp=T0 - 20.0),   # stale: refused
            self.sample(self.theirs), self.sample(other, gap='reset')))
        self.assertEqual([], seen)
        self.manager.report_samples({}, 'cn1', self.batch(
            self.sample(self.mine, timestamp=T0 - 0.4),
            self.sample(other, timestamp=T0 - 0.4)))
        self.assertEqual([{'mine': [mine, (other['instance_uuid'], 'vda')]}],
                         seen)
        # fresh before: nothing more
        self.manager.report_samples({}, 'cn1', self.batch(
            self.sample(self.mine, timestamp=T0 - 0.3)))
        self.assertEqual(1, len(seen))
        # stale since (the agent or the broker away 15 s): resumed again
        self.store._clock = self.manager._clock = lambda: T0 + 15.0
        self.manager.report_samples({}, 'cn1', self.batch(
            self.sample(self.mine, timestamp=T0 + 14.5)))
        self.assertEqual({'mine': [mine]}, seen[-1])

    def test_ownership_change_is_followed(self):
        self.owned.add('theirs')
        self.manager.report_samples({}, 'cn1', self.batch(
            self.sample(self.theirs)))
        self.assertIsNotNone(self.store.latest(
            self.theirs['instance_uuid'], 'vda'))

    def test_malformed_batches_and_samples_are_dropped(self):
        for host, batch in (('cn1', None), ('cn1', []), ('cn1', {}),
                            ('cn1', {'disks': 'x'}),
                            ('cn1', {'timestamp': T0, 'disks': [
                                fakes.sample(self.mine)._asdict()]}),
                            ('cn1', self.batch(self.sample(
                                self.mine, read_iops=-3.0))),
                            (None, self.batch()), ('', self.batch()),
                            (42, self.batch())):
            self.manager.report_samples({}, host, batch)
        self.manager.report_samples({}, 'cn1', self.batch(
            self.sample(self.mine, timestamp=T0 + 3600)))
        self.manager.report_samples({}, 'cn1', self.batch(
            self.sample(self.mine)))
        self.assertEqual(1, self.manager.stats['stored'])
        self.assertEqual(10, self.manager.stats['dropped'])
        self.assertEqual(5.0, self.store.latest(self.mine['instance_uuid'],
                                                'vda')['read_iops'])

    def test_duplicate_report_stored_once(self):
        batch = self.batch(self.sample(self.mine))
        self.manager.report_samples({}, 'cn1', batch)
        self.manager.report_samples({}, 'cn1', batch)
        self.assertEqual((1, 1), (self.manager.stats['stored'],
                                  self.manager.stats['dropped']))

    def test_unknown_local_disk_is_registered(self):
        new = self.sample(project_id='proj-x', dev='vdb')
        self.manager.report_samples({}, 'cn1', self.batch(new))
        disk = fakes.disks(self.db)[(new.instance_uuid, 'vdb')]
        self.assertEqual(('local:cn1', 'cn1', 'proj-x'),
                         (disk['domain'], disk['host'], disk['project_id']))
        self.assertEqual('local', self.db.domain_get('local:cn1').kind)
        self.assertIsNone(self.db.domain_get('local:cn1').iops_4k)
        self.assertIsNotNone(self.store.latest(new.instance_uuid, 'vdb'))
        self.assertEqual(1, self.manager.stats['registered'])
        # known now: the next batch does not register it again
        self.manager.report_samples({}, 'cn1', self.batch(
            new._replace(timestamp=T0 - 0.1)))
        self.assertEqual(1, self.manager.stats['registered'])

    def test_unknown_disks_not_registered(self):
        volume = self.sample(volume_id='v-1')
        no_project = self.sample(project_id=None)
        self.manager.report_samples({}, 'cn1', self.batch(volume,
                                                          no_project))
        # another controller owns local:cn2
        self.manager.report_samples({}, 'cn2', self.batch(self.sample()))
        self.flags(register_local_disks=False, group='controller')
        off = manager.ControllerManager(self.conf, self.db, self.store,
                                        owns=self.owned.__contains__)
        off.report_samples({}, 'cn1', self.batch(self.sample()))
        self.assertEqual(2, len(fakes.disks(self.db)))
        self.assertEqual(0, len(self.store))

    def test_registration_failure_is_survived(self):
        def broken(*args, **kw):
            raise RuntimeError('db down')
        self.db.disk_upsert = broken
        self.manager.report_samples({}, 'cn1', self.batch(
            self.sample(), self.sample(self.mine)))
        self.assertEqual(1, self.manager.stats['stored'])

    def test_columns_keep_only_owned_domains(self):
        self.manager.report_samples({}, 'cn1', self.columns(
            (self.mine, 'p1'), (self.theirs, 'p1'), total_iops_sec=900))
        self.assertIsNone(self.store.latest(self.theirs['instance_uuid'],
                                            'vda'))
        got = self.store.latest(self.mine['instance_uuid'], 'vda')
        self.assertEqual((T0 - 0.5, 5.0, 900.0, math.inf, 1.0),
                         (got['timestamp'], got['read_iops'],
                          got['static_iops'], got['static_bytes_sec'],
                          got['rated']))
        self.assertEqual((1, 1, 0), (self.manager.stats['stored'],
                                     self.manager.stats['foreign'],
                                     self.manager.stats['dropped']))

    def test_malformed_columns_dropped_whole_service_lives(self):
        log = self.useFixture(fixtures.FakeLogger())
        good = self.columns((self.mine, 'p1'))
        bad = []
        for name, value in (('read_iops', [math.nan]), ('read_iops', [-1]),
                            ('read_iops', [2e15]), ('dev', ['0bad']),
                            ('dev', []), ('gap', [7]),
                            ('static_iops_sec', [2 ** 63]),
                            ('unknown', [1])):
            spoiled = dict(good, disks=dict(good['disks'], **{name: value}))
            bad.append(spoiled)
        bad.append(dict(good, timestamp=math.inf))
        for spoiled in bad:
            self.manager.report_samples({}, 'cn1', spoiled)
        self.assertEqual((0, len(bad)), (self.manager.stats['stored'],
                                         self.manager.stats['dropped']))
        self.assertEqual(0, len(self.store))
        self.assertIn('sample batch: read_iops: not a finite number',
                      log.output)
        self.manager.report_samples({}, 'cn1', good)
        self.assertEqual(1, self.manager.stats['stored'])

    def test_columns_from_the_future_or_twice_refused(self):
        self.manager.report_samples({}, 'cn1', self.columns(
            (self.mine, 'p1'), timestamp=T0 + 3600))
        good = self.columns((self.mine, 'p1'))
        self.manager.report_samples({}, 'cn1', good)
        self.manager.report_samples({}, 'cn1', good)
        self.assertEqual((1, 2), (self.manager.stats['stored'],
                                  self.manager.stats['dropped']))

    def test_columns_register_an_unknown_local_disk(self):
        new = {'instance_uuid': fakes.sample().instance_uuid,
               'dev': 'vdb'}
        self.manager.report_samples({}, 'cn1', self.columns(
            (new, 'proj-x'), (self.mine, 'p1')))
        disk = fakes.disks(self.db)[(new['instance_uuid'], 'vdb')]
        self.assertEqual(('local:cn1', 'proj-x'),
                         (disk['domain'], disk['project_id']))
        self.assertEqual(2, self.manager.stats['stored'])
        self.assertEqual(1, self.manager.stats['registered'])

    def test_a_local_disk_the_agent_stops_listing_is_dropped(self):
        # the rescue layout: vda and vdb; after unrescue only vda
        root = {'instance_uuid': fakes.sample().instance_uuid,
                'dev': 'vda'}
        rescued = dict(root, dev='vdb')
        self.manager.report_samples({}, 'cn1', self.columns(
            (root, 'p1'), (rescued, 'p1')))
        self.assertIn((root['instance_uuid'], 'vdb'), fakes.disks(self.db))
        # one batch without it: kept; listed again: the count starts over
        self.manager.report_samples({}, 'cn1', self.columns((root, 'p1')))
        self.manager.report_samples({}, 'cn1', self.columns(
            (root, 'p1'), (rescued, 'p1')))
        self.manager.report_samples({}, 'cn1', self.columns((root, 'p1')))
        self.assertIn((root['instance_uuid'], 'vdb'), fakes.disks(self.db))
        self.manager.report_samples({}, 'cn1', self.columns((root, 'p1')))
        self.assertNotIn((root['instance_uuid'], 'vdb'), fakes.disks(self.db))
        uuid = root['instance_uuid']
        self.assertIsNone(domain_of(self.manager, uuid, 'vdb'))
        self.assertEqual('local:cn1', domain_of(self.manager, uuid, 'vda'))
        # a sample naming it again registers it again
        self.manager.report_samples({}, 'cn1', self.columns(
            (root, 'p1'), (rescued, 'p1')))
        self.assertIn((root['instance_uuid'], 'vdb'), fakes.disks(self.db))

    def test_a_disk_reported_from_another_host_is_told_once(self):
        # An evacuated guest's disks, reported by their new host before
        # membership knows they moved.
        told = []
        self.manager.index.on_moved = told.append
        uuid = self.mine['instance_uuid']
        self.manager.report_samples({}, 'cn1', self.columns(
            (self.mine, 'p1')))
        self.assertEqual([], told)
        self.manager.report_samples({}, 'cn2', self.columns(
            (self.mine, 'p1')))
        self.assertEqual([uuid], told)
        # The same listing again, and within MOVE_CHECK_S: not again.
        self.manager.report_samples({}, 'cn2', self.columns(
            (self.mine, 'p1'), timestamp=T0 - 0.2))
        self.assertEqual([uuid], told)

    def test_unlisted_disks_kept_unless_local_owned_and_instance_listed(self):
        self.owned.add('local:cn2')
        uuid = self.mine['instance_uuid']
        local = {'instance_uuid': uuid, 'dev': 'vdb'}
        self.manager.report_samples({}, 'cn1', self.columns(
            (self.mine, 'p1'), (local, 'p1')))
        other = {'instance_uuid': fakes.sample().instance_uuid,
                 'dev': 'vda'}
        for _ in range(2 * disk_index.UNLISTED_BATCHES):
            # the instance not in the batch at all (stopped, rebuilt)
            self.manager.report_samples({}, 'cn1', self.columns(
                (other, 'p1')))
            # the volume's disk ('mine') unlisted is membership's
            self.manager.report_samples({}, 'cn1', self.columns(
                (local, 'p1')))
            # another host's batch says nothing of cn1's disks
            self.manager.report_samples({}, 'cn2', self.columns(
                (self.mine, 'p1')))
        self.assertIn((uuid, 'vdb'), fakes.disks(self.db))
        self.assertIn((uuid, 'vda'), fakes.disks(self.db))
        # local:cn1 owned by another controller: the controller that
        # received the batch alone sees the host's whole listing, and drops
        self.owned.discard('local:cn1')
        for _ in range(disk_index.UNLISTED_BATCHES):
            self.manager.report_samples({}, 'cn1', self.columns(
                (self.mine, 'p1')))
        self.assertNotIn((uuid, 'vdb'), fakes.disks(self.db))

    def report(self, host):
        """What the agents table keeps of the heartbeats' ``info``."""
        [agent] = self.db.agent_list(host)
        return {k: agent[k] for k in ('version', 'interval_s', 'disks',
                                      'caps')}

    def test_heartbeat(self):
        self.manager.agent_heartbeat({}, 'cn1', {'driver': 'LibvirtDriver'})
        self.manager.agent_heartbeat({}, 'cn9', {'driver': 'x'})  # not mine
        self.manager.agent_heartbeat({}, 'cn1', 'garbage')
        self.manager.agent_heartbeat({}, None, {})
        self.assertEqual([('cn1', 'LibvirtDriver')],
                         [(a['host'], a['driver'])
                          for a in self.db.agent_list()])

    def test_heartbeat_report(self):
        self.manager.agent_heartbeat({}, 'cn1', {
            'driver': 'LibvirtDriver', 'version': '1.2.3', 'interval_s': 5,
            'disks': 12, 'caps': 3, 'started_at': 1.0, 'timestamp': 2.0})
        self.assertEqual({'version': '1.2.3', 'interval_s': 5.0,
                          'disks': 12, 'caps': 3}, self.report('cn1'))

    def test_heartbeat_report_drops_malformed_fields(self):
        for bad in ({'version': 7, 'interval_s': float('nan'),
                     'disks': -1, 'caps': True},
                    {'version': None, 'interval_s': float('inf'),
                     'disks': 2 ** 40, 'caps': 1.5},
                    {'interval_s': 0, 'disks': '3'},
                    {'interval_s': True}):
            self.manager.agent_heartbeat({}, 'cn1', dict(bad, driver='x'))
            self.assertEqual('x', self.db.agent_list('cn1')[0]['driver'])
            self.assertEqual({'version': None, 'interval_s': None,
                              'disks': None, 'caps': None},
                             self.report('cn1'), bad)
        self.manager.agent_heartbeat({}, 'cn1', {'version': 'v' * 100})
        self.assertEqual('v' * 64, self.report('cn1')['version'])

    def test_a_heartbeat_tells_the_hosts_clock(self):
        # cn9's agent is another controller's, its batches too: its
        # heartbeats heard here still put the leases sent here on its clock
        clocks = self.store.clocks
        for stamp in (T0 + 30.0, T0 + 30.0, T0 + 30.2):
            self.manager.agent_heartbeat({}, 'cn9', {
                'driver': 'x', 'timestamp': stamp})
        self.assertAlmostEqual(30.2, clocks.lease_offset('cn9'))
        self.assertAlmostEqual(30.2, clocks.offset('cn9'))
        for bad in (float('nan'), float('inf'), True, '1e9', None):
            self.manager.agent_heartbeat({}, 'cn8', {
                'driver': 'x', 'timestamp': bad})
        self.assertIsNone(clocks.offset('cn8'))
        self.assertEqual(0.0, clocks.lease_offset('cn8'))

    def test_heartbeat_db_failure_is_survived(self):
        def broken(*args, **kw):
            raise RuntimeError('db down')
        self.db.agent_heartbeat = broken
        self.manager.agent_heartbeat({}, 'cn1', {'driver': 'x'})

    def test_heartbeat_in_a_database_outage_is_one_line(self):
        log = self.useFixture(fixtures.FakeLogger())

        def broken(*args, **kw):
            raise db_exc.DBConnectionError(Exception(
                'connection refused\n\tIs the server running?'))
        self.db.agent_heartbeat = broken
        self.manager.agent_heartbeat({}, 'cn1', {'driver': 'x'})
        self.assertEqual("agent_heartbeat of 'cn1' failed: database "
                         "unreachable (connection refused)\n", log.output)

    def test_refresh_forgets_moved_disks(self):
        fakes.add_domain(self.db, 'x')     # moved by another process
        self.db.disk_upsert(self.mine['instance_uuid'], 'vda', 'cn1', 'x',
                            'p1')
        self.manager.index.refresh()
        self.assertEqual('x', domain_of(
            self.manager, self.mine['instance_uuid'], 'vda'))

    def test_add_batch_sink_for_other_sources(self):
        # unknown disks are not registered from a source without a host
        self.assertEqual(1, self.manager.add_batch(fakes.batch(
            self.sample(self.mine), self.sample(self.theirs),
            self.sample(project_id='p9'))))
        self.assertEqual(0, self.manager.add_batch(fakes.batch(
            self.sample(self.mine))))       # not newer: refused
        self.assertEqual(2, len(fakes.disks(self.db)))
        self.assertEqual((1, 1, 2), (self.manager.stats['stored'],
                                     self.manager.stats['foreign'],
                                     self.manager.stats['dropped']))


class IndexEventsTest(base.TestCase):
    """The disk index follows what is written through it, reloads when due."""

    def setUp(self):
        super().setUp()
        self.now = T0
        self.db = fakes.real_db(self)
        self.index_reads = fakes.spy(self, self.db, 'disk_index')
        fakes.add_domain(self.db, 'mine')
        self.disk = fakes.add_disk(self.db, 'mine', 'cn1')
        self.flags(register_local_disks=False, group='controller')
        self.store = samples.SampleStore(5.0, clock=lambda: self.now)
        self.manager = manager.ControllerManager(
            self.conf, self.db, self.store, clock=lambda: self.now)

    def report(self, uuid, dev='vda'):
        self.manager.report_samples({}, 'cn1', fakes.wire(fakes.sample(
            uuid, dev=dev, timestamp=self.now - 0.5)))
        return self.store.latest(uuid, dev) is not None

    def test_events_route_without_reload(self):
        self.assertTrue(self.manager.index.due(self.now))
        self.manager.index.refresh()
        self.assertFalse(self.manager.index.due(self.now + 5))
        new = fakes.sample().instance_uuid
        self.manager.index.upsert(new, 'vdb', 'cn2', 'mine', 'local', 'p1')
        self.assertTrue(self.report(new, 'vdb'))
        self.manager.index.delete([(self.disk['instance_uuid'], 'vda')])
        self.assertFalse(self.report(self.disk['instance_uuid']))
        self.assertEqual(1, self.index_reads.call_count)
        self.assertEqual(1, self.manager.stats['stored'])

    def test_unknown_disk_asks_for_a_reload_once(self):
        self.manager.index.refresh()
        # recorded by another process: the index does not know it yet
        other = fakes.add_disk(self.db, 'mine', 'cn1')
        self.assertFalse(self.report(other['instance_uuid']))
        self.now += disk_index.RELOAD_MIN_S - 1
        self.assertFalse(self.manager.index.due(self.now))
        self.now += 1
        self.assertTrue(self.manager.index.due(self.now))
        self.manager.index.refresh()
        self.assertTrue(self.report(other['instance_uuid']))
        # a disk nobody records asks once, not every round
        lost = fakes.sample().instance_uuid
        self.assertFalse(self.report(lost))
        self.now += disk_index.RELOAD_MIN_S
        self.assertTrue(self.manager.index.due(self.now))
        self.manager.index.refresh()
        self.assertFalse(self.report(lost))
        self.now += disk_index.RELOAD_MIN_S
        self.assertFalse(self.manager.index.due(self.now))
        # and a full reload now and then whatever happens
        self.now += disk_index.RELOAD_S
        self.assertTrue(self.manager.index.due(self.now))


class RoutingTest(ManagerFixture):
    """The controller that receives a batch routes its disks."""

    def setUp(self):
        super().setUp()
        self.sent = []      # (server, batches) cast to store_samples
        self.owners = {'theirs': 'ctl-b', 'local:cn2': 'ctl-b'}
        self.manager.owner_of = self.owners.get
        # what ControllerAPI.store_samples casts: the shares' wire form
        self.manager.forward = lambda server, batches: self.sent.append(
            (server, [(host, share.to_wire()) for host, share in batches]))
        self.other_store = samples.SampleStore(5.0, clock=lambda: T0)
        self.other = manager.ControllerManager(
            self.conf, self.db, self.other_store,
            owns={'theirs', 'local:cn2'}.__contains__, clock=lambda: T0)
        self.other.index.refresh()

    def test_each_disk_reaches_its_domain_s_owner(self):
        self.manager.report_samples({}, 'cn1', self.columns(
            (self.mine, 'p1'), (self.theirs, 'p1')))
        self.assertIsNotNone(self.store.latest(self.mine['instance_uuid'],
                                               'vda'))
        self.assertEqual([], self.sent)            # not due yet
        self.manager.flush_forwards(force=True)
        [(server, batches)] = self.sent
        self.assertEqual('ctl-b', server)
        [(host, share)] = batches     # a known disk: no host needed
        self.assertEqual((None, [self.theirs['instance_uuid']]),
                         (host, share['disks']['instance_uuid']))
        self.other.store_samples({}, batches)
        got = self.other_store.latest(self.theirs['instance_uuid'], 'vda')
        self.assertEqual((T0 - 0.5, 5.0), (got['timestamp'], got['read_iops']))
        self.assertIsNone(self.other_store.latest(
            self.mine['instance_uuid'], 'vda'))
        self.assertEqual((1, 1, 0), (self.manager.stats['stored'],
                                     self.manager.stats['forwarded'],
                                     self.manager.stats['foreign']))
        self.assertEqual(1, self.other.stats['stored'])

    def test_shares_wait_for_more_until_due(self):
        self.useFixture(fixtures.MockPatchObject(manager, 'FORWARD_DISKS',
                                                 2))
        self.manager.report_samples({}, 'cn1', self.columns(
            (self.theirs, 'p1'), timestamp=T0 - 1.5))
        self.assertEqual([], self.sent)
        self.manager.report_samples({}, 'cn1', self.columns(
            (self.theirs, 'p1')))
        [(server, batches)] = self.sent       # two disks: due
        [(_host, merged)] = batches           # in one batch, each its time
        self.assertEqual([T0 - 1.5, T0 - 0.5],
                         merged['disks'][batch_mod.STAMPS])
        self.manager.flush_forwards(force=True)
        self.assertEqual(1, len(self.sent))   # nothing left to send
        self.other.store_samples({}, batches)  # in order: both newer
        self.assertEqual(2, self.other.stats['stored'])

    def test_a_malformed_batch_is_refused_whole_before_routing(self):
        # merged with other hosts' shares, it would cost them theirs
        log = self.useFixture(fixtures.FakeLogger())
        wire = self.columns((self.mine, 'p1'), (self.theirs, 'p1'))
        wire['disks']['read_iops'][1] = -1.0  # theirs
        self.manager.report_samples({}, 'cn1', wire)
        self.manager.flush_forwards(force=True)
        self.assertEqual(([], 0, 1), (self.sent, self.manager.stats['stored'],
                                      self.manager.stats['dropped']))
        self.assertIn('Dropped the samples of host', log.output)

    def test_an_unknown_disk_goes_to_its_host_s_local_owner(self):
        # a new image-backed disk of cn2, whose local domain ctl-b owns
        unknown = fakes.sample(timestamp=T0 - 0.5)
        disk = {'instance_uuid': unknown.instance_uuid, 'dev': 'vda'}
        self.manager.report_samples({}, 'cn2', self.columns(
            (disk, 'p1')))
        self.manager.flush_forwards(force=True)
        self.other.store_samples({}, self.sent[0][1])
        self.assertEqual(1, self.other.stats['registered'])
        self.assertEqual('local:cn2', domain_of(
            self.other, disk['instance_uuid'], 'vda'))

    def test_a_share_whose_domain_moved_away_is_dropped(self):
        self.manager.report_samples({}, 'cn1', self.columns(
            (self.theirs, 'p1')))
        self.manager.flush_forwards(force=True)
        self.manager.store_samples({}, self.sent[0][1])  # not its owner
        self.assertEqual(1, self.manager.stats['foreign'])
        self.assertEqual(0, len(self.store))

    def test_unreadable_names_are_refused_whole_here(self):
        wire = self.columns((self.mine, 'p1'), (self.theirs, 'p1'))
        wire['disks']['dev'] = ['vda']
        self.manager.report_samples({}, 'cn1', wire)
        self.manager.flush_forwards(force=True)
        self.assertEqual(([], 1), (self.sent, self.manager.stats['dropped']))

    def test_malformed_store_samples_is_dropped(self):
        for batches in (None, [None], [('cn1',)], [('cn1', None)]):
            self.other.store_samples({}, batches)
        self.assertEqual(0, len(self.other_store))

    def test_a_failed_cast_loses_only_those_samples(self):
        def down(server, batches):
            raise RuntimeError('broker gone')
        self.manager.forward = down
        self.manager.report_samples({}, 'cn1', self.columns(
            (self.mine, 'p1'), (self.theirs, 'p1')))
        self.manager.flush_forwards(force=True)
        self.assertEqual((1, 1, 0), (self.manager.stats['stored'],
                                     self.manager.stats['dropped'],
                                     self.manager.stats['forwarded']))

    def test_without_coordination_nothing_is_routed(self):
        self.manager.forward = None
        self.manager.report_samples({}, 'cn1', self.columns(
            (self.mine, 'p1'), (self.theirs, 'p1')))
        self.assertEqual((1, 1), (self.manager.stats['stored'],
                                  self.manager.stats['foreign']))
        self.assertEqual([], self.sent)


class SkewedHostTest(ManagerFixture):
    """An agent's host 30 s ahead: its samples judged on its clock."""

    def test_samples_of_a_host_ahead_are_kept_from_the_second_batch(self):
        ahead = self.sample(self.mine, timestamp=T0 + 29.5)
        self.manager.report_samples({}, 'cn1', self.batch(ahead))
        self.assertEqual(0, self.manager.stats['stored'])   # future
        later = self.sample(self.mine, timestamp=T0 + 30.0)
        self.manager.report_samples({}, 'cn1', self.batch(later))
        self.assertEqual(1, self.manager.stats['stored'])
        self.assertAlmostEqual(30.0, self.store.clocks.offset('cn1'))
        got = self.store.latest(self.mine['instance_uuid'],
                                self.mine['dev'])
        self.assertEqual(T0, got['timestamp'])   # on this clock
        self.assertFalse(self.store.gather(
            [(self.mine['instance_uuid'], self.mine['dev'])], T0).stale[0])

    def test_the_agents_table_shows_the_offset_learned(self):
        self.manager.agent_heartbeat({}, 'cn1', {'driver': 'x'})
        self.assertIsNone(self.db.agent_list('cn1')[0]['clock_offset_s'])
        for ahead in (29.5, 30.0):
            self.manager.report_samples({}, 'cn1', self.batch(self.sample(
                self.mine, timestamp=T0 + ahead)))
        self.manager.agent_heartbeat({}, 'cn1', {'driver': 'x'})
        self.assertAlmostEqual(
            30.0, self.db.agent_list('cn1')[0]['clock_offset_s'])

    def test_a_source_is_not_corrected(self):
        for stamp in (T0 + 29.5, T0 + 30.0):
            self.manager.report_samples({}, 'cn1', self.batch(
                self.sample(self.theirs, timestamp=stamp)))
        # Ceilometer, Gnocchi: no host, taken as they are
        self.assertEqual(0, self.manager.add_batch(batch_mod.decode(
            self.batch(self.sample(self.mine, timestamp=T0 + 30.0)))))
        self.assertEqual(1, self.manager.add_batch(batch_mod.decode(
            self.batch(self.sample(self.mine, timestamp=T0 - 1.0)))))
