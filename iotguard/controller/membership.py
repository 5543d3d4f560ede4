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

"""Membership: which disk is in which contention domain.

Resolved with openstacksdk from Nova and Cinder:

* a server's image-backed root disk (its ``root_device_name``, ``vda``
  when Nova does not say) is in its host's ephemeral domain
  (:func:`ephemeral_domain`): ``[membership] ephemeral_domains[host]``,
  else ``ephemeral_domain`` (one shared storage for every host, e.g. one
  Ceph cluster), else ``local:<compute host>``;
* each attached volume (its attachment's ``device``) is in its Cinder
  pool's domain (:func:`volume_domain`): the one ``[membership]
  volume_domains`` gives its back end or pool, else the pool itself, the
  volume's ``os-vol-host-attr:host`` (``host@backend#pool``); a
  boot-from-volume root disk is a volume disk.

A disk's size (GiB) prices its tier's limits per GiB
(:meth:`iotguard.policy.base.Tier.at`): a volume's is Cinder's, an
image-backed root disk's its flavor's ``disk``. A disk that grows (a volume
extended, Cinder's ``volume.resize.end``) is admitted again at its new
size (:meth:`Membership._sync_sizes`).

Naming one domain for Nova's ephemeral disks and Cinder's volumes on the
same storage makes them one capacity: a floor is admitted against it
once, and a noisy disk of either kind is decided with the disks of the
other, whichever host runs them.

Ephemeral and swap disks beyond the root are not visible in Nova's API;
the controller records those when an agent reports them
(``[controller] register_local_disks``). Servers that run nowhere
(shelved offloaded, building without a host) have no disks here.

The result is written through the controller's
:class:`~iotguard.controller.disk_index.DiskIndex`, also membership's view
of what it wrote before (a restart or another controller resumes from the
database): in full by :meth:`Membership.refresh` (every ``[membership]
resync_interval``) and per instance on Nova and Cinder notifications
(:class:`NotificationEndpoint`). After an event that makes Nova rebuild
the domain XML (dropping the live iotune values),
``on_rebuilt(instance_uuid, host)`` lets the controller send that host's
agent its caps again.
"""

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
import dataclasses
import datetime
import functools
import os
import threading
import time
from typing import Any

from openstack import exceptions as sdk_exc
from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging

from iotguard import clients
from iotguard.controller import disk_index
from iotguard.controller import notifications
from iotguard.db import tiering
from iotguard import exception
from iotguard.manage import tiersync
from iotguard.policy import admission
from iotguard.wire import rpc

LOG = logging.getLogger(__name__)

LOCAL_PREFIX = 'local:'
KIND_LOCAL = 'local'
KIND_SHARED = 'ceph'
KIND_CINDER = 'cinder'

Key = tuple[str, str]

#: A volume's ``migration_status`` while Cinder migrates it: the source's
#: (its copy's is ``target:<source id>``).
MIGRATING = ('starting', 'migrating', 'completing')
TARGET_PREFIX = 'target:'
#: A migrating volume is read this often (seconds), for this long at most.
MIGRATION_POLL_S = 5.0
MIGRATION_TIMEOUT_S = 600.0


def ephemeral_domain(conf: cfg.ConfigOpts, host: str) -> tuple[str, str]:
    """The domain of ``host``'s image-backed disks and its kind."""
    opts = conf.membership
    if host in opts.ephemeral_domains:
        return opts.ephemeral_domains[host], KIND_SHARED
    if opts.ephemeral_domain:
        return opts.ephemeral_domain, KIND_SHARED
    return LOCAL_PREFIX + host, KIND_LOCAL


def volume_domain(conf: cfg.ConfigOpts, pool: str) -> tuple[str, str]:
    """The domain of the volumes of Cinder pool ``host@backend#pool``.

    ``[membership] volume_domains`` is looked up by the most precise key
    first: the pool of one volume service, the back end's pool, the back
    end. Unnamed pools are their own domain.
    """
    named = conf.membership.volume_domains
    backend_pool = pool.partition('@')[2]
    for key in (pool, backend_pool, backend_pool.partition('#')[0]):
        if key and key in named:
            return named[key], KIND_SHARED
    return pool, KIND_CINDER


@dataclasses.dataclass(frozen=True)
class Disk:
    """Where one disk lives."""

    instance_uuid: str
    dev: str
    host: str
    domain: str
    kind: str
    project_id: str
    volume_id: str | None = None
    #: The volume's type (id, or name where Cinder does not say the id).
    volume_type: str | None = None
    #: GiB: the volume's, or the root disk's in its flavor (None: unknown)
    size_gib: int | None = None


def flavor_tier(server: Any) -> str | None:
    """The tier a server's embedded flavor names, or None.

    Nova embeds the flavor, extra specs included, in the server from
    compute API 2.47 (openstacksdk asks for its newest microversion).
    Instance *metadata* ``iotguard:tier`` is not read: a tenant can write
    it in Nova directly, and only a choice admitted through iotguard's API
    counts.
    """
    tier = (_flavor(server, 'extra_specs') or {}).get(tiersync.TIER_KEY)
    return tier or None


def _flavor(server: Any, field: str) -> Any:
    """A field of a server's embedded flavor (a dict or a resource)."""
    flavor = server.flavor
    if isinstance(flavor, dict):
        return flavor.get(field)
    return getattr(flavor, field, None)


def _dev(device: str | None) -> str | None:
    return os.path.basename(device) if device else None


class Membership:
    """Disk -> domain, from Nova and Cinder, written through ``index``.

    ``connection``: an openstacksdk Connection (built from
    ``[service_credentials]`` when first needed); ``notifier``: tells the
    tiers given or refused (None: nobody).
    """

    def __init__(self, conf: cfg.ConfigOpts, index: disk_index.DiskIndex,
                 connection: Any = None,
                 on_rebuilt: Callable[[str, str], None] | None = None,
                 notifier: notifications.Notifier | None = None) -> None:
        self._conf = conf
        self._connection = connection
        self.index = index
        self.db = index.db
        self.on_rebuilt = on_rebuilt
        self.notifier = notifier
        #: volume id -> the thread following its migration
        self.following: dict[str, threading.Thread] = {}
        self._following_lock = threading.Lock()
        self._stopped = threading.Event()

    @property
    def connection(self) -> Any:
        if self._connection is None:
            self._connection = clients.get_connection(self._conf)
        return self._connection

    # -- resolving ------------------------------------------------------

    def disks_of(self, server: Any, volumes: Mapping[str, Any]) -> list[Disk]:
        """The disks of one server; ``volumes`` maps id -> volume."""
        host = server.compute_host
        if not host:
            return []
        root = _dev(server.root_device_name) or 'vda'
        out: dict[str, Disk] = {}
        for attached in server.attached_volumes or ():
            volume = volumes.get(attached.get('id'))
            if volume is None:
                continue
            for attachment in volume.attachments or ():
                dev = _dev(attachment.get('device'))
                if attachment.get('server_id') != server.id or not dev:
                    continue
                if not volume.host:
                    LOG.warning('Volume %s has no back-end host yet; disk '
                                '%s/%s skipped', volume.id, server.id, dev)
                    continue
                domain, kind = volume_domain(self._conf, volume.host)
                out[dev] = Disk(server.id, dev, host, domain, kind,
                                server.project_id, volume.id,
                                getattr(volume, 'volume_type_id', None)
                                or volume.volume_type,
                                volume.size or None)
        if root not in out:
            domain, kind = ephemeral_domain(self._conf, host)
            out[root] = Disk(server.id, root, host, domain, kind,
                             server.project_id,
                             size_gib=_flavor(server, 'disk') or None)
        return list(out.values())

    def refresh(self) -> dict[str, int]:
        """Full resync with Nova and Cinder; returns counts.

        Raises what openstacksdk raises when Nova or Cinder cannot be
        read (the caller logs it and keeps the previous state).
        """
        listed_at = datetime.datetime.now(datetime.timezone.utc).replace(
            tzinfo=None)
        servers = list(self.connection.compute.servers(details=True,
                                                       all_projects=True))
        volumes = self._all_volumes()
        found: dict[Key, Disk] = {}
        for server in servers:
            for disk in self.disks_of(server, volumes):
                found[(disk.instance_uuid, disk.dev)] = disk
        live = {server.id: server for server in servers}
        written, removed = self._persist(live, found, self.index.copy())
        self._forget_choices(keep=live, before=listed_at)
        self._sync_sizes(list(found.values()))
        self._sync_tiers([s for s in servers if s.compute_host],
                         list(found.values()))
        return {'disks': len(found), 'written': written, 'removed': removed}

    def _all_volumes(self) -> dict[str, Any]:
        """Every volume by id; none in a cloud without Cinder."""
        try:
            return {v.id: v for v in self.connection.block_storage.volumes(
                details=True, all_projects=True)}
        except sdk_exc.ServiceDisabledException as exc:
            LOG.debug('No Cinder in the catalog, no volume disks: %s', exc)
            return {}

    def refresh_instance(self, instance_uuid: str) -> list[Disk]:
        """Resync one instance (after a notification); its disks."""
        try:
            server = self.connection.compute.get_server(instance_uuid)
        except sdk_exc.NotFoundException:
            self.forget_instance(instance_uuid)
            return []
        volumes: dict[str, Any] = {}
        for attached in server.attached_volumes or ():
            try:
                volume = self.connection.block_storage.get_volume(
                    attached['id'])
            except sdk_exc.NotFoundException:
                continue
            volumes[volume.id] = volume
        disks = {(d.instance_uuid, d.dev): d
                 for d in self.disks_of(server, volumes)}
        self._persist({instance_uuid: server}, disks,
                      self.index.of_instance(instance_uuid))
        if disks:
            self._sync_sizes(list(disks.values()))
            self._sync_tiers([server], list(disks.values()))
        return list(disks.values())

    # -- volume migrations ---------------------------------------------

    def follow_migration(self, volume_id: str) -> None:
        """Follow Cinder's migration of ``volume_id``, if one runs.

        Cinder says nothing when a migration ends: an attached volume's
        last notifications (its copy's attach, the source's detach) come
        before Cinder swaps the two volumes' records, and no
        ``volume.migrate.*`` is sent. So a volume that Cinder shows
        migrating (or its copy, ``target:<source>``) is read every
        :data:`MIGRATION_POLL_S` until the migration ends or
        :data:`MIGRATION_TIMEOUT_S` pass, one thread per volume; then the
        instances with a disk on it are resynced as any move is (its new
        back end's domain, the floor admitted again there).
        """
        volume = self._volume(volume_id)
        if volume is None:
            return
        status = getattr(volume, 'migration_status', None) or ''
        if status.startswith(TARGET_PREFIX):
            volume_id = status[len(TARGET_PREFIX):]
        elif status not in MIGRATING:
            return
        before = {(d['instance_uuid'], d['dev']): d['domain']
                  for d in self.db.disk_list(volume_id=volume_id)}
        if not before:
            return      # not attached: no disk of iotguard's on it
        with self._following_lock:
            if volume_id in self.following or self._stopped.is_set():
                return
            thread = threading.Thread(
                target=self._follow, args=(volume_id, before),
                name='migration-' + volume_id, daemon=True)
            self.following[volume_id] = thread
            thread.start()
        LOG.info('Volume %s is migrating (Cinder: %s): followed every '
                 '%.0f s', volume_id, status, MIGRATION_POLL_S)

    def stop(self) -> None:
        """End the migrations followed (their disks left to the resync)."""
        self._stopped.set()
        with self._following_lock:
            threads = list(self.following.values())
        for thread in threads:
            thread.join(timeout=10)

    def _migrating_disks(self) -> set[Key]:
        """The disks on the volumes whose migration is followed.

        Cinder shows such a volume without attachment a moment before the
        end (after Nova detached the source): they are neither removed
        nor lose their volume type's tier meanwhile.
        """
        with self._following_lock:
            volumes = sorted(self.following)
        return {(d['instance_uuid'], d['dev']) for volume_id in volumes
                for d in self.db.disk_list(volume_id=volume_id)}

    def _volume(self, volume_id: str) -> Any:
        try:
            return self.connection.block_storage.get_volume(volume_id)
        except sdk_exc.NotFoundException:
            return None

    def _follow(self, volume_id: str, before: Mapping[Key, str]) -> None:
        deadline = time.monotonic() + MIGRATION_TIMEOUT_S
        try:
            while True:
                if self._stopped.wait(MIGRATION_POLL_S):
                    return
                try:
                    volume = self._volume(volume_id)
                except Exception as e:
                    LOG.debug('Could not read migrating volume %s: %s',
                              volume_id, e)
                    ended = 'unread'
                else:
                    if volume is None:
                        ended = 'deleted'
                        break
                    ended = volume.migration_status
                    if not _migrating(volume):
                        break
                if time.monotonic() >= deadline:
                    LOG.warning('Volume %s still migrating after %.0f s '
                                '(Cinder: %s): its disks resynced now and '
                                'at every resync', volume_id,
                                MIGRATION_TIMEOUT_S, ended)
                    break
            with self._following_lock:
                del self.following[volume_id]
            for uuid in sorted({key[0] for key in before}):
                self.refresh_instance(uuid)
                for key in sorted(k for k in before if k[0] == uuid):
                    now = self.index.get(key)
                    LOG.info('Volume %s migration followed: domain %s -> %s '
                             '(disk %s of instance %s; Cinder: %s)',
                             volume_id, before[key],
                             now[0] if now else '(no disk)', key[1], uuid,
                             ended)
        except Exception:
            LOG.exception('Following the migration of volume %s failed; '
                          'the resync places its disks', volume_id)
        finally:
            with self._following_lock:
                if self.following.get(volume_id) is threading.current_thread():
                    del self.following[volume_id]

    def forget_instance(self, instance_uuid: str) -> None:
        """A deleted instance: drop its disks."""
        self.index.delete(self.index.of_instance(instance_uuid))
        self._forget_choices(instance_uuids=[instance_uuid])

    # -- persistence ----------------------------------------------------

    def _persist(self, servers: Mapping[str, Any], found: Mapping[Key, Disk],
                 placed: Mapping[Key, disk_index.Place]) -> tuple[int, int]:
        """Write what the index does not know, remove what is gone.

        ``servers``: the instances resolved, by id; ``found``: their
        disks; ``placed``: what the index holds of them (of every instance
        for a full resync). A disk Nova and Cinder no longer show is
        removed unless it is in its host's ephemeral domain and its
        instance runs: one an agent reported (the index drops it when the
        agent stops listing it), which follows its instance to its new
        host, or it is on a volume whose migration is followed
        (:meth:`_migrating_disks`). How many disks were written and
        removed.
        """
        found = dict(found)
        dead = []
        moving = self._migrating_disks()
        for key, (domain, host) in placed.items():
            if key in found or key in moving:
                continue
            server: Any = servers.get(key[0])
            moved_to = server.compute_host if server is not None else None
            if not moved_to or domain != ephemeral_domain(self._conf,
                                                          host)[0]:
                dead.append(key)
            elif moved_to != host:
                found[key] = Disk(key[0], key[1], moved_to,
                                  *ephemeral_domain(self._conf, moved_to),
                                  server.project_id)
        written = 0
        moved = []
        for key, disk in found.items():
            was = self.index.get(key)
            if was == (disk.domain, disk.host):
                continue
            try:
                self.index.upsert(disk.instance_uuid, disk.dev, disk.host,
                                  disk.domain, disk.kind, disk.project_id,
                                  disk.volume_id, disk.size_gib)
                written += 1
            except Exception as e:
                LOG.warning('Could not record disk %s/%s in %s: %s',
                            key[0], key[1], disk.domain, e)
                continue
            if was is not None and was[0] != disk.domain:
                moved.append((disk, was[0]))
        for disk, before in moved:
            try:
                self._readmit(disk, before)
            except Exception as e:
                LOG.warning('Could not admit again the floor of disk %s of '
                            'instance %s in %s: %s', disk.dev,
                            disk.instance_uuid, disk.domain, e)
        return written, len(self.index.delete(sorted(dead)))

    def _readmit(self, disk: Disk, before: str) -> None:
        """Admit again the floor of a disk that moved to another domain.

        A move Nova's scheduler did not check against the floors (one
        forced past it, a volume Cinder migrated, a tier Placement does
        not hold) must not over-commit the new domain silently: a floor
        that does not fit there is refused as its source's tier (the
        disk falls back to weaker sources and shows the refusal), logged
        and notified; a flavor's or a volume type's is tried again at
        every resync (:meth:`_sync_tiers`). The default tier is left as
        it is.
        """
        members = self.db.domain_disks(disk.domain)
        mine = [m for m in members if (m.instance_uuid, m.dev)
                == (disk.instance_uuid, disk.dev)]
        if not mine or mine[0].tier is None \
                or mine[0].tier_source not in tiering.TIER_SOURCES:
            return
        tier, source = mine[0].tier, mine[0].tier_source
        try:
            self._admit()(tier.name, self.db.domain_get(disk.domain),
                          [m.tier for m in members
                           if m.tier and m is not mine[0]], [], [tier])
            return
        except exception.AdmissionRejected as e:
            refused = e
        asked = self.db.tier_requests(source, [disk.instance_uuid])
        dev = (disk.dev if (disk.instance_uuid, disk.dev) in asked
               else tiering.ALL_DISKS)
        reason = refused.for_member()
        news = self.db.tier_refusal_set(disk.instance_uuid, dev, source,
                                        tier.name, reason, disk.project_id)
        LOG.warning('Disk %s of instance %s moved from domain %s to %s, '
                    'where its floor does not fit: tier %s from its %s '
                    'refused: %s', disk.dev, disk.instance_uuid, before,
                    disk.domain, tier.name, source, refused)
        if news and self.notifier is not None:
            self.notifier.tier_refused({
                'instance_uuid': disk.instance_uuid, 'dev': dev,
                'tier': tier.name, 'source': source,
                'project_id': disk.project_id, 'reason': reason,
                'moved_from': before, 'moved_to': disk.domain})

    def _admit(self) -> Any:
        return functools.partial(
            admission.check,
            max_ratio=self._conf.admission.max_commit_ratio)

    def _sync_sizes(self, disks: list[Disk]) -> None:
        """Record the disks' new sizes, their floors admitted again.

        A size whose larger floor (a tier per GiB) does not fit in the
        disk's domain is refused: the disk keeps the size, and floor, it
        was admitted at; the refusal is recorded on the disk, notified
        once, and tried again at every resync.
        """
        try:
            known = self.db.disk_sizes(sorted({d.instance_uuid
                                               for d in disks}))
        except Exception as e:
            LOG.warning('Could not read the disks\' sizes: %s', e)
            return
        for disk in disks:
            key = (disk.instance_uuid, disk.dev)
            if disk.size_gib is None or key not in known \
                    or known[key] == disk.size_gib:
                continue
            try:
                self.db.disk_size_set(disk.instance_uuid, disk.dev,
                                      disk.size_gib, self._admit())
            except exception.AdmissionRejected as e:
                self._size_refused(disk, disk.size_gib, known[key], e)
                continue
            except Exception as e:
                LOG.warning('Could not record the size of disk %s of '
                            'instance %s: %s', disk.dev,
                            disk.instance_uuid, e)
                continue
            LOG.info('Disk %s of instance %s is now %d GiB (was %s)',
                     disk.dev, disk.instance_uuid, disk.size_gib,
                     known[key])

    def _size_refused(self, disk: Disk, size: int, admitted: int | None,
                      e: exception.AdmissionRejected) -> None:
        reason = e.for_member()
        if not self.db.disk_size_refusal_set(
                disk.instance_uuid, disk.dev, size, reason):
            return
        LOG.warning('Disk %s of instance %s grew to %d GiB: its floor at '
                    'that size not given, it keeps the floor of %s GiB: %s',
                    disk.dev, disk.instance_uuid, disk.size_gib, admitted, e)
        if self.notifier is not None:
            self.notifier.disk_size_refused({
                'instance_uuid': disk.instance_uuid, 'dev': disk.dev,
                'tier': e.kwargs.get('tier'), 'size_gib': disk.size_gib,
                'admitted_gib': admitted, 'project_id': disk.project_id,
                'reason': reason})

    def _volume_type_tiers(self, disks: Iterable[Disk]
                           ) -> dict[str, str | None]:
        """``{volume type: tier or None}`` of the volume disks' types.

        A type Cinder cannot show now is left out, so what was recorded
        for its volumes stays until a later resync reads it.
        """
        tiers: dict[str, str | None] = {}
        for volume_type in sorted({d.volume_type for d in disks
                                   if d.volume_type}):
            try:
                found = self.connection.block_storage.find_type(
                    volume_type, ignore_missing=True)
            except Exception as e:
                LOG.warning('Could not read volume type %s: %s',
                            volume_type, e)
                continue
            specs = getattr(found, 'extra_specs', None) or {}
            tiers[volume_type] = specs.get(tiersync.TIER_KEY) or None
        return tiers

    def _sync_tiers(self, servers: list[Any], disks: list[Disk]) -> None:
        """Record the tiers flavors and volume types name, admission first.

        The flavor's tier is asked for every disk of the server, a volume
        type's for its volume's disk. A tier that does not fit in a disk's
        domain, does not exist or is not the project's to use is recorded
        as refused (the disk keeps what weaker sources give it), notified
        once, and tried again at every resync; a source that no longer
        names a tier (resize, retype, detach) drops what it asked before,
        unless its volume is migrating (:meth:`_migrating_disks`).
        """
        if not servers:
            return
        owners = {s.id: s.project_id for s in servers}
        wanted = {'flavor': {(s.id, tiering.ALL_DISKS): flavor_tier(s)
                             for s in servers}}
        volume_disks = [d for d in disks if d.volume_id]
        types = self._volume_type_tiers(volume_disks)
        wanted['volume_type'] = {
            (d.instance_uuid, d.dev): types[d.volume_type]
            for d in volume_disks if d.volume_type in types}
        unknown = {(d.instance_uuid, d.dev) for d in volume_disks
                   if d.volume_type not in types} | self._migrating_disks()
        for source, asked in wanted.items():
            try:
                have = self.db.tier_requests(source, list(owners))
            except Exception as e:
                LOG.warning('Could not read the %s tiers: %s', source, e)
                continue
            for key in sorted(set(have) - set(asked) - unknown):
                asked[key] = None
            for (uuid, dev), tier in sorted(asked.items()):
                try:
                    self._sync_tier(source, uuid, dev, tier,
                                    have.get((uuid, dev)), owners[uuid])
                except Exception as e:
                    LOG.warning('Could not record the %s tier of disk %s '
                                'of instance %s: %s', source, dev, uuid, e)

    def _sync_tier(self, source: str, uuid: str, dev: str, tier: str | None,
                   had: tuple[str, str] | None, project_id: str) -> None:
        payload = {'instance_uuid': uuid, 'dev': dev, 'tier': tier,
                   'source': source, 'project_id': project_id}
        if tier is None:
            if had is not None:
                self.db.tier_choice_unset(uuid, source, dev)
                LOG.info('Instance %s no longer asks tier %s through its '
                         '%s', uuid, had[0], source)
            return
        if had == (tier, 'admitted'):
            return
        try:
            self.db.instance_tier_set(uuid, tier, self._admit(),
                                      source=source, dev=dev)
        except (exception.AdmissionRejected, exception.NotFound) as e:
            # What the project sees (no other project's numbers); the
            # operator's log has them.
            reason = (e.for_member()
                      if isinstance(e, exception.AdmissionRejected)
                      else str(e))
            if self.db.tier_refusal_set(uuid, dev, source, tier, reason,
                                        project_id):
                LOG.warning('Tier %s named by the %s of instance %s (disk '
                            '%s) not given: %s', tier, source, uuid, dev, e)
                if self.notifier is not None:
                    self.notifier.tier_refused(dict(payload, reason=reason))
            return
        except exception.Conflict as e:
            # A lost lock race with another choice, not a verdict.
            LOG.info('Tier %s of instance %s raced another choice (%s); '
                     'next resync tries again', tier, uuid, e)
            return
        LOG.info('Instance %s (disk %s) has tier %s from its %s', uuid, dev,
                 tier, source)
        if self.notifier is not None:
            self.notifier.tier_admitted(payload)

    def _forget_choices(self, **which: Any) -> None:
        """Tier choices of instances gone from Nova go with them."""
        try:
            dropped = self.db.tier_choices_forget(**which)
        except Exception as e:
            LOG.warning('Could not drop the tier choices of deleted '
                        'instances: %s', e)
            return
        if dropped:
            LOG.info('Dropped %d tier choice(s) of deleted instances',
                     dropped)

    def rebuilt(self, instance_uuid: str) -> None:
        """Tell the controller the instance's domain XML was rebuilt."""
        if self.on_rebuilt is None:
            return
        hosts = {host for _domain, host in
                 self.index.of_instance(instance_uuid).values()}
        for host in sorted(hosts):
            try:
                self.on_rebuilt(instance_uuid, host)
            except Exception:
                LOG.exception('on_rebuilt(%s, %s) failed', instance_uuid,
                              host)


# -- notifications ----------------------------------------------------------

#: Nova events (unversioned ``compute.instance.*`` and versioned
#: ``instance.*``, suffix stripped) that change where disks live.
NOVA_EVENTS = {
    'create': False, 'delete': False,
    'resize': False, 'resize.confirm': False, 'resize_confirm': False,
    'finish_resize': True, 'resize_finish': True, 'resize.revert': True,
    'resize_revert': True,
    'live_migration.post.dest': True, 'live_migration_post_dest': True,
    'live_migration._post': True, 'live_migration_post': True,
    'rebuild': True, 'unshelve': True, 'evacuate': True,
    'shelve_offload': False, 'shelve.offload': False,
    'reboot': True, 'power_on': True,
    # Rescue and unrescue define the domain anew; resume restores it
    # from its saved state: caps are sent again either way.
    'rescue': True, 'unrescue': True, 'resume': True,
    'volume.attach': True, 'volume_attach': True,
    'volume.detach': False, 'volume_detach': False,
}
#: Cinder events: the instances they name are resynced.
CINDER_EVENTS = ('volume.attach', 'volume.detach', 'volume.retype',
                 'volume.delete', 'volume.resize')
#: Cinder events that come while a volume migrates (a retype that
#: migrates, the copy's attach by Nova, the source's detach): the volume
#: is read, and followed while it migrates
#: (:meth:`Membership.follow_migration`).
MIGRATION_EVENTS = ('volume.retype', 'volume.attach.start',
                    'volume.detach.end')


def _migrating(volume: Any) -> bool:
    """Whether Cinder is still migrating ``volume`` (the source).

    Cinder's completion writes ``success`` and the in-use status on the
    swapped record a moment before it moves the copy's attachment onto
    it: an in-use volume without attachments is still migrating.
    """
    if (getattr(volume, 'migration_status', None) or '') in MIGRATING:
        return True
    return volume.status == 'in-use' and not volume.attachments


def _event(event_type: str) -> tuple[str, str] | None:
    """``(service, action)``: ('nova', 'rebuild'), ('cinder', ...), None."""
    for suffix in ('.end', '.start', '.error'):
        if event_type.endswith(suffix):
            if suffix != '.end':
                return None
            event_type = event_type[:-len(suffix)]
            break
    for prefix in ('compute.instance.', 'instance.'):
        if event_type.startswith(prefix):
            action = event_type[len(prefix):]
            return ('nova', action) if action in NOVA_EVENTS else None
    if event_type in CINDER_EVENTS:
        return 'cinder', event_type
    return None


def _instances(payload: object) -> list[str]:
    """Instance uuids a notification payload names (either format)."""
    if not isinstance(payload, dict):
        return []
    data = payload.get('nova_object.data')
    if isinstance(data, dict):
        return [data['uuid']] if isinstance(data.get('uuid'), str) else []
    found = []
    for key in ('instance_id', 'instance_uuid'):
        if isinstance(payload.get(key), str):
            found.append(payload[key])
    for attachment in payload.get('volume_attachment') or ():
        if isinstance(attachment, dict) and \
                isinstance(attachment.get('instance_uuid'), str):
            found.append(attachment['instance_uuid'])
    return sorted(set(found))


class NotificationEndpoint:
    """Nova's and Cinder's notifications -> membership updates."""

    filter_rule = oslo_messaging.NotificationFilter(
        event_type=r'^(compute\.instance\.|instance\.|volume\.)')

    def __init__(self, membership: Membership) -> None:
        self.membership = membership

    def info(self, ctxt: dict[str, Any], publisher_id: str, event_type: object,
             payload: object, metadata: dict[str, Any]) -> Any:
        try:
            self._handle(event_type, payload)
        except Exception:
            LOG.exception('Notification %s from %s not applied to '
                          'membership', event_type, publisher_id)
        return oslo_messaging.NotificationResult.HANDLED

    def _handle(self, event_type: object, payload: object) -> None:
        event_type = event_type if isinstance(event_type, str) else ''
        event = _event(event_type)
        if event is not None:
            self._resync(event_type, event, payload)
        if event_type in MIGRATION_EVENTS and isinstance(payload, dict) \
                and isinstance(payload.get('volume_id'), str):
            self.membership.follow_migration(payload['volume_id'])

    def _resync(self, event_type: str, event: tuple[str, str],
                payload: object) -> None:
        service, action = event
        uuids = _instances(payload)
        if not uuids:
            LOG.debug('%s names no instance', event_type)
            return
        for uuid in uuids:
            if service == 'nova' and action == 'delete':
                self.membership.forget_instance(uuid)
                continue
            disks = self.membership.refresh_instance(uuid)
            # Info: lifecycle events are rare, and operators see that
            # membership follows them (not only the resync).
            LOG.info('%s: instance %s re-read, %d disk(s)', event_type,
                     uuid, len(disks))
            if service == 'nova' and NOVA_EVENTS[action]:
                self.membership.rebuilt(uuid)


def pool_name(conf: cfg.ConfigOpts) -> str:
    return rpc.listener_pool(conf, 'membership', conf.membership.pool)


def get_listener(conf: cfg.ConfigOpts, transport: oslo_messaging.Transport,
                 membership: Membership
                 ) -> oslo_messaging.MessageHandlingServer:
    """A (not started) listener on Nova's and Cinder's notifications.

    Every ``[membership] notification_topics`` topic on every
    ``notification_exchanges`` exchange: each service publishes on its own
    control exchange, not on iotguard's.
    """
    targets = [oslo_messaging.Target(topic=topic, exchange=exchange)
               for exchange in conf.membership.notification_exchanges
               for topic in conf.membership.notification_topics]
    return oslo_messaging.get_notification_listener(
        transport, targets, [NotificationEndpoint(membership)],
        executor='threading', pool=pool_name(conf))
