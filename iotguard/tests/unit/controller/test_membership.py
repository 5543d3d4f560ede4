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

import threading
import types

import fixtures
from openstack import exceptions as sdk_exc
import oslo_messaging

from iotguard.controller import disk_index
from iotguard.controller import membership
from iotguard.tests import base
from iotguard.tests.unit.controller import fakes

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
           flavor_specs=None, metadata=None, disk_gib=20):
    return types.SimpleNamespace(
        id=uuid, compute_host=host, root_device_name=root,
        project_id=project,
        flavor={'original_name': 'm1', 'extra_specs': flavor_specs or {},
                'disk': disk_gib},
        metadata=metadata or {},
        attached_volumes=[{'id': v, 'delete_on_termination': False}
                          for v in volumes])


def volume(uuid, pool, attachments=(), volume_type='standard', size=10,
           migration_status=None, status=None):
    return types.SimpleNamespace(
        id=uuid, host=pool, volume_type=volume_type, size=size,
        status=status or ('in-use' if attachments else 'available'),
        migration_status=migration_status,
        attachments=[{'server_id': s, 'device': d, 'volume_id': uuid}
                     for s, d in attachments])


def cinder_usage(volume_id, pool, attachments=(), size=10,
                 volume_type='standard', status='in-use'):
    """A ``volume.*`` payload as Cinder builds it.

    ``cinder.volume.volume_utils._usage_from_volume``'s fields (no
    ``migration_status``), the attachments as its database rows
    serialize: ``(instance_uuid, mountpoint, attach_status)``.
    """
    return {
        'tenant_id': 'p1', 'host': pool, 'user_id': 'u1',
        'availability_zone': 'nova', 'volume_id': volume_id,
        'volume_type': volume_type, 'display_name': 'db',
        'launched_at': '2026-11-28T10:00:00+00:00',
        'created_at': '2026-11-28T09:59:58+00:00',
        'status': status, 'snapshot_id': None, 'size': size,
        'replication_status': None, 'replication_extended_status': None,
        'replication_driver_data': None, 'metadata': [],
        'volume_attachment': [{
            'id': 'd1f0c0de-0000-4000-8000-%012d' % n,
            'volume_id': volume_id, 'instance_uuid': uuid,
            'attached_host': None, 'mountpoint': mountpoint,
            'attach_status': attach_status, 'attach_mode': 'rw',
            'deleted': False}
            for n, (uuid, mountpoint, attach_status) in enumerate(
                attachments)]}


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

    def disk_size_refused(self, payload):
        self.sent.append(('size_refused', payload))


class TestMembership(base.TestCase):

    def setUp(self):
        super().setUp()
        self.conn = FakeConnection()
        self.db = fakes.real_db(self)
        self.db.tier_create(fakes.tier('gold'))
        self.forgets = fakes.spy(self, self.db, 'tier_choices_forget')
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

    def rows(self):
        """``{(instance_uuid, dev): (domain, host, project, volume)}``."""
        return {key: (d['domain'], d['host'], d['project_id'],
                      d['volume_id'])
                for key, d in fakes.disks(self.db).items()}

    def domains(self):
        return {d.name: d.kind for d in self.db.domain_list()}

    def asked(self, state):
        """The tiers flavors and volume types asked, by state.

        ``state``: ``admitted`` or ``refused``; ``{(instance_uuid, dev,
        source): tier}``.
        """
        return {(uuid, dev, source): tier
                for source in ('flavor', 'volume_type')
                for (uuid, dev), (tier, got) in self.db.tier_requests(
                    source, [VM1, VM2, VM3]).items() if got == state}

    def choose(self, instance_uuid):
        """A tenant's choice of tier gold for the instance's disks."""
        self.db.instance_tier_set(instance_uuid, 'gold',
                                  lambda *args: {})

    def chosen(self):
        """The instances with a tenant's choice recorded."""
        return {uuid for uuid, _dev in self.db.tier_requests(
            'api', [VM1, VM2, VM3])}

    def test_refresh_resolves_domains(self):
        m = self.membership()
        result = m.refresh()
        self.assertEqual({'disks': 3, 'written': 3, 'removed': 0}, result)
        self.assertEqual('local:cmp-1', domain_of(m, VM1, 'vda'))
        self.assertEqual(POOL, domain_of(m, VM1, 'vdb'))
        self.assertEqual(POOL, domain_of(m, VM2, 'vda'))
        self.assertIsNone(domain_of(m, VM3, 'vda'))
        self.assertEqual({(VM1, 'vdb'): VOL1, (VM2, 'vda'): VOL2},
                         {k: row[3] for k, row in self.rows().items()
                          if row[0] == POOL})
        self.assertEqual({'local:cmp-1': 'local', POOL: 'cinder'},
                         self.domains())
        self.assertEqual((POOL, 'cmp-1', 'p1', VOL1),
                         self.rows()[(VM1, 'vdb')])
        self.assertIn(('servers', {'details': True, 'all_projects': True}),
                      self.conn.calls)

    def test_shared_ephemeral_domain_from_config(self):
        self.flags(group='membership',
                   ephemeral_domains={'cmp-1': 'ceph:vms'})
        m = self.membership()
        m.refresh()
        self.assertEqual('ceph:vms', domain_of(m, VM1, 'vda'))
        self.assertEqual('ceph', self.domains()['ceph:vms'])

    def test_one_ephemeral_domain_for_every_host(self):
        self.flags(group='membership', ephemeral_domain='ceph',
                   ephemeral_domains={'cmp-9': 'ceph-2'})
        self.conn.servers[VM3].compute_host = 'cmp-9'
        m = self.membership()
        m.refresh()
        self.assertEqual('ceph', domain_of(m, VM1, 'vda'))
        self.assertEqual('ceph-2', domain_of(m, VM3, 'vda'))
        self.assertEqual(POOL, domain_of(m, VM1, 'vdb'))
        self.assertEqual('ceph', self.domains()['ceph'])

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
        self.assertEqual({'ceph': 'ceph'}, self.domains())

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
        self.choose(VM1)
        self.choose(VM2)
        del self.conn.servers[VM2]
        self.conn.volumes[VOL1].attachments = []
        self.conn.servers[VM1].attached_volumes = []
        result = m.refresh()
        self.assertEqual(3, result['removed'])
        self.assertEqual({(VM1, 'vda'), (VM1, 'vdc')},
                         set(self.db.disk_index()))
        # Tier choices of the instances Nova no longer lists go too, but
        # only those made before the listing.
        self.assertEqual({VM1}, self.chosen())
        which = self.forgets.call_args.kwargs
        self.assertNotIn('instance_uuids', which)
        self.assertEqual({VM1, VM3}, set(which['keep']))
        self.assertIsNotNone(which['before'])
        self.assertIsNone(domain_of(m, VM1, 'vdb'))

    def test_a_choice_made_while_nova_lists_stays(self):
        m = self.membership()
        m.refresh()

        def servers(**kw):
            # VM2's choice is recorded after the listing began, which
            # misses VM2.
            self.choose(VM2)
            return iter([self.conn.servers[VM1]])
        self.conn.compute.servers = servers
        m.refresh()
        self.assertEqual({VM2}, self.chosen())

    def test_refresh_instance(self):
        m = self.membership()
        m.refresh()
        self.conn.volumes[VOL1].attachments = []
        self.conn.servers[VM1].attached_volumes = []
        m.index.upsert(VM1, 'vdc', 'cmp-1', 'local:cmp-1', 'local', 'p1')
        disks = m.refresh_instance(VM1)
        self.assertEqual(['vda'], [d.dev for d in disks])
        self.assertNotIn((VM1, 'vdb'), self.db.disk_index())
        # A registered ephemeral disk is not Nova's to remove.
        self.assertIn((VM1, 'vdc'), self.db.disk_index())
        self.assertIn((VM2, 'vda'), self.db.disk_index())

    def test_a_registered_ephemeral_disk_follows_its_instance(self):
        # an ephemeral disk Nova does not list, recorded from the agent
        m = self.membership()
        m.refresh()
        m.index.upsert(VM1, 'vdc', 'cmp-1', 'local:cmp-1', 'local', 'p1')
        self.conn.servers[VM1].compute_host = 'cmp-2'     # migrated
        m.refresh_instance(VM1)
        self.assertEqual(('local:cmp-2', 'cmp-2', 'p1', None),
                         self.rows()[(VM1, 'vdc')])
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
        self.assertEqual({(VM1, 'vda'), (VM2, 'vda')},
                         set(self.db.disk_index()))

    def test_a_volume_detached_meanwhile_goes_at_the_full_resync(self):
        self.assertEqual(1, self.detached_meanwhile().refresh()['removed'])
        self.assertEqual({(VM1, 'vda'), (VM2, 'vda')},
                         set(self.db.disk_index()))

    def test_refresh_instance_gone_forgets_it(self):
        m = self.membership()
        m.refresh()
        self.choose(VM1)
        self.choose(VM2)
        del self.conn.servers[VM1]
        self.assertEqual([], m.refresh_instance(VM1))
        self.assertEqual({VM2}, self.chosen())
        self.assertIsNone(domain_of(m, VM1, 'vda'))
        self.assertEqual({(VM2, 'vda')}, set(self.db.disk_index()))
        self.forgets.assert_called_with(instance_uuids=[VM1])

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
        sets = fakes.spy(self, self.db, 'instance_tier_set')
        m.refresh()
        self.assertEqual({(VM1, '*', 'flavor'): 'gold'},
                         self.asked('admitted'))
        admit = sets.call_args.args[2]
        self.assertEqual(self.conf.admission.max_commit_ratio,
                         admit.keywords['max_ratio'])
        self.assertEqual([('admitted', {
            'instance_uuid': VM1, 'dev': '*', 'tier': 'gold',
            'source': 'flavor', 'project_id': 'p1'})], notifier.sent)
        # A second resync changes nothing.
        m.refresh()
        self.assertEqual(1, sets.call_count)
        self.assertEqual(1, len(notifier.sent))

    def test_flavor_tier_refused_is_visible_retried_and_dropped(self):
        self.conn.servers[VM1] = server(
            VM1, 'cmp-1', flavor_specs={'iotguard:tier': 'gold'})
        # A floor of 1000 IOPS does not fit in 300 (4 KiB).
        fakes.add_domain(self.db, 'local:cmp-1', iops_4k=300.0)
        self.db.tier_create(fakes.tier('platinum', min_iops=1000.0))
        notifier = FakeNotifier()
        m = self.membership(notifier=notifier)
        m.refresh()
        # Resized to a flavor whose tier does not fit: refused (the old
        # flavor's tier goes), logged and notified once.
        self.conn.servers[VM1] = server(
            VM1, 'cmp-1', flavor_specs={'iotguard:tier': 'platinum'})
        with self.assertLogs('iotguard.controller.membership',
                             'WARNING') as logs:
            m.refresh_instance(VM1)
            m.refresh()
        self.assertEqual(1, len(logs.output))
        self.assertIn('platinum', logs.output[0])
        self.assertEqual({}, self.asked('admitted'))
        self.assertEqual({(VM1, '*', 'flavor'): 'platinum'},
                         self.asked('refused'))
        self.assertEqual(['admitted', 'refused'],
                         [kind for kind, _ in notifier.sent])
        self.assertIn('platinum', notifier.sent[1][1]['reason'])
        # Room made (the domain recalibrated): the next resync gives it.
        self.db.domain_update('local:cmp-1', {'iops_4k': 30000.0,
                                              'bytes_sec': 4e8})
        m.refresh()
        self.assertEqual({(VM1, '*', 'flavor'): 'platinum'},
                         self.asked('admitted'))
        self.assertEqual({}, self.asked('refused'))
        self.assertEqual('admitted', notifier.sent[-1][0])
        # Then to a flavor without a tier: the choice goes.
        self.conn.servers[VM1] = server(VM1, 'cmp-1')
        m.refresh()
        self.assertEqual({}, self.asked('admitted'))

    def test_a_floor_moved_where_it_does_not_fit_is_refused(self):
        """A move no scheduler checked (forced, outside Nova): flagged."""
        self.conn.servers[VM1] = server(
            VM1, 'cmp-1', flavor_specs={'iotguard:tier': 'platinum'})
        self.db.tier_create(fakes.tier('platinum', min_iops=1000.0))
        for host in ('cmp-1', 'cmp-3'):
            fakes.add_domain(self.db, 'local:' + host, iops_4k=30000.0,
                             bytes_sec=4e8)
        # A floor of 1000 IOPS does not fit in 300 (4 KiB).
        fakes.add_domain(self.db, 'local:cmp-2', iops_4k=300.0)
        notifier = FakeNotifier()
        m = self.membership(notifier=notifier)
        m.refresh()
        self.conn.servers[VM1].compute_host = 'cmp-3'    # room there
        m.refresh_instance(VM1)
        self.assertEqual({(VM1, '*', 'flavor'): 'platinum'},
                         self.asked('admitted'))
        self.conn.servers[VM1].compute_host = 'cmp-2'
        with self.assertLogs('iotguard.controller.membership',
                             'WARNING') as logs:
            m.refresh_instance(VM1)
            m.refresh()
        self.assertEqual(1, len(logs.output), logs.output)
        self.assertIn('moved from domain local:cmp-3 to local:cmp-2',
                      logs.output[0])
        self.assertEqual({(VM1, '*', 'flavor'): 'platinum'},
                         self.asked('refused'))
        root, = [d for d in self.db.disk_list(instance_uuid=VM1)
                 if d['dev'] == 'vda']
        self.assertEqual(('local:cmp-2', None, 'platinum'), (
            root['domain'], root['tier'], root['tier_refused']['tier']))
        self.assertEqual(['admitted', 'refused'],
                         [kind for kind, _ in notifier.sent])
        self.assertEqual(('local:cmp-3', 'local:cmp-2', 'flavor'), tuple(
            notifier.sent[1][1][k] for k in ('moved_from', 'moved_to',
                                             'source')))
        # Back where it fits: the next resync gives it again.
        self.conn.servers[VM1].compute_host = 'cmp-1'
        m.refresh()
        self.assertEqual({(VM1, '*', 'flavor'): 'platinum'},
                         self.asked('admitted'))
        self.assertEqual('admitted', notifier.sent[-1][0])

    def floor(self, uuid, dev):
        """The disk's floor (IOPS) and size as the database prices them."""
        disk, = [d for d in self.db.disk_list(instance_uuid=uuid)
                 if d['dev'] == dev]
        return (disk['tier'] and disk['tier'].min_iops, disk['size_gib'],
                disk['size_refused'])

    def test_an_extended_volume_is_admitted_again_at_its_size(self):
        # 10 IOPS per GiB on a pool of 1000 IOPS (4 KiB), 0.9 of it
        # admissible.
        fakes.add_domain(self.db, POOL, iops_4k=1000.0, bytes_sec=4e8,
                         kind='cinder')
        self.db.tier_create(fakes.tier('per-gib', min_iops=20.0,
                                       min_iops_per_gb=10.0))
        self.conn.types = {'standard': {}, 'iotguard-per-gib':
                           {'iotguard:tier': 'per-gib'}}
        self.conn.volumes[VOL1] = volume(VOL1, POOL, [(VM1, '/dev/vdb')],
                                         volume_type='iotguard-per-gib')
        notifier = FakeNotifier()
        m = self.membership(notifier=notifier)
        m.refresh()
        self.assertEqual((100.0, 10, None), self.floor(VM1, 'vdb'))
        # The root disk has its flavor's size (no tier: no floor).
        self.assertEqual(20, self.floor(VM1, 'vda')[1])
        # Extended to 60 GiB (Cinder's volume.resize.end): 600 IOPS fit.
        self.conn.volumes[VOL1] = volume(VOL1, POOL, [(VM1, '/dev/vdb')],
                                         volume_type='iotguard-per-gib',
                                         size=60)
        endpoint = membership.NotificationEndpoint(m)
        endpoint.info({}, 'volume.cinder-1', 'volume.resize.end',
                      {'volume_id': VOL1, 'size': 60, 'volume_attachment': [
                          {'instance_uuid': VM1, 'volume_id': VOL1}]}, {})
        self.assertEqual((600.0, 60, None), self.floor(VM1, 'vdb'))
        # To 100 GiB: 1000 IOPS would be all of the pool. Refused: the
        # disk keeps its 60 GiB floor, says why, notified once.
        self.conn.volumes[VOL1] = volume(VOL1, POOL, [(VM1, '/dev/vdb')],
                                         volume_type='iotguard-per-gib',
                                         size=100)
        with self.assertLogs('iotguard.controller.membership',
                             'WARNING') as logs:
            m.refresh_instance(VM1)
            m.refresh()
        self.assertEqual(1, len(logs.output))
        floor, size, refused = self.floor(VM1, 'vdb')
        self.assertEqual((600.0, 60), (floor, size))
        self.assertEqual(100, refused['size_gib'])
        self.assertIn('per-gib', refused['reason'])
        self.assertEqual([('size_refused', {
            'instance_uuid': VM1, 'dev': 'vdb', 'tier': 'per-gib',
            'size_gib': 100, 'admitted_gib': 60, 'project_id': 'p1',
            'reason': refused['reason']})],
            [sent for sent in notifier.sent if sent[0] == 'size_refused'])
        # Room made: the next resync admits the size.
        self.db.domain_update(POOL, {'iops_4k': 3000.0})
        m.refresh()
        self.assertEqual((1000.0, 100, None), self.floor(VM1, 'vdb'))

    def test_volume_type_tier_per_volume_disk(self):
        self.conn.types = {'standard': {}, 'iotguard-gold':
                           {'iotguard:tier': 'gold'}}
        self.conn.volumes[VOL1] = volume(VOL1, POOL, [(VM1, '/dev/vdb')],
                                         volume_type='iotguard-gold')
        m = self.membership()
        m.refresh()
        self.assertEqual({(VM1, 'vdb', 'volume_type'): 'gold'},
                         self.asked('admitted'))
        # Each type is read once per resync.
        self.assertEqual(1, sum(1 for c in self.conn.calls
                                if c == ('find_type', 'iotguard-gold')))
        # A type Cinder cannot show now keeps what was recorded.
        self.conn.types['iotguard-gold'] = sdk_exc.HttpException('503')
        with self.assertLogs('iotguard.controller.membership', 'WARNING'):
            m.refresh()
        self.assertEqual({(VM1, 'vdb', 'volume_type'): 'gold'},
                         self.asked('admitted'))
        # Detached: its disk asks nothing any more.
        self.conn.types['iotguard-gold'] = {'iotguard:tier': 'gold'}
        self.conn.volumes[VOL1] = volume(VOL1, POOL, [])
        m.refresh()
        self.assertEqual({}, self.asked('admitted'))

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
            self.conf, disk_index.DiskIndex(fakes.real_db(self)),
            connection=self.conn,
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


COPY = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'
POOL2 = 'cinder-1@lvm2#pool-b'


class TestMigrations(base.TestCase):
    """A volume Cinder migrates: followed until it ends, then re-placed.

    The events and payloads of an attached volume's migration as Cinder
    29 and Nova send them (``cinder migrate``: the copy created with
    ``migration_status`` ``target:<source>``, Nova's swap attaching it
    (``attach.start``, ``attach.end``) and detaching the source
    (``detach.end``, no attachment left in the payload), then
    ``migrate_volume_completion`` swapping the records, unannounced).
    """

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MockPatchObject(
            membership, 'MIGRATION_POLL_S', 0.001))
        self.conn = FakeConnection()
        self.conn.servers = {VM1: server(VM1, 'cmp-1', volumes=[VOL1])}
        self.conn.volumes = {VOL1: volume(VOL1, POOL, [(VM1, '/dev/vdb')])}
        self.db = fakes.real_db(self)
        self.m = membership.Membership(
            self.conf, disk_index.DiskIndex(self.db), connection=self.conn)
        self.addCleanup(self.m.stop)
        self.endpoint = membership.NotificationEndpoint(self.m)
        self.m.refresh()
        self.reads = []
        self.test_thread = threading.get_ident()
        #: a follower's reads wait for it
        self.gate = threading.Event()
        self.gate.set()

    def notify(self, event_type, payload):
        self.endpoint.info({}, 'volume.cinder-1@lvm', event_type, payload,
                           {})

    def cinder_shows(self, *states):
        """VOL1 as Cinder shows it at each read from now on, the last kept.

        ``(pool, migration_status, attached)``.
        """
        states = list(states)
        real = self.conn.block_storage.get_volume

        def get_volume(uuid):
            if threading.get_ident() != self.test_thread:
                self.gate.wait(10)
            if uuid == VOL1:
                pool, status, attached = (states.pop(0) if len(states) > 1
                                          else states[0])
                self.reads.append(status)
                self.conn.volumes[VOL1] = volume(
                    VOL1, pool, [(VM1, '/dev/vdb')] if attached else [],
                    self.conn.volumes[VOL1].volume_type,
                    migration_status=status, status='in-use')
            return real(uuid)
        self.conn.block_storage.get_volume = get_volume

    def wait_followed(self):
        for thread in list(self.m.following.values()):
            thread.join(10)
        self.assertEqual({}, self.m.following)

    def test_an_attached_volume_migration_is_followed(self):
        # A floor from the volume's type, admitted in POOL; POOL2 has no
        # capacity profile: the move is admitted again there, as any move.
        self.db.domain_update(POOL, {'iops_4k': 1000.0, 'bytes_sec': 4e8})
        self.conn.types = {'iotguard-floor': {'iotguard:tier': 'floor'}}
        self.db.tier_create(fakes.tier('floor', min_iops=100.0))
        self.conn.volumes[VOL1].volume_type = 'iotguard-floor'
        notifier = FakeNotifier()
        self.m.notifier = notifier
        self.m.refresh()
        self.assertEqual(('floor', 'admitted'), self.db.tier_requests(
            'volume_type', [VM1])[(VM1, 'vdb')])
        self.conn.volumes[COPY] = volume(
            COPY, POOL2, migration_status='target:' + VOL1,
            status='reserved')
        self.cinder_shows((POOL, 'migrating', True),
                          # Nova detached the source.
                          (POOL, 'completing', False),
                          # Records swapped, attachment not yet moved.
                          (POOL2, 'success', False),
                          (POOL2, 'success', True))
        self.gate.clear()
        with self.assertLogs('iotguard.controller.membership',
                             'INFO') as logs:
            # Nova attaches the copy (Cinder's attachment_update)...
            self.notify('volume.attach.start', cinder_usage(
                COPY, POOL2, [(VM1, None, 'reserved')], status='reserved'))
            self.assertEqual([VOL1], list(self.m.following))
            # ... and detaches the source: one follower still.
            self.notify('volume.detach.end', cinder_usage(
                VOL1, POOL, [], status='available'))
            self.assertEqual([VOL1], list(self.m.following))
            # The copy's attach.end names the instance: re-read while the
            # source shows no attachment, its disk and tier are kept.
            self.notify('volume.attach.end', cinder_usage(
                COPY, POOL2, [(VM1, '/dev/vdb', 'attached')]))
            self.assertEqual(POOL, domain_of(self.m, VM1, 'vdb'))
            self.assertEqual(('floor', 'admitted'), self.db.tier_requests(
                'volume_type', [VM1])[(VM1, 'vdb')])
            self.gate.set()
            self.wait_followed()
        self.assertEqual(['migrating', 'completing', 'success', 'success',
                          'success'], self.reads)
        self.assertEqual(POOL2, domain_of(self.m, VM1, 'vdb'))
        followed = [line for line in logs.output if 'followed:' in line]
        self.assertEqual(1, len(followed), logs.output)
        self.assertIn('Volume %s migration followed: domain %s -> %s '
                      '(disk vdb of instance %s; Cinder: success)'
                      % (VOL1, POOL, POOL2, VM1), followed[0])
        self.assertEqual(1, sum('is migrating' in line
                                for line in logs.output))
        # Admission ran in the new domain: the floor is refused there.
        self.assertEqual(('floor', 'refused'), self.db.tier_requests(
            'volume_type', [VM1])[(VM1, 'vdb')])
        self.assertEqual((POOL, POOL2), tuple(
            notifier.sent[-1][1][k] for k in ('moved_from', 'moved_to')))

    def test_a_retype_that_migrates_is_followed(self):
        self.cinder_shows((POOL, 'starting', True), (POOL, 'migrating', True),
                          (POOL2, 'success', True))
        self.notify('volume.retype', cinder_usage(
            VOL1, POOL, [(VM1, '/dev/vdb', 'attached')]))
        self.wait_followed()
        self.assertEqual(POOL2, domain_of(self.m, VM1, 'vdb'))

    def test_a_migration_that_fails_leaves_the_disk(self):
        self.cinder_shows((POOL, 'migrating', True), (POOL, 'error', True))
        with self.assertLogs('iotguard.controller.membership',
                             'INFO') as logs:
            self.notify('volume.detach.end', cinder_usage(VOL1, POOL))
            self.wait_followed()
        self.assertEqual(POOL, domain_of(self.m, VM1, 'vdb'))
        self.assertIn('domain %s -> %s (disk vdb of instance %s; Cinder: '
                      'error)' % (POOL, POOL, VM1), logs.output[-1])

    def test_nothing_followed_without_a_migration_or_a_disk(self):
        # A detach, an attach, a retype without migration; a copy whose
        # source no disk of iotguard's is on; a volume already deleted.
        self.notify('volume.detach.end', cinder_usage(VOL1, POOL))
        self.notify('volume.retype', cinder_usage(VOL1, POOL))
        self.conn.volumes[VOL2] = volume(VOL2, POOL)
        self.notify('volume.attach.start', cinder_usage(VOL2, POOL))
        self.conn.volumes[COPY] = volume(COPY, POOL2,
                                         migration_status='target:' + VOL2)
        self.notify('volume.attach.start', cinder_usage(COPY, POOL2))
        self.notify('volume.detach.end', cinder_usage(VM3, POOL))
        # The other phases are not read.
        self.notify('volume.attach.end', cinder_usage(VOL2, POOL))
        self.notify('volume.detach.start', cinder_usage(VOL2, POOL))
        self.assertEqual({}, self.m.following)
        self.assertEqual([VOL1, VOL1, VOL2, COPY, VM3], [
            uuid for call, uuid in self.conn.calls if call == 'get_volume'])

    def test_a_migration_that_never_ends_is_given_up(self):
        self.useFixture(fixtures.MockPatchObject(
            membership, 'MIGRATION_TIMEOUT_S', 0.05))
        self.cinder_shows((POOL2, 'migrating', True))
        with self.assertLogs('iotguard.controller.membership',
                             'WARNING') as logs:
            self.notify('volume.detach.end', cinder_usage(VOL1, POOL))
            self.wait_followed()
        self.assertIn('still migrating', logs.output[0])
        self.assertEqual(POOL2, domain_of(self.m, VM1, 'vdb'))

    def test_cinder_unreadable_meanwhile_and_stop(self):
        self.useFixture(fixtures.MockPatchObject(
            membership, 'MIGRATION_POLL_S', 0.05))
        self.cinder_shows((POOL, 'migrating', True))
        self.notify('volume.detach.end', cinder_usage(VOL1, POOL))

        def down(uuid):
            raise sdk_exc.HttpException('cinder down')
        self.conn.block_storage.get_volume = down
        thread = self.m.following[VOL1]
        self.m.stop()
        self.assertFalse(thread.is_alive())
        self.assertEqual(POOL, domain_of(self.m, VM1, 'vdb'))
        # Stopped: nothing more is followed.
        self.cinder_shows((POOL, 'migrating', True))
        self.notify('volume.detach.end', cinder_usage(VOL1, POOL))
        self.assertEqual({}, self.m.following)
