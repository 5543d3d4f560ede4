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

"""Each disk's record, by the minute: its floor kept, its caps and why."""

from collections.abc import Sequence
import dataclasses
import datetime

import sqlalchemy as sa
from sqlalchemy import orm

from iotguard.db import models
from iotguard import exception


@dataclasses.dataclass(frozen=True)
class Minute:
    """One minute of one disk (``disk_id``: its row's id).

    ``seconds`` with fresh samples, of them ``floor_due_s`` with a floor,
    ``floor_kept_s`` where it was kept (delivered, or the demand met) and
    ``capped_s`` under a cap; the mean rates of those seconds; the reason
    of the cap in plain words; the floor in force (the minute's last) and
    the tightest cap of the minute, in IOPS and bytes/s (None: none).
    """

    disk_id: int
    minute: datetime.datetime
    seconds: float
    floor_due_s: float
    floor_kept_s: float
    capped_s: float
    iops: float
    bytes_sec: float
    cap_reason: str | None
    floor_iops: float | None = None
    floor_bytes_sec: float | None = None
    cap_iops: float | None = None
    cap_bytes_sec: float | None = None


_FIELDS = tuple(f.name for f in dataclasses.fields(Minute))


def _tightest(a: float | None, b: float | None) -> float | None:
    """The tighter of two caps (None: none)."""
    return b if a is None else a if b is None else min(a, b)


def add(session: orm.Session, minutes: Sequence[Minute]) -> None:
    """Store ``minutes``; one already stored (a takeover) is added to.

    Disks deleted meanwhile are skipped.
    """
    ids = {m.disk_id for m in minutes}
    known = set(session.scalars(sa.select(models.Disk.id).where(
        models.Disk.id.in_(ids))))
    # the rows already there, in one read (not one per minute)
    stored = {(r.disk_id, r.minute): r for r in session.scalars(
        sa.select(models.DiskMinute).where(
            models.DiskMinute.disk_id.in_(ids),
            models.DiskMinute.minute.in_({m.minute for m in minutes})))}
    for m in minutes:
        if m.disk_id not in known:
            continue
        row = stored.get((m.disk_id, m.minute))
        if row is None:
            session.add(models.DiskMinute(**dataclasses.asdict(m)))
            continue
        rates = row.seconds + m.seconds
        if rates:
            row.iops = (row.iops * row.seconds + m.iops * m.seconds) / rates
            row.bytes_sec = (row.bytes_sec * row.seconds
                             + m.bytes_sec * m.seconds) / rates
        for field in ('seconds', 'floor_due_s', 'floor_kept_s', 'capped_s'):
            setattr(row, field, getattr(row, field) + getattr(m, field))
        row.cap_reason = m.cap_reason or row.cap_reason
        row.floor_iops, row.floor_bytes_sec = m.floor_iops, m.floor_bytes_sec
        row.cap_iops = _tightest(row.cap_iops, m.cap_iops)
        row.cap_bytes_sec = _tightest(row.cap_bytes_sec, m.cap_bytes_sec)


def list_(session: orm.Session, instance_uuid: str, dev: str,
          since: datetime.datetime, until: datetime.datetime,
          project_id: str | None = None) -> list[Minute]:
    """The minutes of a disk in ``[since, until)``, oldest first.

    NotFound for a disk that does not exist or (``project_id``) is not
    the project's.
    """
    query = sa.select(models.Disk.id).where(
        models.Disk.instance_uuid == instance_uuid, models.Disk.dev == dev)
    if project_id is not None:
        query = query.where(models.Disk.project_id == project_id)
    disk_id = session.scalars(query).first()
    if disk_id is None:
        raise exception.NotFound(what='disk %s of instance %s'
                                 % (dev, instance_uuid))
    rows = session.scalars(sa.select(models.DiskMinute).where(
        models.DiskMinute.disk_id == disk_id,
        models.DiskMinute.minute >= since, models.DiskMinute.minute < until)
        .order_by(models.DiskMinute.minute))
    return [Minute(**models.row(r, _FIELDS)) for r in rows]


def purge(session: orm.Session, before: datetime.datetime) -> int:
    """Delete the minutes before ``before``; how many went."""
    return models.rowcount(session, sa.delete(models.DiskMinute).where(
        models.DiskMinute.minute < before))
