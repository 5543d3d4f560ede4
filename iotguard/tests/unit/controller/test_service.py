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

"""One controller tick wired with fakes (no broker, no database)."""

import time
from unittest import mock

import fixtures
import sqlalchemy as sa

from iotguard.controller import effects
from iotguard.controller import loop
from iotguard.controller import manager
from iotguard.controller import service
from iotguard.tests import base
from iotguard.tests.unit.controller import fakes

T0 = 1_800_000_000.0


class FakePartition:

    def __init__(self, owned):
        self.owned = owned
        self.refreshed = 0

    def owns(self, name):
        return name in self.owned

    def my_domains(self, domains):
        self.refreshed += 1
        return [d for d in domains if d in self.owned]


class TickTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.db = fakes.real_db(self)
        self.index_reads = fakes.spy(self, self.db, 'disk_index')
        gold = fakes.tier('gold', max_iops=100.0)
        for name in ('a', 'b'):
            fakes.add_domain(self.db, name, policy='static')
        self.disk_a = fakes.add_disk(self.db, 'a', 'cn1', gold)
        self.disk_b = fakes.add_disk(self.db, 'b', 'cn2', gold)
        self.svc = service.ControllerService(self.conf, db=self.db)
        self.svc.partition = FakePartition({'a'})
        self.agents = fakes.FakeAgentAPI()
        self.svc.manager = manager.ControllerManager(
            self.conf, self.db, self.svc.store,
            owns=self.svc.partition.owns, clock=lambda: T0)
        self.svc.loop = loop.DomainLoop(
            self.conf, self.db, self.svc.store, self.agents,
            fakes.FakeNotifier(), clock=lambda: T0)

    def report(self, *disks):
        self.svc.manager.report_samples({}, 'cn1', fakes.wire(*[
            fakes.sample(d['instance_uuid'], timestamp=T0 - 1)
            for d in disks]))

    def test_only_owned_domains_are_decided_and_ownership_follows(self):
        self.svc.tick(T0)
        self.assertEqual({'a'}, self.svc.owned)
        # the index is loaded in the tick: now samples can be routed
        self.report(self.disk_a, self.disk_b)
        self.svc.tick(T0)
        self.assertEqual(['a'], [r.domain for r in self.svc.last_results])
        self.assertEqual(1, self.svc.last_results[0].applied)
        self.assertIsNone(fakes.cap_of(self.db, self.disk_b))
        # b moves here (its owner died): decided at the next tick, on the
        # samples heard from then on
        self.svc.partition.owned = {'a', 'b'}
        self.report(self.disk_b)
        self.svc.tick(T0 + 5)
        self.assertEqual({'a', 'b'}, self.svc.owned)
        self.assertEqual(['a', 'b'],
                         [r.domain for r in self.svc.last_results])
        self.assertIsNotNone(fakes.cap_of(self.db, self.disk_b))

    def test_the_index_is_not_reloaded_every_round(self):
        for k in range(5):
            self.svc.tick(T0 + 5 * k)
        self.assertEqual(1, self.index_reads.call_count)

    def test_a_failing_tick_is_logged_not_raised(self):
        def broken():
            raise RuntimeError('db down')
        self.db.domain_list = broken
        self.svc.tick(T0)
        self.assertEqual([], self.svc.last_results)

    def test_a_database_outage_is_one_line_per_round(self):
        # what psycopg2 says through SQLAlchemy while PostgreSQL is down;
        # a bug (any other error) keeps its traceback
        log = self.useFixture(fixtures.FakeLogger())
        outage = sa.exc.OperationalError(
            'SELECT 1', {}, Exception(
                'connection to server at "127.0.0.1", port 5432 failed: '
                'Connection refused\n\tIs the server running on that '
                'host?'))
        for error in (outage, RuntimeError('a bug')):
            def broken():
                raise error
            self.db.domain_list = broken
            self.svc.tick(T0)
        lines = log.output.splitlines()
        self.assertIn('Decision round failed: database unreachable (',
                      lines[0])
        self.assertIn('Connection refused', lines[0])
        self.assertEqual('Decision round failed; retrying next interval',
                         lines[1])
        self.assertIn('Traceback', lines[2])
        self.assertEqual(1, log.output.count('Traceback'))


class SourcesWiringTest(base.TestCase):
    """Ceilometer and Gnocchi feed the manager's ownership-aware sink."""

    def setUp(self):
        super().setUp()
        self.svc = service.ControllerService(self.conf,
                                             db=fakes.real_db(self))
        self.svc.manager = manager.ControllerManager(
            self.conf, self.svc.db, self.svc.store)

    def test_nothing_by_default(self):
        self.svc._start_sources()
        self.assertIsNone(self.svc.listener)
        self.assertIsNone(self.svc.gnocchi)
        self.svc._poll_gnocchi(T0)   # no-op

    def test_ceilometer_listener_gets_the_sink(self):
        self.flags(enabled=True, group='ceilometer')
        self.svc.notification_transport = object()
        with mock.patch('iotguard.controller.sources.ceilometer.'
                        'get_listener') as get_listener:
            self.svc._start_sources()
        get_listener.assert_called_once_with(
            self.conf, self.svc.notification_transport,
            self.svc.manager.add_batch)
        get_listener.return_value.start.assert_called_once_with()

    def test_gnocchi_polled_every_half_granularity_failures_survived(self):
        self.flags(enabled=True, granularity=60, group='gnocchi')
        self.svc._start_sources()
        self.svc.gnocchi = mock.Mock()
        self.svc._poll_gnocchi(T0)
        self.svc._poll_gnocchi(T0 + 29)
        self.svc.gnocchi.poll.side_effect = RuntimeError('gnocchi down')
        self.svc._poll_gnocchi(T0 + 30)
        self.svc.gnocchi.poll.side_effect = None
        self.svc._poll_gnocchi(T0 + 45)
        self.svc._poll_gnocchi(T0 + 60)
        self.assertEqual([mock.call(self.svc.manager.add_batch)] * 3,
                         self.svc.gnocchi.poll.call_args_list)


class RPCServerTest(base.TestCase):
    """The RPC server runs [controller] rpc_thread_pool_size threads."""

    def _start(self):
        svc = service.ControllerService(
            self.conf, transport=mock.Mock(),
            notification_transport=mock.Mock(),
            db=fakes.real_db(self), timer=False)
        with mock.patch.object(service.rpc, 'get_server') as get_server, \
                mock.patch.object(service.notifications, 'Notifier'), \
                mock.patch.object(svc.partition, 'start'):
            svc.start()
        return get_server.return_value.start

    def test_one_thread_by_default(self):
        self._start().assert_called_once_with(override_pool_size=1)

    def test_configured_threads(self):
        self.flags(rpc_thread_pool_size=4, group='controller')
        self._start().assert_called_once_with(override_pool_size=4)


class MembershipWiringTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.db = fakes.real_db(self)
        self.svc = service.ControllerService(self.conf, db=self.db)
        self.svc.partition = FakePartition({'membership'})
        self.svc.manager = manager.ControllerManager(self.conf, self.db,
                                                     self.svc.store)
        self.agents = fakes.FakeAgentAPI()
        self.svc.loop = loop.DomainLoop(
            self.conf, self.db, self.svc.store, self.agents,
            fakes.FakeNotifier())

    def test_off_without_service_credentials(self):
        self.svc._start_membership()
        self.assertIsNone(self.svc.membership)
        self.svc._refresh_membership(T0)   # no-op

    def test_on_with_credentials_listener_and_paced_resync(self):
        self.flags(auth_type='password', group='service_credentials')
        self.flags(resync_interval=600.0, group='membership')
        self.svc.notification_transport = object()
        with mock.patch('iotguard.controller.membership.Membership') as cls, \
                mock.patch('iotguard.controller.membership.get_listener') \
                as get_listener:
            self.svc._start_membership()
        cls.assert_called_once_with(self.conf, self.svc.manager.index,
                                    on_rebuilt=self.svc.rebuilt,
                                    notifier=self.svc.notifier)
        get_listener.assert_called_once_with(
            self.conf, self.svc.notification_transport, cls.return_value)
        get_listener.return_value.start.assert_called_once_with()
        member = self.svc.membership
        self.svc._refresh_membership(T0)
        self.svc._refresh_membership(T0 + 5)
        member.refresh.side_effect = RuntimeError('nova down')
        self.svc._refresh_membership(T0 + 600)
        member.refresh.side_effect = None
        # another controller owns the resyncs now
        self.svc.partition.owned = set()
        self.svc._refresh_membership(T0 + 1200)
        self.assertEqual(2, member.refresh.call_count)

    def test_rebuilt_sends_the_caps_in_force_again(self):
        fakes.add_domain(self.db, 'pool')
        disk = fakes.add_disk(self.db, 'pool', 'cn1')
        other = fakes.add_disk(self.db, 'pool', 'cn1',
                               instance_uuid=disk['instance_uuid'],
                               dev='vdb')
        ids = self.db.decisions_create([{
            'domain': 'pool', 'policy': 'static', 'instance_uuid': d[
                'instance_uuid'], 'dev': d['dev'], 'project_id': 'p1',
            'action': 'cap', 'old_limits': {}, 'new_limits': {},
            'reason': 'why', 'numbers': {}} for d in (disk, other)])
        fakes.cap_set(self.db, disk, {'total_iops_sec': 10},
                      effects.to_datetime(time.time() + 60), ids[0])
        fakes.cap_set(self.db, other, {'total_iops_sec': 20},
                      effects.to_datetime(time.time() - 60), ids[1])  # lapsed
        self.svc.rebuilt(disk['instance_uuid'], 'cn1')
        self.svc.rebuilt(disk['instance_uuid'], 'cn9')   # not there
        [(method, host, caps)] = self.agents.casts
        self.assertEqual(('apply_caps', 'cn1'), (method, host))
        self.assertEqual([('vda', {'total_iops_sec': 10}, str(ids[0]))],
                         [(c['dev'], c['limits'], c['decision_id'])
                          for c in caps])
