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

"""The disk index: which disk is in which domain, on which host.

One per controller process, shared by the RPC endpoint
(:mod:`~iotguard.controller.manager`: it routes the samples by it, records
the disks the agents report and gives it each host's listing,
:meth:`DiskIndex.listed`) and membership. Both write a disk's placement
through it alone (:meth:`DiskIndex.upsert`, :meth:`DiskIndex.delete`: the
database, then the index), so it follows every change this process
makes. It is read in full again (:meth:`DiskIndex.refresh`) when
:meth:`DiskIndex.due`: soon after a sample named a disk it does not know
(another process may have recorded it), and at least every ``RELOAD_S``.
"""

from collections.abc import Callable
from collections.abc import Iterable
import threading
import time

from oslo_log import log as logging

from iotguard.db import api as db_api
from iotguard import exception

LOG = logging.getLogger(__name__)

#: A full reload at least this often (seconds), and a reload asked by an
#: unknown disk's sample at most this often.
RELOAD_S = 600.0
RELOAD_MIN_S = 30.0
#: Batches of a host in a row without one of its local disks (while they
#: list its instance) before that disk is dropped.
UNLISTED_BATCHES = 2
#: An instance reported by another host than the index says is told
#: (``on_moved``) at most this often (seconds).
MOVE_CHECK_S = 10.0

Key = tuple[str, str]
#: Where a disk is: ``(domain, host)``.
Place = tuple[str, str]
#: A host's listing as last looked at: its hash and the index's version.
Seen = tuple[int, int]


class DiskIndex:
    """``(instance_uuid, dev) -> (domain, host)``; ``version`` counts changes.

    Thread-safe.
    """

    def __init__(self, db: db_api.Connection,
                 clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self._clock = clock
        self._lock = threading.Lock()
        self._index: dict[Key, Place] = {}
        self._devs: dict[str, tuple[str, ...]] = {}    # uuid -> its devs
        self.version = 0
        self._unknown: set[Key] = set()   # already logged as unknown
        self._loaded_at: float | None = None   # the last full read
        self._unknown_since: float | None = None
        # by host: its listing as last looked at (None: look again) and
        # how many batches in a row missed each of its local disks
        self._hosts: dict[str, tuple[Seen | None, dict[Key, int]]] = {}
        self._move_asked: dict[str, float] = {}  # uuid -> when told
        #: ``on_moved(instance_uuid)``: told of an instance whose disks a
        #: host lists while the index places them on another (the service
        #: wires membership's resync of it); None: nothing is told.
        self.on_moved: Callable[[str], None] | None = None

    # -- reading ------------------------------------------------------------

    def get(self, key: Key) -> Place | None:
        return self._index.get(key)

    def of_instance(self, instance_uuid: str) -> dict[Key, Place]:
        """The disks of an instance, where they are."""
        with self._lock:
            return {(instance_uuid, dev): self._index[(instance_uuid, dev)]
                    for dev in self._devs.get(instance_uuid, ())}

    def copy(self) -> dict[Key, Place]:
        with self._lock:
            return dict(self._index)

    def missed(self, key: Key) -> bool:
        """A sample named ``key``, unknown here: a reload is due soon.

        Whether it is news (the caller logs it once).
        """
        with self._lock:
            first = key not in self._unknown
            self._unknown.add(key)
            if first and self._unknown_since is None:
                self._unknown_since = self._clock()
        return first

    # -- loading ------------------------------------------------------------

    def refresh(self) -> None:
        """Read the whole index from the database."""
        index = self.db.disk_index()
        devs: dict[str, tuple[str, ...]] = {}
        for uuid, dev in index:
            devs[uuid] = devs.get(uuid, ()) + (dev,)
        with self._lock:
            self._index = index
            self._devs = devs
            self._unknown -= set(index)
            self._loaded_at = self._clock()
            self._unknown_since = None
            self.version += 1

    def due(self, now: float) -> bool:
        """Whether :meth:`refresh` should run now."""
        if self._loaded_at is None:
            return True
        age = now - self._loaded_at
        return age >= RELOAD_S or (
            self._unknown_since is not None and age >= RELOAD_MIN_S)

    def listed(self, host: str, keys: list[Key], local_domain: str) -> None:
        """Follow the whole listing of ``host``'s agent (one batch).

        A disk of the host's ``local_domain`` that ``UNLISTED_BATCHES``
        batches in a row miss while they list other disks of its instance
        (a rescue disk after an unrescue, an ephemeral disk gone with a
        resize) is deleted, its cap with it (a sample naming it registers
        it again); volume disks are membership's.

        The instances the index places on another host are told to
        ``on_moved``, each at most every ``MOVE_CHECK_S``: Nova records an
        evacuated instance's new host only after its last notification,
        and a lost notification leaves a migrated one behind too, so the
        host's own listing is the first to know. Looked at only when the
        listing or the index changed since the host's last batch, or while
        one of its local disks is missing.
        """
        seen = (hash(tuple(keys)), self.version)
        last, missed = self._hosts.get(host, (None, {}))
        if last == seen and not missed:
            return
        listed: dict[str, set[str]] = {}
        for uuid, dev in keys:
            listed.setdefault(uuid, set()).add(dev)
        missing: dict[Key, int] = {}
        moved = set()
        with self._lock:
            for uuid, devs in listed.items():
                for dev in self._devs.get(uuid, ()):
                    place = self._index[(uuid, dev)]
                    if dev in devs:
                        if place[1] != host:
                            moved.add(uuid)
                    elif place == (local_domain, host):
                        missing[(uuid, dev)] = missed.get((uuid, dev), 0) + 1
        self._hosts[host] = (seen, missing)
        for uuid, dev in self.delete(
                [key for key, n in missing.items() if n >= UNLISTED_BATCHES]):
            LOG.info('Dropped disk %s/%s: the agent of %s no longer lists '
                     'it', uuid, dev, host)
        if self.on_moved is not None:
            self._tell_moved(host, sorted(moved), self.on_moved)

    def _tell_moved(self, host: str, moved: list[str],
                    on_moved: Callable[[str], None]) -> None:
        now = self._clock()
        for uuid in moved:
            if now - self._move_asked.get(uuid, -MOVE_CHECK_S) < \
                    MOVE_CHECK_S:
                self._hosts[host] = (None, self._hosts[host][1])
                continue
            self._move_asked[uuid] = now
            LOG.info('Host %s reports disks of instance %s, which the '
                     'index places elsewhere', host, uuid)
            try:
                on_moved(uuid)
            except Exception:
                LOG.exception('on_moved(%s) failed', uuid)

    # -- writing ------------------------------------------------------------

    def upsert(self, instance_uuid: str, dev: str, host: str, domain: str,
               kind: str, project_id: str,
               volume_id: str | None = None,
               size_gib: int | None = None) -> None:
        """Record a disk, creating its domain when missing.

        ``size_gib``: a new disk's size. Raises what the database raises
        (the index is then unchanged).
        """
        self._ensure_domain(domain, kind)
        self.db.disk_upsert(instance_uuid, dev, host, domain, project_id,
                            volume_id=volume_id, size_gib=size_gib)
        key = (instance_uuid, dev)
        with self._lock:
            self.version += 1
            self._index[key] = (domain, host)
            devs = self._devs.get(instance_uuid, ())
            if dev not in devs:
                self._devs[instance_uuid] = devs + (dev,)
            self._unknown.discard(key)

    def delete(self, keys: Iterable[Key]) -> list[Key]:
        """Remove disks (their caps go with them); those now gone.

        A disk the database cannot remove now is logged and kept.
        """
        removed = []
        for uuid, dev in keys:
            try:
                self.db.disk_delete(uuid, dev)
            except exception.NotFound:
                pass
            except Exception as e:
                LOG.warning('Could not remove disk %s/%s: %s', uuid, dev, e)
                continue
            removed.append((uuid, dev))
        with self._lock:
            self.version += bool(removed)
            for uuid, dev in removed:
                self._index.pop((uuid, dev), None)
                devs = tuple(d for d in self._devs.get(uuid, ()) if d != dev)
                if devs:
                    self._devs[uuid] = devs
                else:
                    self._devs.pop(uuid, None)
        return removed

    def _ensure_domain(self, name: str, kind: str) -> None:
        try:
            self.db.domain_get(name)
        except exception.NotFound:
            try:
                self.db.domain_create(name, kind)
                LOG.info('Created domain %s (%s; no capacity profile yet: '
                         'iotguard-manage domain calibrate)', name, kind)
            except exception.Conflict:
                pass
