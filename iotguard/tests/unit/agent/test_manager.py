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

import json
import os
from unittest import mock

import fixtures

from iotguard.agent import manager
from iotguard.agent.virt import base
from iotguard.tests import base as test_base
from iotguard.tests.unit.agent import fakes
from iotguard.wire import caps

A = (fakes.UUID_A, 'vda')
B = (fakes.UUID_B, 'vdb')
STATIC_A = {'total_iops_sec': 1000, 'total_bytes_sec': 100 << 20}


class Clock:
    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now


def cap(key=A, lease=1100.0, decision='d1', **limits):
    return {'instance_uuid': key[0], 'dev': key[1], 'limits': limits,
            'lease_expires_at': lease, 'decision_id': decision}


class ManagerTestCase(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.store = fakes.MemoryStore()
        self.flags(host='compute1')
        self.driver = fakes.FakeDriver([
            base.Disk(A[0], A[1], static=caps.full(STATIC_A)),
            base.Disk(B[0], B[1], volume_id='v1', static=caps.full({}))])
        self.clock = Clock()
        self.mgr = self.new_manager()

    def new_manager(self):
        m = manager.AgentManager(self.conf, self.driver, clock=self.clock,
                                 store=self.store)
        m.periodic()
        return m

    def live(self, key=A):
        return {k: v for k, v in self.driver.live[key].items() if v}


class PeriodicTest(ManagerTestCase):

    def test_steady_interval_touches_no_disk(self):
        self.mgr.apply_caps({}, [cap(total_iops_sec=200)])
        self.mgr.periodic()
        with mock.patch.object(self.mgr, '_enforce',
                               side_effect=AssertionError('per disk')):
            self.mgr.periodic()
        # ... but a lease still lapses at its time
        self.clock.now = 1100.0
        self.mgr.periodic()
        self.assertEqual(1000, self.live()['total_iops_sec'])
        self.assertIsNone(self.mgr.cap_in_force(A))

    def test_failed_restore_is_retried(self):
        self.mgr.apply_caps({}, [cap(total_iops_sec=200)])
        self.driver.fail_set = True
        self.mgr.release_caps({}, [{'instance_uuid': A[0], 'dev': A[1]}])
        self.assertEqual(200, self.live()['total_iops_sec'])
        self.driver.fail_set = False
        self.mgr.periodic()
        self.assertEqual(1000, self.live()['total_iops_sec'])


class ApplyTest(ManagerTestCase):

    def test_target_version(self):
        self.assertEqual('1.0', self.mgr.target.version)

    def test_cap_applied_below_static(self):
        self.mgr.apply_caps({}, [cap(total_iops_sec=200)])
        self.assertEqual(200, self.live()['total_iops_sec'])
        # The static bytes/s ceiling stays in force.
        self.assertEqual(100 << 20, self.live()['total_bytes_sec'])

    def test_never_above_static(self):
        self.mgr.apply_caps({}, [cap(total_iops_sec=5000)])
        self.assertEqual(1000, self.live()['total_iops_sec'])
        # Nothing to change: the effective set is the static one.
        self.assertEqual([], self.driver.set_calls)

    def test_idempotent(self):
        self.mgr.apply_caps({}, [cap(total_iops_sec=200)])
        self.mgr.apply_caps({}, [cap(total_iops_sec=200, lease=1200.0,
                                     decision='d2')])
        self.mgr.periodic()
        self.assertEqual(1, len(self.driver.set_calls))
        # The renewal moved the lease.
        self.assertEqual(1200.0, self.mgr.cap_in_force(A)[1])

    def test_changed_cap_is_one_call(self):
        self.mgr.apply_caps({}, [cap(total_iops_sec=200)])
        self.mgr.apply_caps({}, [cap(total_iops_sec=300)])
        self.assertEqual(2, len(self.driver.set_calls))
        self.assertEqual(300, self.live()['total_iops_sec'])

    def test_malformed_caps_refused_others_applied(self):
        log = self.useFixture(fixtures.FakeLogger())
        bad_mix = cap(key=B, total_iops_sec=5, read_iops_sec=3)
        bad_key = cap(total_iops=5)
        not_a_dict = 'x'
        good = cap(key=B, write_bytes_sec=1 << 20)
        self.mgr.apply_caps({}, [bad_mix, bad_key, not_a_dict, good])
        self.assertEqual([(B, caps.full({'write_bytes_sec': 1 << 20}))],
                         self.driver.set_calls)
        self.assertIn('Refusing malformed cap', log.output)
        self.assertIn('total_iops_sec cannot be combined', log.output)
        self.assertIn('total_iops', log.output)

    def test_not_a_list_refused(self):
        log = self.useFixture(fixtures.FakeLogger())
        self.mgr.apply_caps({}, {'instance_uuid': A[0]})
        self.assertEqual([], self.driver.set_calls)
        self.assertIn('apply_caps refused: not a list', log.output)

    def test_expired_on_arrival_refused(self):
        log = self.useFixture(fixtures.FakeLogger())
        self.mgr.apply_caps({}, [cap(total_iops_sec=200, lease=999.0),
                                 cap(B, total_iops_sec=200, lease=970.0),
                                 cap(B, total_iops_sec=300)])
        # the two late ones in one line, naming the oldest; the third taken
        self.assertEqual([(B, caps.full({'total_iops_sec': 300}))],
                         self.driver.set_calls)
        lines = [x for x in log.output.splitlines() if 'Refusing' in x]
        self.assertEqual(1, len(lines), log.output)
        self.assertIn("Refusing 2 cap(s)", lines[0])
        self.assertIn('%s/vdb, 30.0 s ago' % B[0], lines[0])
        self.assertIn('NTP', lines[0])

    def test_driver_failure_does_not_raise_and_retries(self):
        self.driver.fail_set = True
        self.mgr.apply_caps({}, [cap(total_iops_sec=200)])
        self.driver.fail_set = False
        self.mgr.periodic()
        self.assertEqual(200, self.live()['total_iops_sec'])

    def test_cap_for_unknown_disk_applied_when_it_shows_up(self):
        c = ('11111111-2222-4333-8444-555555555555', 'vda')
        self.mgr.apply_caps({}, [cap(key=c, total_iops_sec=50)])
        self.assertEqual([], self.driver.set_calls)
        self.driver.add(base.Disk(c[0], c[1], static=caps.full({})))
        self.mgr.periodic()
        self.assertEqual([(c, caps.full({'total_iops_sec': 50}))],
                         self.driver.set_calls)


class ReleaseAndLeaseTest(ManagerTestCase):

    def test_release_restores_static(self):
        self.mgr.apply_caps({}, [cap(total_iops_sec=200)])
        self.mgr.release_caps({}, [{'instance_uuid': A[0], 'dev': 'vda'}])
        self.assertEqual(STATIC_A, self.live())
        self.assertIsNone(self.mgr.cap_in_force(A))

    def test_release_malformed_refused(self):
        log = self.useFixture(fixtures.FakeLogger())
        self.mgr.apply_caps({}, [cap(total_iops_sec=200)])
        self.mgr.release_caps({}, [{'instance_uuid': A[0]}])
        self.assertEqual(200, self.live()['total_iops_sec'])
        self.assertIn('Refusing malformed release', log.output)

    def test_release_not_a_list_refused(self):
        log = self.useFixture(fixtures.FakeLogger())
        self.mgr.apply_caps({}, [cap(total_iops_sec=200)])
        self.mgr.release_caps({}, {'instance_uuid': A[0], 'dev': 'vda'})
        self.assertEqual(200, self.live()['total_iops_sec'])
        self.assertIn('release_caps refused: not a list', log.output)

    def test_lease_expiry_restores_static(self):
        self.mgr.apply_caps({}, [cap(total_iops_sec=200, lease=1100.0)])
        self.clock.now = 1099.0
        self.mgr.periodic()
        self.assertEqual(200, self.live()['total_iops_sec'])
        self.clock.now = 1100.0
        self.mgr.periodic()
        self.assertEqual(STATIC_A, self.live())
        self.assertEqual(2, len(self.driver.set_calls))

    def test_lease_expiry_of_uncapped_static(self):
        self.mgr.apply_caps({}, [cap(key=B, write_iops_sec=10)])
        self.clock.now = 2000.0
        self.mgr.periodic()
        self.assertEqual({}, self.live(B))


class LifecycleTest(ManagerTestCase):

    def test_reapply_after_rebuild(self):
        self.mgr.apply_caps({}, [cap(total_iops_sec=200)])
        self.driver.rebuild(A)     # hard reboot dropped the live throttle
        self.mgr.periodic()        # no event: idempotent, no re-read
        self.assertEqual(1000, self.live()['total_iops_sec'])
        self.mgr.mark_dirty(A[0], base.EVENT_STARTED)
        self.mgr.periodic()
        self.assertEqual(200, self.live()['total_iops_sec'])

    def test_disk_gone_and_back_is_reapplied(self):
        self.mgr.apply_caps({}, [cap(total_iops_sec=200)])
        disk = self.driver.disks.pop(A)
        self.mgr.periodic()
        self.driver.add(disk)      # back with the XML values
        self.mgr.periodic()
        self.assertEqual(200, self.live()['total_iops_sec'])

    def test_event_on_uncapped_disk_is_only_a_read(self):
        self.mgr.mark_dirty(B[0], base.EVENT_STARTED)
        self.mgr.periodic()
        self.assertEqual([], self.driver.set_calls)


class RecoverTest(ManagerTestCase):

    def test_provable_lease_kept_other_restored(self):
        self.mgr.apply_caps({}, [cap(total_iops_sec=200, lease=1500.0),
                                 cap(key=B, write_iops_sec=7, lease=1500.0)])
        self.assertEqual({A, B}, set(self.store.saved))
        # Someone changed B behind the agent's back while it was down.
        self.driver.live[B] = caps.full({'write_iops_sec': 9})
        self.clock.now = 1200.0
        self.driver.set_calls.clear()
        m2 = manager.AgentManager(self.conf, self.driver, clock=self.clock,
                                  store=self.store)
        m2.recover()
        self.assertEqual(200, self.live()['total_iops_sec'])
        self.assertIsNotNone(m2.cap_in_force(A))
        self.assertEqual({}, self.live(B))
        self.assertIsNone(m2.cap_in_force(B))
        self.assertEqual([B], [k for k, _ in self.driver.set_calls])
        # And the kept lease still lapses.
        self.clock.now = 1500.0
        m2.periodic()
        self.assertEqual(STATIC_A, self.live())

    def test_expired_lease_restored_at_recovery(self):
        self.mgr.apply_caps({}, [cap(total_iops_sec=200, lease=1100.0)])
        self.clock.now = 1200.0
        m2 = manager.AgentManager(self.conf, self.driver, clock=self.clock,
                                  store=self.store)
        m2.recover()
        self.assertEqual(STATIC_A, self.live())

    def test_no_state_file_restores_all(self):
        self.mgr.apply_caps({}, [cap(total_iops_sec=200)])
        self.store.saved = {}
        m2 = manager.AgentManager(self.conf, self.driver, clock=self.clock,
                                  store=self.store)
        m2.recover()
        self.assertEqual(STATIC_A, self.live())

    def test_unreadable_disk_at_recovery_is_restored_later(self):
        self.mgr.apply_caps({}, [cap(total_iops_sec=200, lease=1100.0)])
        self.clock.now = 1200.0
        m2 = manager.AgentManager(self.conf, self.driver, clock=self.clock,
                                  store=self.store)
        with mock.patch.object(self.driver, 'get_iotune',
                               side_effect=RuntimeError('busy')):
            m2.recover()
        self.assertEqual(200, self.live()['total_iops_sec'])
        m2.periodic()   # the same listing: only the retry has work
        self.assertEqual(STATIC_A, self.live())

    def test_recover_without_changes_makes_no_call(self):
        m2 = manager.AgentManager(self.conf, self.driver, clock=self.clock,
                                  store=self.store)
        m2.recover()
        self.assertEqual([], self.driver.set_calls)


class StateTest(ManagerTestCase):

    def test_a_failed_save_leaves_no_temporary_file(self):
        # a full disk: the write fails, the state file stays as it was
        path = self.useFixture(fixtures.TempDir()).path
        store = manager.StateFile(path + '/state.json')
        store.save({})
        full = OSError(28, 'No space left on device')
        with mock.patch.object(manager.json, 'dump', side_effect=full):
            for _ in range(3):
                store.save({A: caps.Cap.from_wire(cap(total_iops_sec=200))})
        self.assertEqual(['state.json'], os.listdir(path))
        self.assertEqual({}, store.load())

    def stepped(self, wall, mono, boot='b1'):
        """A cap leased to 1010 saved at 1000 (monotonic 50), read back."""
        path = self.useFixture(fixtures.TempDir()).path + '/state.json'
        self.clock.now = 1000.0
        manager.StateFile(path, self.clock, lambda: 50.0,
                          lambda: 'b1').save(
            {A: caps.Cap.from_wire(cap(total_iops_sec=200, lease=1010.0))})
        self.clock.now = wall
        return manager.StateFile(path, self.clock, lambda: mono,
                                 lambda: boot).load()[A].lease_expires_at

    def test_leases_move_with_a_clock_stepped_between_two_agents(self):
        log = self.useFixture(fixtures.FakeLogger())
        # 4 s later, the wall clock true: as written
        self.assertEqual(1010.0, self.stepped(1004.0, 54.0))
        self.assertNotIn('moved', log.output)
        # the agent restarted with its clock 30 s ahead, 2 s later: the
        # 8 s its lease had left, on that clock
        self.assertEqual(1040.0, self.stepped(1032.0, 52.0))
        self.assertIn('clock moved +30.0 s', log.output)
        # ... or 30 s behind: never longer than its lease
        self.assertEqual(980.0, self.stepped(972.0, 52.0))
        # another boot (the monotonic clock restarted), no boot id: as is
        self.assertEqual(1010.0, self.stepped(1032.0, 52.0, boot='b2'))
        self.assertEqual(1010.0, self.stepped(1032.0, 52.0, boot=None))

    def test_a_cap_kept_across_a_clock_stepped_forward(self):
        path = self.useFixture(fixtures.TempDir()).path + '/state.json'
        mono = [50.0]
        store = manager.StateFile(path, self.clock, lambda: mono[0],
                                  lambda: 'b1')
        mgr = manager.AgentManager(self.conf, self.driver, clock=self.clock,
                                   store=store)
        mgr.periodic()
        mgr.apply_caps({}, [cap(total_iops_sec=200, lease=1010.0)])
        # restarted 2 s later with its clock 30 s ahead
        self.clock.now, mono[0] = 1032.0, 52.0
        m2 = manager.AgentManager(self.conf, self.driver, clock=self.clock,
                                  store=manager.StateFile(
                                      path, self.clock, lambda: mono[0],
                                      lambda: 'b1'))
        m2.recover()
        self.assertEqual(200, self.live()['total_iops_sec'])
        self.assertEqual(1040.0, m2.cap_in_force(A)[1])

    def test_get_state(self):
        self.mgr.apply_caps({}, [cap(total_iops_sec=200)])
        state = self.mgr.get_state({})
        self.assertEqual('compute1', state['host'])
        by_dev = {d['dev']: d for d in state['disks']}
        self.assertEqual({'total_iops_sec': 200}, by_dev['vda']['cap'])
        self.assertEqual(200, by_dev['vda']['applied']['total_iops_sec'])
        self.assertEqual(1100.0, by_dev['vda']['lease_expires_at'])
        self.assertIsNone(by_dev['vdb']['cap'])
        json.dumps(state)

    def test_periodic_lists_disks_once(self):
        with mock.patch.object(self.driver, 'list_disks',
                               wraps=self.driver.list_disks) as ld:
            self.mgr.periodic()
        self.assertEqual(1, ld.call_count)
