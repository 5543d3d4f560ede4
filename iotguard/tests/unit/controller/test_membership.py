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

import types

from openstack import exceptions as sdk_exc
import oslo_messaging

from iotguard.controller import disk_index
from iotguard.controller import membership
from iotguard import exception
from iotguard.tests import base

VM1 = '11111111-1111-4111-8111-111111111111'
VM2 = '22222222-2222-4222-8222-222222222222'
VM3 = '33333333-3333-4333-8333-333333333333'
VOL1 = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa'
VOL2 = 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb'
POOL = 'cinder-1@lvm#pool-a'


def domain_of(membership, instance_uuid, dev):
    """The domain membership placed a disk in, or None."""
    return (membership.index.get((instance_uuid, dev)) or (None,))[0]


def server(uuid, host, volumes=(), root='/dev/vda', project='p1',
           flavor_specs=None, metadata=None):
    return types.SimpleNamespace(
        id=uuid, compute_host=host, root_device_name=root,
        project_id=project,
        flavor={'original_name': 'm1', 'extra_specs': flavor_specs or {}},
        metadata=metadata or {},
        attached_volumes=[{'id': v, 'delete_on_termination': False}
                          for v in volumes])


def volume(uuid, pool, attachments=(), volume_type='standard'):
    return types.SimpleNamespace(
        id=uuid, host=pool, volume_type=volume_type,
        attachments=[{'server_id': s, 'device': d, 'volume_id': uuid}
                     for s, d in attachments])


class FakeConnection:
    """The slice of openstacksdk's Connection membership uses."""

    def __init__(self):
        self.servers = {}
        self.volumes = {}
        self.types = {}
        self.calls = []
        self.compute = types.SimpleNamespace(
            servers=self._servers, get_server=self._get_server)
        self.block_storage = types.SimpleNamespace(
            volumes=self._volumes, get_volume=self._get_volume,
            find_type=self._find_type)

    def _servers(self, **kw):
        self.calls.append(('servers', kw))
        return iter(list(self.servers.values()))

    def _volumes(self, **kw):
        self.calls.append(('volumes', kw))
        return iter(list(self.volumes.values()))

    def _get_server(self, uuid):
        self.calls.append(('get_server', uuid))
        if uuid not in self.servers:
            raise sdk_exc.NotFoundException('no server %s' % uuid)
        return self.servers[uuid]

    def _find_type(self, name_or_id, ignore_missing=True):
        self.calls.append(('find_type', name_or_id))
        specs = self.types.get(name_or_id)
        if isinstance(specs, Exception):
            raise specs
        return None if specs is None else types.SimpleNamespace(
            name=name_or_id, extra_specs=specs)

    def _get_volume(self, uuid):
        self.calls.append(('get_volume', uuid))
        if uuid not in self.volumes:
            raise sdk_exc.NotFoundException('no volume %s' % uuid)
        return self.volumes[uuid]


class FakeNotifier:

    def __init__(self):
        self.sent = []

    def tier_admitted(self, payload):
        self.sent.append(('admitted', payload))

    def tier_refused(self, payload):
        self.sent.append(('refused', payload))


class FakeDb:
    """iotguard.db.api's disk and domain functions, in memory."""

    def __init__(self):
        self.domains = {}
        self.rows = {}
        self.forgotten = []
        self.choices = {}
        self.refusals = {}
        self.refuse = set()
        self.admits = []

    def domain_get(self, name):
        if name not in self.domains:
            raise exception.NotFound(what='domain %s' % name)
        return {'name': name, 'kind': self.domains[name]}

    def domain_create(self, name, kind, **kw):
        if name in self.domains:
            raise exception.Conflict(reason='exists')
        self.domains[name] = kind

    def disk_upsert(self, instance_uuid, dev, host, domain, project_id,
                    volume_id=None):
        self.domain_get(domain)
        self.rows[(instance_uuid, dev)] = (domain, host, project_id,
                                           volume_id)

    def disk_delete(self, instance_uuid, dev):
        if self.rows.pop((instance_uuid, dev), None) is None:
            raise exception.NotFound(what='disk')

    def tier_requests(self, source, instance_uuids):
        found = {(u, d): (t, 'refused')
                 for (u, d, src), t in self.refusals.items()
                 if src == source and u in instance_uuids}
        found.update({(u, d): (t, 'admitted')
                      for (u, d, src), t in self.choices.items()
                      if src == source and u in instance_uuids})
        return found

    def instance_tier_set(self, instance_uuid, tier, admit,
                          project_id=None, source='api', dev='*'):
        if tier in self.refuse:
            raise exception.AdmissionRejected(
                tier=tier, domain='pool', committed=1.0, max_ratio=0.9)
        self.admits.append(admit)
        self.refusals.pop((instance_uuid, dev, source), None)
        self.choices[(instance_uuid, dev, source)] = tier

    def tier_refusal_set(self, instance_uuid, dev, source, tier, reason,
                         project_id):
        self.choices.pop((instance_uuid, dev, source), None)
        news = self.refusals.get((instance_uuid, dev, source)) != tier
        self.refusals[(instance_uuid, dev, source)] = tier
        return news

    def tier_choice_unset(self, instance_uuid, source, dev=None):
        for table in (self.choices, self.refusals):
            for key in [k for k in table if k[0] == instance_uuid
                        and k[2] == source and dev in (None, k[1])]:
                del table[key]

    def tier_choices_forget(self, instance_uuids=None, keep=None,
                            before=None):
        self.forgotten.append((instance_uuids, keep, before))
        return 0

    def disk_index(self):
        return {k: v[:2] for k, v in self.rows.items()}


class TestMembership(base.TestCase):

    def setUp(self):
        super().setUp()
        self.conn = FakeConnection()
        self.db = FakeDb()
        self.rebuilt = []
        self.conn.servers = {
            VM1: server(VM1, 'cmp-1', volumes=[VOL1]),
            VM2: server(VM2, 'cmp-2', volumes=[VOL2], root='/dev/vda'),
            VM3: server(VM3, None),          # shelved offloaded
        }
        self.conn.volumes = {
            VOL1: volume(VOL1, POOL, [(VM1, '/dev/vdb')]),
            # VM2 boots from VOL2: its root disk is a volume disk.
            VOL2: volume(VOL2, POOL, [(VM2, '/dev/vda')]),
        }

    def membership(self, **kw):
        return membership.Membership(
            self.conf, disk_index.DiskIndex(self.db), connection=self.conn,
            on_rebuilt=lambda u, h: self.rebuilt.append((u, h)), **kw)

    def test_refresh_resolves_domains(self):
        m = self.membership()
        result = m.refresh()
        self.assertEqual({'disks': 3, 'written': 3, 'removed': 0}, result)
        self.assertEqual('local:cmp-1', domain_of(m, VM1, 'vda'))
        self.assertEqual(POOL, domain_of(m, VM1, 'vdb'))
        self.assertEqual(POOL, domain_of(m, VM2, 'vda'))
        self.assertIsNone(domain_of(m, VM3, 'vda'))
        self.assertEqual({(VM1, 'vdb'): VOL1, (VM2, 'vda'): VOL2},
                         {k: row[3] for k, row in self.db.rows.items()
                          if row[0] == POOL})
        self.assertEqual({'local:cmp-1': 'local', POOL: 'cinder'},
                         self.db.domains)
        self.assertEqual((POOL, 'cmp-1', 'p1', VOL1),
                         self.db.rows[(VM1, 'vdb')])
        self.assertIn(('servers', {'details': True, 'all_projects': True}),
                      self.conn.calls)

    def test_shared_ephemeral_domain_from_config(self):
        self.flags(group='membership',
                   ephemeral_domains={'cmp-1': 'ceph:vms'})
        m = self.membership()
        m.refresh()
        self.assertEqual('ceph:vms', domain_of(m, VM1, 'vda'))
        self.assertEqual('ceph', self.db.domains['ceph:vms'])

    def test_one_ephemeral_domain_for_every_host(self):
        self.flags(group='membership', ephemeral_domain='ceph',
                   ephemeral_domains={'cmp-9': 'ceph-2'})
        self.conn.servers[VM3].compute_host = 'cmp-9'
        m = self.membership()
        m.refresh()
        self.assertEqual('ceph', domain_of(m, VM1, 'vda'))
        self.assertEqual('ceph-2', domain_of(m, VM3, 'vda'))
        self.assertEqual(POOL, domain_of(m, VM1, 'vdb'))
        self.assertEqual('ceph', self.db.domains['ceph'])

    def test_volume_domains_most_precise_key_wins(self):
        for named, want in (({'lvm': 'x'}, 'x'),
                            ({'lvm': 'x', 'lvm#pool-a': 'y'}, 'y'),
                            ({'lvm#pool-a': 'y', POOL: 'z'}, 'z'),
                            ({'lvm#pool-b': 'y', 'cinder-1': 'w'}, POOL)):
            self.flags(group='membership', volume_domains=named)
            self.assertEqual(want, membership.volume_domain(self.conf,
                                                            POOL)[0], named)
        self.assertEqual(('odd', 'cinder'), membership.volume_domain(
            self.conf, 'odd'))

    def test_ephemeral_disks_and_volumes_in_one_shared_domain(self):
        # Nova's ephemeral disks and Cinder's volumes on one cluster.
        self.flags(group='membership', ephemeral_domain='ceph',
                   volume_domains={'lvm': 'ceph'})
        m = self.membership()
        m.refresh()
        self.assertEqual({(VM1, 'vda'), (VM1, 'vdb'), (VM2, 'vda')},
                         {k for k, place in m.index.copy().items()
                          if place[0] == 'ceph'})
        self.assertEqual({'ceph': 'ceph'}, self.db.domains)

    def test_second_refresh_writes_only_changes(self):
        m = self.membership()
        m.refresh()
        self.assertEqual(0, m.refresh()['written'])
        self.conn.servers[VM1].compute_host = 'cmp-9'   # migrated
        result = m.refresh()
        # vda moves domain; vdb (volume) stays in the pool, new host.
        self.assertEqual(2, result['written'])
        self.assertEqual(('local:cmp-9', 'cmp-9'), self.db.disk_index()[
            (VM1, 'vda')])

    def test_changes_are_written_through_the_index(self):
        m = self.membership()
        m.refresh()
        version = m.index.version
        self.assertEqual({(VM1, 'vda'): ('local:cmp-1', 'cmp-1'),
                          (VM1, 'vdb'): (POOL, 'cmp-1')},
                         m.index.of_instance(VM1))
        m.refresh()    # nothing written
        self.assertEqual(version, m.index.version)
        self.conn.servers[VM1].compute_host = 'cmp-9'
        m.refresh()
        self.assertEqual({(VM1, 'vda'): ('local:cmp-9', 'cmp-9'),
                          (VM1, 'vdb'): (POOL, 'cmp-9')},
                         m.index.of_instance(VM1))
        m.forget_instance(VM1)
        self.assertEqual({}, m.index.of_instance(VM1))
        self.assertEqual([(VM2, 'vda')], list(m.index.copy()))

    def test_refresh_removes_deleted_instances_and_detached_volumes(self):
        m = self.membership()
        m.refresh()
        # Ephemeral disks the controller registered from an agent.
        m.index.upsert(VM2, 'vdc', 'cmp-2', 'local:cmp-2', 'local', 'p1')
        m.index.upsert(VM1, 'vdc', 'cmp-1', 'local:cmp-1', 'local', 'p1')
        del self.conn.servers[VM2]
        self.conn.volumes[VOL1].attachments = []
        self.conn.servers[VM1].attached_volumes = []
        result = m.refresh()
        self.assertEqual(3, result['removed'])
        self.assertEqual({(VM1, 'vda'), (VM1, 'vdc')},
                         set(self.db.disk_index()))
        # Tier choices of the instances Nova no longer lists go too, but
        # only those made before the listing.
        (uuids, keep, before), = self.db.forgotten[-1:]
        self.assertIsNone(uuids)
        self.assertEqual({VM1, VM3}, set(keep))
        self.assertIsNotNone(before)
        self.assertIsNone(domain_of(m, VM1, 'vdb'))

    def test_refresh_instance(self):
        m = self.membership()
        m.refresh()
        self.conn.volumes[VOL1].attachments = []
        self.conn.servers[VM1].attached_volumes = []
        m.index.upsert(VM1, 'vdc', 'cmp-1', 'local:cmp-1', 'local', 'p1')
        disks = m.refresh_instance(VM1)
        self.assertEqual(['vda'], [d.dev for d in disks])
        self.assertNotIn((VM1, 'vdb'), self.db.rows)
        # A registered ephemeral disk is not Nova's to remove.
        self.assertIn((VM1, 'vdc'), self.db.rows)
        self.assertIn((VM2, 'vda'), self.db.rows)

    def test_a_registered_ephemeral_disk_follows_its_instance(self):
        # an ephemeral disk Nova does not list, recorded from the agent
        m = self.membership()
        m.refresh()
        m.index.upsert(VM1, 'vdc', 'cmp-1', 'local:cmp-1', 'local', 'p1')
        self.conn.servers[VM1].compute_host = 'cmp-2'     # migrated
        m.refresh_instance(VM1)
        self.assertEqual(('local:cmp-2', 'cmp-2', 'p1', None),
                         self.db.rows[(VM1, 'vdc')])
        self.assertEqual(('local:cmp-2', 'cmp-2'), m.index.get((VM1, 'vdc')))
        # and with a full resync
        self.conn.servers[VM1].compute_host = 'cmp-3'
        m.refresh()
        self.assertEqual(('local:cmp-3', 'cmp-3'), m.index.get((VM1, 'vdc')))
        # in a shared ephemeral domain, its host
        self.flags(group='membership', ephemeral_domain='ceph')
        m.refresh()
        self.conn.servers[VM1].compute_host = 'cmp-4'
        m.index.upsert(VM1, 'vdd', 'cmp-3', 'ceph', 'ceph', 'p1')
        m.refresh_instance(VM1)
        self.assertEqual(('ceph', 'cmp-4'), m.index.get((VM1, 'vdd')))

    def detached_meanwhile(self):
        """Membership anew (a restart, another owner) after VOL1 left VM1."""
        self.membership().refresh()
        self.conn.volumes[VOL1].attachments = []
        self.conn.servers[VM1].attached_volumes = []
        m = self.membership()
        m.index.refresh()
        return m

    def test_a_volume_detached_meanwhile_goes_at_the_instance_resync(self):
        self.detached_meanwhile().refresh_instance(VM1)
        self.assertEqual({(VM1, 'vda'), (VM2, 'vda')}, set(self.db.rows))

    def test_a_volume_detached_meanwhile_goes_at_the_full_resync(self):
        self.assertEqual(1, self.detached_meanwhile().refresh()['removed'])
        self.assertEqual({(VM1, 'vda'), (VM2, 'vda')}, set(self.db.rows))

    def test_refresh_instance_gone_forgets_it(self):
        m = self.membership()
        m.refresh()
        del self.conn.servers[VM1]
        self.assertEqual([], m.refresh_instance(VM1))
        self.assertIsNone(domain_of(m, VM1, 'vda'))
        self.assertEqual({(VM2, 'vda')}, set(self.db.disk_index()))
        self.assertEqual(([VM1], None, None), self.db.forgotten[-1])

    def test_nova_down_keeps_state(self):
        m = self.membership()
        m.refresh()

        def down(**kw):
            raise sdk_exc.HttpException('503')
        self.conn.compute.servers = down
        self.assertRaises(sdk_exc.HttpException, m.refresh)
        self.assertEqual('local:cmp-1', domain_of(m, VM1, 'vda'))

    def test_cloud_without_cinder_has_ephemeral_disks_only(self):
        def no_cinder(**kw):
            raise sdk_exc.ServiceDisabledException(
                "Service 'block-storage' is disabled")
        self.conn.block_storage.volumes = no_cinder
        m = self.membership()
        result = m.refresh()
        self.assertEqual(2, result['disks'])
        self.assertEqual('local:cmp-1', domain_of(m, VM1, 'vda'))
        self.assertIsNone(domain_of(m, VM1, 'vdb'))

    def test_flavor_tier_recorded_through_admission(self):
        self.conn.servers[VM1] = server(
            VM1, 'cmp-1', flavor_specs={'iotguard:tier': 'gold'})
        # Metadata a tenant wrote in Nova grants nothing.
        self.conn.servers[VM2] = server(
            VM2, 'cmp-2', metadata={'iotguard:tier': 'gold'})
        notifier = FakeNotifier()
        m = self.membership(notifier=notifier)
        m.refresh()
        self.assertEqual({(VM1, '*', 'flavor'): 'gold'}, self.db.choices)
        admit = self.db.admits[0]
        self.assertEqual(self.conf.admission.max_commit_ratio,
                         admit.keywords['max_ratio'])
        self.assertEqual([('admitted', {
            'instance_uuid': VM1, 'dev': '*', 'tier': 'gold',
            'source': 'flavor', 'project_id': 'p1'})], notifier.sent)
        # A second resync changes nothing.
        m.refresh()
        self.assertEqual(1, len(self.db.admits))
        self.assertEqual(1, len(notifier.sent))

    def test_flavor_tier_refused_is_visible_retried_and_dropped(self):
        self.conn.servers[VM1] = server(
            VM1, 'cmp-1', flavor_specs={'iotguard:tier': 'gold'})
        notifier = FakeNotifier()
        m = self.membership(notifier=notifier)
        m.refresh()
        # Resized to a flavor whose tier does not fit: refused (the old
        # flavor's tier goes), logged and notified once.
        self.conn.servers[VM1] = server(
            VM1, 'cmp-1', flavor_specs={'iotguard:tier': 'platinum'})
        self.db.refuse.add('platinum')
        with self.assertLogs('iotguard.controller.membership',
                             'WARNING') as logs:
            m.refresh_instance(VM1)
            m.refresh()
        self.assertEqual(1, len(logs.output))
        self.assertIn('platinum', logs.output[0])
        self.assertEqual({}, self.db.choices)
        self.assertEqual({(VM1, '*', 'flavor'): 'platinum'},
                         self.db.refusals)
        self.assertEqual(['admitted', 'refused'],
                         [kind for kind, _ in notifier.sent])
        self.assertIn('platinum', notifier.sent[1][1]['reason'])
        # Capacity frees: the next resync gives it.
        self.db.refuse.clear()
        m.refresh()
        self.assertEqual({(VM1, '*', 'flavor'): 'platinum'},
                         self.db.choices)
        self.assertEqual({}, self.db.refusals)
        self.assertEqual('admitted', notifier.sent[-1][0])
        # Then to a flavor without a tier: the choice goes.
        self.conn.servers[VM1] = server(VM1, 'cmp-1')
        m.refresh()
        self.assertEqual({}, self.db.choices)

    def test_volume_type_tier_per_volume_disk(self):
        self.conn.types = {'standard': {}, 'iotguard-gold':
                           {'iotguard:tier': 'gold'}}
        self.conn.volumes[VOL1] = volume(VOL1, POOL, [(VM1, '/dev/vdb')],
                                         volume_type='iotguard-gold')
        m = self.membership()
        m.refresh()
        self.assertEqual({(VM1, 'vdb', 'volume_type'): 'gold'},
                         self.db.choices)
        # Each type is read once per resync.
        self.assertEqual(1, sum(1 for c in self.conn.calls
                                if c == ('find_type', 'iotguard-gold')))
        # A type Cinder cannot show now keeps what was recorded.
        self.conn.types['iotguard-gold'] = sdk_exc.HttpException('503')
        with self.assertLogs('iotguard.controller.membership', 'WARNING'):
            m.refresh()
        self.assertEqual({(VM1, 'vdb', 'volume_type'): 'gold'},
                         self.db.choices)
        # Detached: its disk asks nothing any more.
        self.conn.types['iotguard-gold'] = {'iotguard:tier': 'gold'}
        self.conn.volumes[VOL1] = volume(VOL1, POOL, [])
        m.refresh()
        self.assertEqual({}, self.db.choices)

    def test_flavor_tier_read_from_an_sdk_flavor(self):
        flavor = types.SimpleNamespace(extra_specs={'iotguard:tier': 'x'})
        self.assertEqual('x', membership.flavor_tier(
            types.SimpleNamespace(flavor=flavor)))
        self.assertIsNone(membership.flavor_tier(
            types.SimpleNamespace(flavor=None)))

    def test_volume_without_backend_host_is_skipped(self):
        self.conn.volumes[VOL1].host = None
        m = self.membership()
        m.refresh()
        self.assertIsNone(domain_of(m, VM1, 'vdb'))
        self.assertEqual('local:cmp-1', domain_of(m, VM1, 'vda'))


class TestNotifications(base.TestCase):

    def setUp(self):
        super().setUp()
        self.conn = FakeConnection()
        self.conn.servers = {VM1: server(VM1, 'cmp-1', volumes=[VOL1])}
        self.conn.volumes = {VOL1: volume(VOL1, POOL, [(VM1, '/dev/vdb')])}
        self.rebuilt = []
        self.m = membership.Membership(
            self.conf, disk_index.DiskIndex(FakeDb()), connection=self.conn,
            on_rebuilt=lambda u, h: self.rebuilt.append((u, h)))
        self.endpoint = membership.NotificationEndpoint(self.m)

    def notify(self, event_type, payload):
        return self.endpoint.info({}, 'nova-compute:cmp-1', event_type,
                                  payload, {})

    def test_create_resolves_without_rebuild(self):
        self.assertEqual(oslo_messaging.NotificationResult.HANDLED,
                         self.notify('compute.instance.create.end',
                                     {'instance_id': VM1, 'host': 'cmp-1'}))
        self.assertEqual(POOL, domain_of(self.m, VM1, 'vdb'))
        self.assertEqual([], self.rebuilt)

    def test_rebuilding_events_call_back_with_the_new_host(self):
        self.conn.servers[VM1].compute_host = 'cmp-2'
        for event in ('compute.instance.finish_resize.end',
                      'compute.instance.live_migration.post.dest.end',
                      'compute.instance.rebuild.end',
                      'compute.instance.unshelve.end',
                      'compute.instance.evacuate',
                      'compute.instance.volume.attach',
                      'compute.instance.rescue.end',
                      'compute.instance.unrescue.end',
                      'compute.instance.resume.end',
                      'instance.rescue.end'):
            self.rebuilt.clear()
            self.notify(event, {'instance_id': VM1})
            self.assertEqual([(VM1, 'cmp-2')], self.rebuilt, event)
        self.assertEqual('local:cmp-2', domain_of(self.m, VM1, 'vda'))

    def test_versioned_format(self):
        payload = {'nova_object.name': 'InstanceActionPayload',
                   'nova_object.data': {'uuid': VM1, 'host': 'cmp-1'}}
        self.notify('instance.rebuild.end', payload)
        self.assertEqual([(VM1, 'cmp-1')], self.rebuilt)
        self.notify('instance.delete.end', payload)
        self.assertIsNone(domain_of(self.m, VM1, 'vda'))

    def test_delete_forgets(self):
        self.m.refresh()
        del self.conn.servers[VM1]
        self.notify('compute.instance.delete.end', {'instance_id': VM1})
        self.assertEqual({}, self.m.index.copy())
        self.assertNotIn(('get_server', VM1), self.conn.calls)

    def test_cinder_attach_resyncs_the_instance(self):
        self.notify('volume.attach.end', {
            'volume_id': VOL1, 'host': POOL,
            'volume_attachment': [{'instance_uuid': VM1}]})
        self.assertEqual(POOL, domain_of(self.m, VM1, 'vdb'))
        self.assertEqual([], self.rebuilt)

    def test_start_and_unrelated_events_ignored(self):
        for event in ('compute.instance.rebuild.start',
                      'compute.instance.exists', 'image.update'):
            self.notify(event, {'instance_id': VM1})
        self.assertEqual([], self.conn.calls)

    def test_malformed_handled(self):
        for payload in (None, [], {'instance_id': 5}, 'x',
                        {'nova_object.data': 'x'}):
            self.assertEqual(oslo_messaging.NotificationResult.HANDLED,
                             self.notify('compute.instance.rebuild.end',
                                         payload))
        self.assertEqual([], self.conn.calls)

    def test_errors_do_not_escape(self):
        def broken(uuid):
            raise sdk_exc.HttpException('nova down')
        self.conn.compute.get_server = broken
        self.assertEqual(oslo_messaging.NotificationResult.HANDLED,
                         self.notify('compute.instance.rebuild.end',
                                     {'instance_id': VM1}))

    def test_callback_failure_is_logged(self):
        def boom(uuid, host):
            raise RuntimeError('agent unreachable')
        self.m.on_rebuilt = boom
        self.assertEqual(oslo_messaging.NotificationResult.HANDLED,
                         self.notify('compute.instance.rebuild.end',
                                     {'instance_id': VM1}))
        self.assertEqual(POOL, domain_of(self.m, VM1, 'vdb'))
