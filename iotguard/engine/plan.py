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

"""From a policy's decisions to what is done: new caps, releases, renewals.

A policy says what each disk of a domain should have; it does not know
what was already sent, nor whether a disk's samples can be trusted. The
plan holds the rules the controller and the simulator both apply to its
answer (:func:`plan`), so that what a simulation measures is what a cloud
does:

* a decision on a disk the snapshot does not have is not carried out;
* a cap that would tighten the one in force on a disk whose samples are
  ``stale`` is dropped (never throttle on old data), a loosening is kept;
* a cap equal to the one in force is not sent again (its ``set_at``, the
  age a policy reads, is kept), it is renewed when due instead;
* a release is sent only when a cap is in force;
* every cap in force that no decision changed is renewed once its lease
  ran half an interval (:func:`renew_due`).
"""

import collections.abc
import dataclasses

from iotguard.policy import base


@dataclasses.dataclass(frozen=True)
class InForce:
    """The cap in force on one disk.

    ``limits``: its libvirt iotune keys as sent (no key for "no limit");
    ``lease_expires_at``: when it lapses (UNIX seconds; ``inf`` never).
    """

    limits: dict[str, int]
    lease_expires_at: float


@dataclasses.dataclass(frozen=True)
class Change:
    """One decision to carry out: a new or changed cap, or a release.

    ``disk`` is the disk's index in the snapshot; ``limits`` the cap's
    iotune keys to send, ``None`` for a release.
    """

    disk: int
    decision: base.Decision
    limits: dict[str, int] | None


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a round does with a policy's decisions.

    ``changes`` in the order the policy decided them (the order they are
    audited in); ``renewals`` the indices of the disks whose cap in force
    is sent again as it is; ``dropped`` the decisions that would have
    tightened a cap on stale samples; ``unknown`` the disk ids decided on
    that the snapshot does not have.
    """

    changes: tuple[Change, ...] = ()
    renewals: tuple[int, ...] = ()
    dropped: tuple[base.Decision, ...] = ()
    unknown: tuple[str, ...] = ()


def renew_due(lease_expires_at: float, now: float, lease_s: float,
              interval_s: float) -> bool:
    """Whether a cap in force is sent again this round (to renew it).

    Once it has run half an interval of its lease: with rounds every
    interval that is every round, so a lease always has
    ``lease_s - interval_s`` seconds left, and an extra round (ownership
    change, restart) does not send it twice.
    """
    return lease_expires_at - now < lease_s - interval_s / 2.0


def plan(snapshot: base.DomainSnapshot,
         decisions: collections.abc.Iterable[base.Decision],
         in_force: collections.abc.Sequence[InForce | None], now: float,
         lease_s: float, interval_s: float) -> Plan:
    """The plan of one round of one domain (pure: no clock, no I/O).

    ``in_force``: the cap in force on each disk of ``snapshot`` (same
    order), ``None`` where there is none (or it lapsed); ``now``,
    ``lease_s`` and ``interval_s`` tell which are due for renewal.
    """
    index = {disk_id: i for i, disk_id in enumerate(snapshot.disk_ids)}
    changes: list[Change] = []
    dropped: list[base.Decision] = []
    unknown: list[str] = []
    decided: set[int] = set()
    for decision in decisions:
        i = index.get(decision.disk_id)
        if i is None:
            unknown.append(decision.disk_id)
            continue
        cap = in_force[i]
        if decision.action == base.RELEASE:
            decided.add(i)
            if cap is not None:
                changes.append(Change(i, decision, None))
            continue
        if snapshot.stale[i] and (
                decision.iops < snapshot.cap_iops[i]
                or decision.bytes_sec < snapshot.cap_bytes_sec[i]):
            dropped.append(decision)
            continue
        limits = {k: v for k, v in decision.limits.items() if v}
        if cap is not None and limits == cap.limits and not decision.lift:
            continue   # unchanged: renewed below when due (never lifted)
        decided.add(i)
        changes.append(Change(i, decision, limits))
    renewals = tuple(
        i for i, cap in enumerate(in_force)
        if i not in decided and cap is not None
        and renew_due(cap.lease_expires_at, now, lease_s, interval_s))
    return Plan(changes=tuple(changes), renewals=renewals,
                dropped=tuple(dropped), unknown=tuple(unknown))
