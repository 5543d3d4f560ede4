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

"""The agent's RPC endpoint and the caps it holds.

Semantics (doc/source/reference/architecture.rst, "Fail safe"):

* A cap is checked at the edge (:meth:`iotguard.wire.caps.Cap.from_wire`); a
  malformed one is logged and refused, the others in the batch still apply.
* What is applied is ``caps.effective(cap, static)`` (the rule the
  simulator's throttles enforce too): the cap held exactly, never more in
  total than the disk's static ceilings. Release, or a lapsed lease,
  restores the static limits.
* Idempotent: the manager remembers what it last applied (or read back)
  per disk and makes no driver call when the wanted set equals it. Sets
  are compared in the form of ``caps.with_bursts``: a burst of 0 and a
  burst equal to its base value limit alike; the libvirt test driver
  stores the latter where QEMU keeps the former.
* After a lifecycle event (hard reboot, migration, re-attach: Nova rebuilt
  the domain and dropped the live throttle) the disk is re-read and its
  cap re-applied at the next :meth:`AgentManager.periodic` (one interval).
* After an agent restart (:meth:`AgentManager.recover`) the live iotune of
  every disk is read back; a cap recorded in ``[agent] state_file`` is kept
  only if its lease still runs and the live values are exactly what the
  agent would apply for it. Every other disk gets its static limits back.
"""

import collections.abc
import dataclasses
import json
import os
import tempfile
import threading
import time
from typing import TypeVar

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging

from iotguard.agent.virt import base
from iotguard import exception
from iotguard.wire import caps as caps_mod
from iotguard.wire import rpcapi

LOG = logging.getLogger(__name__)

#: A cap in force: (effective limits, lease_expires_at, decision_id).
InForce = tuple[dict[str, int], float, str | None]
R = TypeVar('R')
#: A wall clock that moved less than this (s) against the monotonic one
#: between a save and a load of the state file did not step.
STEP_S = 1.0


class AgentManager:
    """RPC endpoint of topic ``iotguard-agent``, server = host."""

    target = oslo_messaging.Target(version=rpcapi.AGENT_RPC_API_VERSION)

    def __init__(self, conf: cfg.ConfigOpts, driver: base.Driver,
                 clock: collections.abc.Callable[[], float] = time.time,
                 store: 'StateFile | None' = None) -> None:
        self.host = conf.host
        self.driver = driver
        self._clock = clock
        self._store = store or StateFile(conf.agent.state_file, clock)
        self._lock = threading.RLock()
        self._caps: dict[base.Key, caps_mod.Cap] = {}  # all twelve keys
        #: leases that lapsed (their caps released here), since start
        self.lapsed = 0
        self._applied: dict[base.Key, dict[str, int]] = {}  # iotune live
        self._disks: dict[base.Key, base.Disk] = {}  # last listing
        self._dirty: set[str] = set()  # instance uuids to re-read, re-apply
        # Disks whose live iotune may not be what it should (a failed or
        # unfinished _enforce): periodic retries them.
        self._unsettled: set[base.Key] = set()
        # When periodic has something to do for a lease at the earliest.
        self._next_expiry = float('inf')

    # -- RPC API 1.0 --------------------------------------------------------
    def apply_caps(self, ctxt: rpcapi.Context, caps: object) -> None:
        """Apply (or renew) caps; malformed ones are logged and refused."""
        now = self._clock()
        with self._lock:
            changed, late = False, []
            for cap in _records('apply_caps', 'cap', caps,
                                caps_mod.Cap.from_wire):
                if cap.lease_expires_at <= now:
                    late.append(cap)
                    continue
                self._caps[cap.key] = cap
                self._next_expiry = min(self._next_expiry,
                                        cap.lease_expires_at)
                changed = True
                self._enforce(cap.key)
            if late:
                cap = min(late, key=lambda c: c.lease_expires_at)
                LOG.warning('Refusing %d cap(s), their leases expired by '
                            'this host\'s clock (the oldest, cap %s on '
                            '%s/%s, %.1f s ago): sent long ago, or this '
                            'clock stepped forward since the controller '
                            'last learned it from the samples (NTP?)',
                            len(late), cap.decision_id, *cap.key,
                            now - cap.lease_expires_at)
            if changed:
                self._store.save(self._caps)

    def release_caps(self, ctxt: rpcapi.Context, disks: object) -> None:
        """Drop the caps of ``disks``; their static limits come back."""
        with self._lock:
            for disk in _records('release_caps', 'release', disks,
                                 caps_mod.Disk.from_wire):
                key = (disk.instance_uuid, disk.dev)
                if self._caps.pop(key, None) is not None:
                    LOG.info('Released cap on %s/%s', *key)
                self._enforce(key)
            self._store.save(self._caps)

    def get_state(self, ctxt: rpcapi.Context) -> rpcapi.Payload:
        """Every known disk: static, cap, lease and what is applied.

        Leases and ``time`` are on this host's clock.
        """
        with self._lock:
            keys = set(self._disks) | set(self._caps)
            disks = []
            for key in sorted(keys):
                disk = self._disks.get(key)
                cap = self._caps.get(key)
                disks.append({
                    'instance_uuid': key[0], 'dev': key[1],
                    'known': disk is not None,
                    'static': _nonzero(disk.static) if disk else None,
                    'cap': _nonzero(cap.limits) if cap else None,
                    'lease_expires_at': cap.lease_expires_at if cap else None,
                    'decision_id': cap.decision_id if cap else None,
                    'applied': (_nonzero(self._applied[key])
                                if key in self._applied else None),
                })
            return {'host': self.host, 'time': self._clock(),
                    'disks': disks}

    # -- used by the service and the sampler --------------------------------
    def cap_in_force(self, key: base.Key) -> InForce | None:
        """``(effective limits, lease_expires_at, decision_id)`` or None."""
        with self._lock:
            cap = self._caps.get(key)
            if cap is None or key not in self._applied:
                return None
            return (_nonzero(self._applied[key]), cap.lease_expires_at,
                    cap.decision_id)

    def caps_count(self) -> int:
        return len(self._caps)

    def mark_dirty(self, instance_uuid: str, reason: str) -> None:
        """Re-read and re-apply this instance at the next periodic.

        Also the driver's lifecycle callback (``reason``: the event).
        """
        LOG.debug('Instance %s marked for re-apply (%s)', instance_uuid,
                  reason)
        with self._lock:
            self._dirty.add(instance_uuid)

    def periodic(self, disks: dict[base.Key, base.Disk] | None = None
                 ) -> None:
        """Once per interval: leases, re-applies, new and gone disks.

        Nothing per disk in an interval where no lease lapses, no instance
        was marked, no earlier apply failed and the listing is the last
        one (the drivers give the same objects back: one identity check
        per disk, in C).
        """
        if disks is None:
            disks = self.driver.list_disks()
        now = self._clock()
        with self._lock:
            if (not self._dirty and not self._unsettled
                    and now < self._next_expiry and disks == self._disks):
                return
            self._disks = dict(disks)
            for key in [k for k in self._applied if k not in disks]:
                # Gone (deleted, migrated away, detached, shut off): when
                # it comes back it is read again.
                del self._applied[key]
            dirty, self._dirty = self._dirty, set()
            expired = [k for k, c in self._caps.items()
                       if c.lease_expires_at <= now]
            self.lapsed += len(expired)
            for key in expired:
                cap = self._caps.pop(key)
                LOG.info('Lease of cap %s on %s/%s lapsed at %.0f; '
                         'restoring the static limits',
                         cap.decision_id, key[0], key[1],
                         cap.lease_expires_at)
            marked = {key for key in disks if key[0] in dirty}
            for key in marked:
                self._applied.pop(key, None)
            for key in set(self._caps).union(expired, self._unsettled, marked):
                if key in disks:
                    self._enforce(key)
                else:
                    self._unsettled.discard(key)
            self._next_expiry = self._earliest_lease()
            if expired:
                self._store.save(self._caps)

    def recover(self) -> None:
        """At start: read live iotune back, keep only provable leases."""
        recorded = self._store.load()
        now = self._clock()
        disks = self.driver.list_disks()
        with self._lock:
            self._disks = dict(disks)
            for key, disk in disks.items():
                try:
                    live = caps_mod.full(self.driver.get_iotune(*key))
                except Exception as e:
                    LOG.warning('Cannot read iotune of %s/%s: %s',
                                key[0], key[1], e)
                    self._unsettled.add(key)   # periodic reads it again
                    continue
                self._applied[key] = live
                compared = caps_mod.with_bursts(live)
                cap = recorded.get(key)
                if cap is not None and cap.lease_expires_at > now and \
                        compared == caps_mod.with_bursts(
                            caps_mod.effective(cap.limits, disk.static,
                                               cap.lift)):
                    self._caps[key] = cap
                    LOG.info('Kept cap %s on %s/%s (lease until %.0f)',
                             cap.decision_id, key[0], key[1],
                             cap.lease_expires_at)
                    continue
                if compared != caps_mod.with_bursts(disk.static):
                    LOG.info('Restoring static limits of %s/%s (no '
                             'provable lease for live %s)', key[0], key[1],
                             _nonzero(live))
                self._enforce(key)
            self._next_expiry = self._earliest_lease()
            self._store.save(self._caps)

    # -- internals ----------------------------------------------------------
    def _earliest_lease(self) -> float:
        return min((c.lease_expires_at for c in self._caps.values()),
                   default=float('inf'))

    def _enforce(self, key: base.Key) -> None:
        """Make the disk's live iotune what it should be; one call at most.

        The disk stays unsettled (periodic tries again) unless this ends
        with the live iotune known to be the wanted one.
        """
        self._unsettled.add(key)
        disk = self._disks.get(key)
        if disk is None:
            self._disks.update(self.driver.list_disks())
            disk = self._disks.get(key)
            if disk is None:
                LOG.warning('Disk %s/%s is not on this host (yet); its cap '
                            'is kept and applied when it shows up', *key)
                return
        cap = self._caps.get(key)
        limits = caps_mod.effective(cap.limits if cap else {}, disk.static,
                                    bool(cap and cap.lift))
        wanted = caps_mod.with_bursts(limits)
        if key not in self._applied:
            self._applied[key] = caps_mod.full(self.driver.get_iotune(*key))
        if caps_mod.with_bursts(self._applied[key]) == wanted:
            self._unsettled.discard(key)
            return
        try:
            self.driver.set_iotune(key[0], key[1], limits,
                                   static=disk.static)
        except Exception as e:
            # Unknown state now: read it again next time.
            self._applied.pop(key, None)
            LOG.error('Could not set iotune %s on %s/%s: %s',
                      _nonzero(limits), key[0], key[1], e)
            return
        self._applied[key] = limits
        self._unsettled.discard(key)
        LOG.info('Applied %s on %s/%s (%s)', _nonzero(limits) or 'no limit',
                 key[0], key[1], 'cap %s' % cap.decision_id if cap
                 else 'static limits')


def boot_id() -> str | None:
    """This boot's id (Linux), None where there is none."""
    try:
        with open('/proc/sys/kernel/random/boot_id') as f:
            return f.read().strip() or None
    except OSError:
        return None


class StateFile:
    """The caps this agent applied, in one JSON file (this host only).

    The file also holds when it was written, by the wall clock and by the
    monotonic clock of this boot (:data:`CLOCK`). Read back in the same
    boot, its leases move with the wall clock if that stepped meanwhile
    (NTP, an agent restarted with its clock set): a cap is kept as long as
    its lease had left, by the monotonic clock, never longer.
    """

    #: The entry of the file that says when it was written.
    CLOCK = '@clock'

    def __init__(self, path: str | None,
                 clock: collections.abc.Callable[[], float] = time.time,
                 monotonic: collections.abc.Callable[[], float] = (
                     time.monotonic),
                 boot: collections.abc.Callable[[], str | None] = boot_id
                 ) -> None:
        self.path = path
        self._clock, self._monotonic, self._boot = clock, monotonic, boot

    def _written(self) -> dict[str, object]:
        return {'wall': self._clock(), 'monotonic': self._monotonic(),
                'boot': self._boot()}

    def _step(self, written: object) -> float:
        """How far the wall clock stepped since ``written`` (0: unknown)."""
        if not isinstance(written, dict):
            return 0.0
        wall, mono = written.get('wall'), written.get('monotonic')
        boot = self._boot()
        if boot is None or written.get('boot') != boot \
                or not isinstance(wall, (int, float)) \
                or not isinstance(mono, (int, float)):
            return 0.0
        step = (self._clock() - wall) - (self._monotonic() - mono)
        if abs(step) <= STEP_S:
            return 0.0
        LOG.warning('This host\'s clock moved %+.1f s since %s was written '
                    '(against its monotonic clock): the leases recorded '
                    'move with it', step, self.path)
        return step

    def save(self, held: dict[base.Key, caps_mod.Cap]) -> None:
        if not self.path:
            return
        data: dict[str, object] = {
            '%s/%s' % key: cap.to_wire() for key, cap in held.items()}
        data[self.CLOCK] = self._written()
        directory = os.path.dirname(os.path.abspath(self.path))
        written = None
        try:
            os.makedirs(directory, exist_ok=True)
            with tempfile.NamedTemporaryFile('w', dir=directory,
                                             delete=False) as f:
                written = f.name
                json.dump(data, f)
            os.replace(written, self.path)
        except OSError as e:
            if written is not None:
                # a full disk: no temporary file left behind each time
                try:
                    os.unlink(written)
                except OSError:
                    pass
            LOG.warning('Cannot write %s: %s; after a restart the caps '
                        'will not be provable', self.path, e)

    def load(self) -> dict[base.Key, caps_mod.Cap]:
        if not self.path:
            return {}
        try:
            with open(self.path) as f:
                data = json.load(f)
            step = self._step(data.pop(self.CLOCK, None))
            out = {}
            for name, cap in data.items():
                uuid, dev = name.rsplit('/', 1)
                # Older agents' files name the disk by the key alone.
                held = caps_mod.Cap.from_wire(
                    {'decision_id': None, **cap, 'instance_uuid': uuid,
                     'dev': dev})
                out[(uuid, dev)] = dataclasses.replace(
                    held, lease_expires_at=held.lease_expires_at + step)
            return out
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError,
                AttributeError, exception.InvalidCap) as e:
            LOG.warning('Ignoring unreadable %s: %s', self.path, e)
            return {}


def _records(method: str, kind: str, wire: object,
             from_wire: collections.abc.Callable[[object], R]) -> list[R]:
    """The records of an RPC's list; a malformed one is logged and left out."""
    if not isinstance(wire, list):
        LOG.error('%s refused: not a list but %s', method, type(wire).__name__)
        return []
    out = []
    for item in wire:
        try:
            out.append(from_wire(item))
        except exception.InvalidCap as e:
            LOG.error('Refusing malformed %s %.300r: %s', kind, item, e)
    return out


def _nonzero(limits: collections.abc.Mapping[str, int]) -> dict[str, int]:
    return {k: v for k, v in limits.items() if v}
