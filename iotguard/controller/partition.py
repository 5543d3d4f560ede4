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

"""Which domains this controller owns: tooz's partitioner, or everything.

With ``[coordination] backend_url`` every controller joins the tooz group
``[coordination] group_name`` (``iotguard-controller``) and the domains
are spread over the members by tooz's consistent hash ring
(:class:`tooz.partitioner.Partitioner`): each domain has exactly one
owner while the members agree, and when one leaves (or dies: its
heartbeat key expires after ``[coordination] member_timeout`` seconds)
only its domains move. tooz's heart thread
beats every ``member_timeout / 2`` seconds; :meth:`Partition.refresh`
(before every decision round) runs the group watchers and rejoins the
group when this member was dropped (a network or Redis outage longer than
the timeout). A dead controller's domains are thus decided by another one
within ``member_timeout`` plus one decision interval.

Without a backend this controller owns everything: run only one.
"""

from collections.abc import Iterable
import threading
from urllib import parse
import uuid

from oslo_config import cfg
from oslo_log import log as logging
from tooz import coordination
from tooz import hashring
from tooz import partitioner

LOG = logging.getLogger(__name__)


def with_timeout(url: str, timeout: float) -> str:
    """``url`` with tooz's ``timeout`` parameter unless it has one."""
    parts = parse.urlsplit(url)
    query = parse.parse_qsl(parts.query, keep_blank_values=True)
    if any(k == 'timeout' for k, _v in query):
        return url
    query.append(('timeout', str(int(timeout))))
    return parse.urlunsplit(parts._replace(query=parse.urlencode(query)))


class Partition:
    """This controller's share of the domains (constructor does no I/O)."""

    def __init__(self, conf: cfg.ConfigOpts, member_id: str | None = None,
                 group: bytes | None = None) -> None:
        self.group: bytes = group or conf.coordination.group_name.encode()
        self.url: str | None = conf.coordination.backend_url
        self.timeout: float = conf.coordination.member_timeout
        self.member_id = (member_id or '%s:%s' % (
            conf.host, uuid.uuid4().hex[:8])).encode()
        self._coord: coordination.CoordinationDriver | None = None
        self._partitioner: partitioner.Partitioner | None = None
        self._lock = threading.Lock()
        # name -> owner's member id: the ring changes only in refresh()
        # and _join(), which empty it (hashing a name costs ~10 us)
        self._owners: dict[str, bytes | None] = {}

    @property
    def coordinated(self) -> bool:
        return bool(self.url)

    def start(self) -> None:
        if not self.url:
            LOG.info('No [coordination] backend_url: this controller owns '
                     'every domain')
            return
        coord = self._coord = coordination.get_coordinator(
            with_timeout(self.url, self.timeout), self.member_id)
        coord.start(start_heart=True)
        self._join(coord)
        LOG.info('Joined %s as %s', self.group.decode(),
                 self.member_id.decode())

    def _join(self, coord: coordination.CoordinationDriver) -> None:
        with self._lock:
            if self._partitioner is not None:
                self._partitioner.stop()   # its watchers
            self._partitioner = coord.join_partitioned_group(self.group)
            self._owners = {}

    def stop(self) -> None:
        if self._coord is None:
            return
        try:
            self._coord.leave_group(self.group).get()
        except Exception as e:
            LOG.warning('Could not leave %s: %s', self.group.decode(), e)
        try:
            self._coord.stop()
        except Exception as e:
            LOG.warning('Could not stop the coordinator: %s', e)
        self._coord = None

    def refresh(self) -> None:
        """Follow the group: joins, leaves, and this member's own drop."""
        if self._coord is None or self._partitioner is None:
            return
        try:
            with self._lock:
                self._coord.run_watchers()
                members = self._coord.get_members(self.group).get()
                self._reconcile(self._partitioner.ring, members)
                self._owners = {}
            if self.member_id not in members:
                LOG.warning('%s was dropped from %s; joining again',
                            self.member_id.decode(), self.group.decode())
                try:
                    self._coord.leave_group(self.group).get()
                except coordination.ToozError:
                    pass
                self._join(self._coord)
        except Exception as e:
            LOG.warning('Coordination backend unavailable (%s); keeping '
                        'the last known share of the domains', e)

    def _reconcile(self, ring: hashring.HashRing, members: set[bytes]
                   ) -> None:
        """Make the hash ring hold exactly the group's ``members``.

        tooz's partitioner reads the members, then starts watching for
        joins: a member that joins in between is in neither (controllers
        started together), and this one would then own its domains too,
        for good. Its ring is set right here, every refresh.
        """
        missing = set(members) - set(ring.nodes)
        gone = set(ring.nodes) - set(members)
        for member in missing:
            ring.add_node(member)
        for member in gone:
            ring.remove_node(member)
        if missing or gone:
            LOG.info('Hash ring of %s set right: %d member(s) added, %d '
                     'removed', self.group.decode(), len(missing), len(gone))

    def _owner(self, name: str) -> bytes | None:
        """The member id (bytes) owning ``name``; None: none known yet."""
        owners = self._owners
        if name in owners:
            return owners[name]
        with self._lock:
            if self._partitioner is None:
                return None
            try:
                members = self._partitioner.members_for_object(name)
            except Exception as e:     # an empty ring, while joining
                LOG.debug('No owner of %s yet: %s', name, e)
                return None
            found = self._owners[name] = next(iter(members), None)
        return found

    def owns(self, name: str) -> bool:
        """Whether this controller owns the domain (or key) ``name``."""
        if self._partitioner is None:
            return not self.coordinated
        return self._owner(name) == self.member_id

    def owner_of(self, name: str) -> str | None:
        """The member id (str) owning the domain ``name``; None: unknown.

        None too without coordination (this controller is the only one).
        """
        found = self._owner(name)
        return found.decode() if found is not None else None

    def my_domains(self, all_domains: Iterable[str]) -> list[str]:
        """The domains of ``all_domains`` (names) owned here."""
        self.refresh()
        return [d for d in all_domains if self.owns(d)]
