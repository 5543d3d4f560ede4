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

"""The decisions' audit trail."""

from collections.abc import Mapping
from collections.abc import Sequence
import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from iotguard.db import models
from iotguard import exception

#: ``id`` and ``created_at``, then what :func:`create` takes.
FIELDS = ('id', 'created_at', 'domain', 'policy', 'instance_uuid', 'dev',
          'project_id', 'action', 'old_limits', 'new_limits', 'reason',
          'numbers')


def create(session: orm.Session, decisions: Sequence[Mapping[str, Any]]
           ) -> list[int]:
    """Append many decisions; their ids, in order.

    Each a dict of :data:`FIELDS` but ``id``; ``created_at`` is optional
    (default now).
    """
    if not decisions:
        return []
    rows = [models.Decision(
        created_at=d.get('created_at') or models.utcnow(),
        **{f: d[f] for f in FIELDS[2:]}) for d in decisions]
    session.add_all(rows)
    session.flush()
    return [row.id for row in rows]


def list_(session: orm.Session, limit: int, marker: int | None = None,
          instance_uuid: str | None = None, domain: str | None = None,
          since: datetime.datetime | None = None,
          project_id: str | None = None) -> list[dict[str, Any]]:
    """Newest first; ``marker`` is the id of the last one seen.

    An unknown marker (or one the project may not see) is NotFound.
    """
    decision = models.Decision
    query = sa.select(decision)
    if project_id is not None:
        query = query.where(decision.project_id == project_id)
    if marker is not None:
        seen = session.scalar(query.where(decision.id == marker))
        if seen is None:
            raise exception.NotFound(what='marker %s' % marker)
        query = query.where(decision.id < marker)
    if instance_uuid is not None:
        query = query.where(decision.instance_uuid == instance_uuid)
    if domain is not None:
        query = query.where(decision.domain == domain)
    if since is not None:
        query = query.where(decision.created_at >= since)
    rows = session.scalars(query.order_by(decision.id.desc()).limit(
        limit)).all()
    return [models.row(r, FIELDS) for r in rows]


def get(session: orm.Session, decision_id: int,
        project_id: str | None = None) -> dict[str, Any]:
    """One decision; NotFound if unknown or not ``project_id``'s."""
    decision = models.Decision
    query = sa.select(decision).where(decision.id == decision_id)
    if project_id is not None:
        query = query.where(decision.project_id == project_id)
    row = session.scalar(query)
    if row is None:
        raise exception.NotFound(what='decision %s' % decision_id)
    return models.row(row, FIELDS)
