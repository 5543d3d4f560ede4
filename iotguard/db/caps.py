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

"""Caps in force: set, renewed, released, expired, read for a round."""

from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from iotguard.db import models
from iotguard.engine import plan
from iotguard import exception


@dataclasses.dataclass(frozen=True)
class InForce(plan.InForce):
    """The cap in force on a disk, as a round reads it.

    The planner's (lease in UNIX seconds), plus the decision that set it
    and when (``set_at``, UNIX seconds; None if unknown).
    """

    decision_id: int | None
    set_at: float | None


def ids_of(session: orm.Session, keys: Sequence[tuple[str, str]]
           ) -> dict[tuple[str, str], int]:
    """``{(instance_uuid, dev): disk id}``; NotFound if one is unknown."""
    uuids = sorted({k[0] for k in keys})
    found: dict[tuple[str, str], int] = {}
    for start in range(0, len(uuids), 500):
        found.update({(u, d): i for i, u, d in session.execute(
            sa.select(models.Disk.id, models.Disk.instance_uuid,
                      models.Disk.dev).where(
                models.Disk.instance_uuid.in_(uuids[start:start + 500])))
        })
    missing = [k for k in keys if k not in found]
    if missing:
        raise exception.NotFound(what='disk %s of instance %s' % (
            missing[0][1], missing[0][0]))
    return found


def delete_expired(session: orm.Session, now: datetime.datetime) -> int:
    """Drop the caps whose lease lapsed before ``now``; how many."""
    return models.rowcount(session, sa.delete(models.Cap).where(
        models.Cap.lease_expires_at < now))


def set_(session: orm.Session, caps: Sequence[Mapping[str, Any]]) -> int:
    """Record many caps in force in one transaction.

    Each: ``instance_uuid, dev, limits, lease_expires_at,
    decision_id``; a disk's cap replaces the one it had. NotFound (and
    nothing written) when a disk is unknown.
    """
    if not caps:
        return 0
    ids = ids_of(session, [(c['instance_uuid'], c['dev']) for c in caps])
    existing = {cap.disk_id: cap for cap in session.scalars(
        sa.select(models.Cap).where(models.Cap.disk_id.in_(
            sorted(set(ids.values())))))}
    now = models.utcnow()
    for item in caps:
        disk_id = ids[(item['instance_uuid'], item['dev'])]
        cap = existing.get(disk_id)
        if cap is None:
            cap = existing[disk_id] = models.Cap(disk_id=disk_id,
                                                 created_at=now)
            session.add(cap)
        else:
            cap.updated_at = now
        cap.limits = item['limits']
        cap.lease_expires_at = item['lease_expires_at']
        cap.decision_id = item['decision_id']
    return len(caps)


def release(session: orm.Session, disks: Collection[tuple[str, str]]
            ) -> int:
    """Forget the caps of many ``(instance_uuid, dev)``; how many."""
    if not disks:
        return 0
    ids = ids_of(session, list(disks))
    return models.rowcount(session, sa.delete(models.Cap).where(
        models.Cap.disk_id.in_(sorted(set(ids.values())))))


def renew(session: orm.Session, disk_ids: Iterable[int],
          lease_expires_at: datetime.datetime) -> int:
    """Extend the caps' lease of ``disk_ids`` (row ids); how many it did.

    A disk without a cap is skipped.
    """
    ids = sorted(set(disk_ids))
    if not ids:
        return 0
    renewed, now = 0, models.utcnow()
    for start in range(0, len(ids), 500):
        renewed += models.rowcount(session, sa.update(models.Cap).where(
            models.Cap.disk_id.in_(ids[start:start + 500])).values(
                lease_expires_at=lease_expires_at, updated_at=now))
    return renewed


def of_domains(session: orm.Session, domains: Iterable[str]
               ) -> dict[int, InForce]:
    """The caps in force in ``domains``: ``{disk id: InForce}``.

    With :func:`iotguard.db.disks.of_domains`, what a round reads; the
    only part of it a round must read every time.
    """
    disk, cap = models.Disk, models.Cap
    rows = session.execute(
        sa.select(cap.disk_id, cap.limits, cap.lease_expires_at,
                  cap.decision_id, models.Decision.created_at)
        .join(disk, disk.id == cap.disk_id)
        .join(models.Domain, models.Domain.id == disk.domain_id)
        .outerjoin(models.Decision,
                   models.Decision.id == cap.decision_id)
        .where(models.Domain.name.in_(sorted(set(domains))))).all()
    utc = datetime.timezone.utc
    return {r.disk_id: InForce(
        r.limits, r.lease_expires_at.replace(tzinfo=utc).timestamp(),
        r.decision_id,
        r.created_at and r.created_at.replace(tzinfo=utc).timestamp())
        for r in rows}
