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

"""The domains' floors written to a real Placement.

One Placement (:mod:`iotguard.tests.fixtures.placement`, SQLite, no
Keystone) for the class; each test its own hosts and domains (names with
a random suffix) in its own SQLite iotguard database. The compute nodes
are root providers named after their hosts, as nova-compute makes them.
"""

import logging
from unittest import mock
import uuid

import fixtures
import oslo_messaging
from oslo_messaging.notify import _impl_test

from iotguard.controller import notifications
from iotguard.controller import placement
from iotguard.tests import base
from iotguard.tests.fixtures import database
from iotguard.tests.fixtures import placement as placement_fixture

RC = 'CUSTOM_IOTGUARD_FLOOR'
# 200 + 8e6 / 65536 = 322.07 units
GOLD = database.tier_values('gold', min_iops=200.0, min_bytes_sec=8e6)


class PlacementSyncTest(base.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        why = placement_fixture.unavailable()
        if why:
            raise cls.skipException(why)
        cls.placement = cls.class_fixture(placement_fixture.Placement())

    def setUp(self):
        super().setUp()
        # On the module's own logger: what other tests in the same worker
        # did to the root logger's handlers does not matter.
        self.log = self.useFixture(fixtures.FakeLogger(
            name=placement.LOG.logger.name, level=logging.INFO))
        self.db = self.useFixture(database.Database('sqlite',
                                                    conf=self.conf)).db
        self.flags(group='placement', enabled=True)
        suffix = uuid.uuid4().hex[:8]
        self.host_a, self.host_b = 'cmp-a-' + suffix, 'cmp-b-' + suffix
        self.local = 'local:' + self.host_a
        self.ceph = 'ceph-' + suffix
        self.nodes = {h: self.compute_node(h)
                      for h in (self.host_a, self.host_b)}
        self.db.tier_create(GOLD)
        self.db.domain_create(self.local, 'local', iops_4k=10000.0,
                              bytes_sec=1e9)
        self.db.domain_create(self.ceph, 'ceph', iops_4k=50000.0,
                              bytes_sec=2e9, form='max')
        self.bare = 'bare-' + suffix
        self.db.domain_create(self.bare, 'ceph')
        self.disk('vm1', self.host_a, self.local, 'gold')
        self.disk('vm2', self.host_a, self.ceph)
        self.disk('vm3', self.host_b, self.ceph, 'gold')
        self.report = placement.Report(self.conf, self.db,
                                       session=self.placement.session)

    def compute_node(self, host):
        node = str(uuid.uuid4())
        self.placement.call('POST', '/resource_providers',
                            {'uuid': node, 'name': host})
        self.placement.call(
            'PUT', '/resource_providers/%s/inventories' % node,
            {'inventories': {'VCPU': {'total': 8}},
             'resource_provider_generation': 0})
        return node

    def disk(self, vm, host, domain, tier=None):
        vm = '%s-%s' % (vm, host)
        self.db.disk_upsert(vm, 'vda', host, domain, 'p1')
        if tier:
            self.db.disk_tier_set(vm, 'vda', tier, 'flavor', 'p1')

    def sync(self):
        return self.report.sync(self.db.domain_list())

    def get(self, path):
        return self.placement.call('GET', path)

    def provider(self, domain):
        return self.get('/resource_providers/' + self.uuid(domain))

    def uuid(self, domain):
        return str(uuid.uuid5(placement.NAMESPACE, domain))

    def aggregates(self, provider):
        return self.get('/resource_providers/%s/aggregates'
                        % provider)['aggregates']

    def inventory(self, domain):
        return self.get('/resource_providers/%s/inventories'
                        % self.uuid(domain))['inventories'][RC]

    def test_providers_inventories_traits_aggregates(self):
        # nova-compute's own aggregate on host a is kept.
        nova_aggregate = str(uuid.uuid4())
        self.placement.call(
            'PUT', '/resource_providers/%s/aggregates' % self.nodes[
                self.host_a],
            {'aggregates': [nova_aggregate],
             'resource_provider_generation': 1})

        synced = self.sync()

        self.assertEqual([self.ceph, self.local],
                         sorted(p.domain for p in synced))
        local = self.provider(self.local)
        self.assertEqual(self.host_a + ':iotguard', local['name'])
        self.assertEqual(self.nodes[self.host_a],
                         local['parent_provider_uuid'])
        # 0.9 * min(10000 IOPS, 1e9 / 65536 = 15259 units)
        self.assertEqual({'total': 9000, 'reserved': 0, 'min_unit': 1,
                          'max_unit': 9000, 'step_size': 1,
                          'allocation_ratio': 1.0},
                         self.inventory(self.local))
        self.assertEqual([], self.aggregates(local['uuid']))

        shared = self.provider(self.ceph)
        self.assertEqual('iotguard:' + self.ceph, shared['name'])
        self.assertIsNone(shared['parent_provider_uuid'])
        # 0.9 * min(50000 IOPS, 2e9 / 65536 = 30518 units)
        self.assertEqual(27465, self.inventory(self.ceph)['total'])
        self.assertEqual(['MISC_SHARES_VIA_AGGREGATE'], self.get(
            '/resource_providers/%s/traits' % shared['uuid'])['traits'])
        aggregate = str(uuid.uuid5(placement.NAMESPACE,
                                   'aggregate:' + self.ceph))
        self.assertEqual([aggregate], self.aggregates(shared['uuid']))
        self.assertEqual(sorted([nova_aggregate, aggregate]),
                         sorted(self.aggregates(self.nodes[self.host_a])))
        self.assertEqual([aggregate],
                         self.aggregates(self.nodes[self.host_b]))
        # The domain without a profile has no provider, and says so.
        self.assertEqual([], self.get('/resource_providers?name=iotguard:'
                                      + self.bare)['resource_providers'])
        self.assertIn('Domain %s has no floors to offer Placement (no '
                      'capacity profile)' % self.bare, self.log.output)

        # Placement uses nothing yet, iotguard committed a gold floor on
        # each domain: both numbers are logged.
        self.assertIn('Domain %s: Placement counts 0 %s used on provider '
                      '%s, iotguard committed floors of 323'
                      % (self.local, RC, local['uuid']), self.log.output)

        # Once a consumer holds those units, no warning; nothing written.
        self.placement.call('PUT', '/allocations/' + str(uuid.uuid4()), {
            'allocations': {local['uuid']: {'resources': {RC: 323}}},
            'project_id': 'p1', 'user_id': 'u1', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'})
        generations = {n: self.get('/resource_providers/' + n)['generation']
                       for n in list(self.nodes.values())
                       + [local['uuid'], shared['uuid']]}
        start = len(self.log.output)
        session = self.placement.session
        with mock.patch.object(session, 'request',
                               wraps=session.request) as request:
            self.assertEqual(2, len(self.sync()))
        # Only the resource class is PUT again (204 when it exists).
        self.assertEqual(
            [('PUT', '/resource_classes/' + RC)],
            [(c.args[1], c.args[0]) for c in request.call_args_list
             if c.args[1] != 'GET'])
        self.assertNotIn('Domain %s: Placement counts' % self.local,
                         self.log.output[start:])
        self.assertIn('Domain %s: Placement counts 0' % self.ceph,
                      self.log.output[start:])
        self.assertEqual(generations, {
            n: self.get('/resource_providers/' + n)['generation']
            for n in generations})

    def test_hosts_of_the_ephemeral_domain_share_it_before_a_disk(self):
        # Every host's image-backed disks go to the Ceph domain: a new
        # compute node (Nova gives it COMPUTE_NODE) shares it at once.
        self.flags(group='membership', ephemeral_domain=self.ceph)
        node_c = self.compute_node('cmp-c-' + self.host_a)
        self.placement.call(
            'PUT', '/resource_providers/%s/traits' % node_c,
            {'traits': [placement.COMPUTE_NODE],
             'resource_provider_generation': 1})
        self.sync()
        aggregate = str(uuid.uuid5(placement.NAMESPACE,
                                   'aggregate:' + self.ceph))
        self.assertEqual([aggregate], self.aggregates(node_c))
        found = self.get('/allocation_candidates?resources=VCPU:1,%s:323'
                         % RC)['allocation_requests']
        self.assertIn({node_c, self.uuid(self.ceph)},
                      [set(r['allocations']) for r in found])

    def notifier(self):
        """iotguard's Notifier on oslo.messaging's in-memory test driver."""
        transport = oslo_messaging.get_notification_transport(
            self.conf, url='fake://')
        self.addCleanup(transport.cleanup)
        self.flags(group='oslo_messaging_notifications', driver=['test'])
        self.addCleanup(_impl_test.reset)
        _impl_test.reset()
        return notifications.Notifier(self.conf, transport)

    def sent(self):
        """(event type, domain, Placement's usage, committed) sent."""
        return [(m['event_type'], m['payload']['domain'],
                 m['payload']['placement_used'], m['payload']['committed'])
                for _, m, _, _ in _impl_test.NOTIFICATIONS]

    def gauges(self):
        return {f.name: {s.labels['domain']: s.value for s in f.samples}
                for f in self.report.collect()}

    def test_usage_difference_gauged_and_notified(self):
        self.report.notifier = self.notifier()
        self.sync()
        # One sync may see a server Nova placed that membership has not
        # recorded yet: gauged, logged, not notified.
        self.assertEqual([], self.sent())
        self.assertEqual({
            'iotguard_placement_floor_units': {self.local: 9000,
                                               self.ceph: 27465},
            'iotguard_placement_floor_used_units': {self.local: 0,
                                                    self.ceph: 0},
            'iotguard_placement_floor_committed_units': {
                self.local: 323, self.ceph: 323}}, self.gauges())

        self.sync()
        differs = notifications.PLACEMENT_USAGE_DIFFERS
        self.assertEqual(sorted([(differs, self.local, 0, 323),
                                 (differs, self.ceph, 0, 323)]),
                         sorted(self.sent()))
        _, message, priority, _ = _impl_test.NOTIFICATIONS[0]
        self.assertEqual('WARN', priority)
        self.assertEqual('iotguard-controller.' + self.conf.host,
                         message['publisher_id'])

        # Nova allocates the local floor (as a flavor asking for it
        # does): equal again, said once.
        self.placement.call('PUT', '/allocations/' + str(uuid.uuid4()), {
            'allocations': {self.uuid(self.local): {'resources': {RC: 323}}},
            'project_id': 'p1', 'user_id': 'u1', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'})
        _impl_test.reset()
        self.sync()
        self.sync()
        self.assertEqual([(notifications.PLACEMENT_USAGE_MATCHES,
                           self.local, 323, 323)], self.sent())
        self.assertEqual({self.local: 323, self.ceph: 0},
                         self.gauges()['iotguard_placement_floor_used_units'])

    def test_profile_change_updates_the_inventory(self):
        self.sync()
        self.db.domain_update(self.local, {'iops_4k': 2000.0})
        self.db.domain_update(self.ceph, {'iops_4k': 200.0,
                                          'bytes_sec': 1e8})
        self.sync()
        self.assertEqual(1800, self.inventory(self.local)['total'])
        self.assertEqual(1800, self.inventory(self.local)['max_unit'])
        # 0.9 * min(200 IOPS, 1e8 / 65536 = 1526 units)
        self.assertEqual(180, self.inventory(self.ceph)['total'])

    def test_compute_node_missing_then_recreated(self):
        self.db.domain_create('local:gone-' + self.host_a, 'local',
                              iops_4k=100.0, bytes_sec=1e8)
        self.assertEqual(2, len(self.sync()))
        self.assertIn('No compute node provider named gone-' + self.host_a,
                      self.log.output)
        self.assertEqual(404, self.placement.session.get(
            self.placement.endpoint + '/resource_providers/'
            + self.uuid('local:gone-' + self.host_a),
            raise_exc=False).status_code)

        # Nova's compute node tree is deleted (ours first: Placement
        # refuses to delete a parent) and the host comes back.
        self.placement.call('DELETE', '/resource_providers/'
                            + self.uuid(self.local))
        self.placement.call('DELETE', '/resource_providers/'
                            + self.nodes[self.host_a])
        new_node = self.compute_node(self.host_a)
        self.compute_node('gone-' + self.host_a)
        self.assertEqual(3, len(self.sync()))
        self.assertEqual(new_node, self.provider(
            self.local)['parent_provider_uuid'])
        self.assertEqual(9000, self.inventory(self.local)['total'])
        self.assertEqual(90, self.inventory(
            'local:gone-' + self.host_a)['total'])
        # The sharing provider's aggregate is back on the new node.
        self.assertIn(str(uuid.uuid5(placement.NAMESPACE,
                                     'aggregate:' + self.ceph)),
                      self.aggregates(new_node))

    def test_placement_finds_the_floors_a_flavor_would_ask_for(self):
        self.sync()
        local, shared = self.uuid(self.local), self.uuid(self.ceph)
        node_a, node_b = self.nodes[self.host_a], self.nodes[self.host_b]
        ours = {local, shared, node_a, node_b}

        def candidates(units):
            found = self.get('/allocation_candidates?resources=VCPU:1,%s:%d'
                             % (RC, units))['allocation_requests']
            return sorted(
                sorted((rp, rc) for rp, a in r['allocations'].items()
                       for rc in a['resources'])
                for r in found if set(r['allocations']) <= ours)

        def expected(*pairs):
            return sorted(sorted([(node, 'VCPU'), (floor, RC)])
                          for node, floor in pairs)

        # What the scheduler gets for a flavor with VCPU and a floor: host
        # a with its own domain or the shared one, host b the shared one.
        self.assertEqual(expected((node_a, local), (node_a, shared),
                                  (node_b, shared)), candidates(323))
        # Beyond the local domain's 9000 units only the shared one has room.
        self.assertEqual(expected((node_a, shared), (node_b, shared)),
                         candidates(9001))
        self.assertEqual([], candidates(27466))
