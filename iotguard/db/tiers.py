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

"""Tiers and the projects that may use a private one."""

from collections.abc import Collection
from collections.abc import Mapping
import dataclasses
import datetime
from typing import Any

from oslo_db import exception as db_exc
import sqlalchemy as sa
from sqlalchemy import orm

from iotguard.db import models
from iotguard import exception
from iotguard.policy import base

FIELDS = ('name', 'description', 'min_iops', 'min_bytes_sec',
          'max_iops', 'max_bytes_sec', 'weight', 'is_public', *base.PER_GB,
          *base.BURST, 'latency_p99_ms')
#: The fields of the core's Tier.
_CORE = tuple(f.name for f in dataclasses.fields(base.Tier))


@dataclasses.dataclass(frozen=True)
class Tier(base.Tier):
    """A tier as the database keeps it: the core's and what tenants see.

    ``projects``: those that may use it when it is private.
    """

    description: str = ''
    is_public: bool = True
    projects: tuple[str, ...] = ()
    created_at: datetime.datetime | None = None
    updated_at: datetime.datetime | None = None


def _view(tier: models.Tier, projects: Collection[str]) -> Tier:
    return Tier(projects=tuple(sorted(projects)), **models.row(
        tier, FIELDS + ('created_at', 'updated_at')))


def record(tier: models.Tier) -> base.Tier:
    """A tier row as the core's :class:`iotguard.policy.base.Tier`."""
    return base.Tier(**models.row(tier, _CORE))


def tier_row(session: orm.Session, name: str,
             project_id: str | None = None) -> models.Tier:
    """The tier, if ``project_id`` (when given) may use it."""
    tier = session.scalars(visible(sa.select(models.Tier).where(
        models.Tier.name == name), project_id)).first()
    if tier is None:
        raise exception.NotFound(what='tier %s' % name)
    return tier


def _projects(session: orm.Session, tier_ids: list[int]
              ) -> dict[int, list[str]]:
    projects: dict[int, list[str]] = {tier_id: [] for tier_id in tier_ids}
    if tier_ids:
        rows = session.execute(sa.select(
            models.TierProject.tier_id, models.TierProject.project_id
        ).where(models.TierProject.tier_id.in_(tier_ids)))
        for tier_id, project_id in rows:
            projects[tier_id].append(project_id)
    return projects


def visible(query: sa.Select[models.Tier], project_id: str | None
            ) -> sa.Select[models.Tier]:
    """query of tiers narrowed to those project_id may use."""
    if project_id is None:
        return query
    granted = sa.select(models.TierProject.tier_id).where(
        models.TierProject.project_id == project_id)
    return query.where(sa.or_(models.Tier.is_public.is_(True),
                              models.Tier.id.in_(granted)))


def _save(session: orm.Session, tier: models.Tier,
          projects: Collection[str] | None, name: str | None
          ) -> Tier:
    """Write ``tier`` and (unless None) the projects that may use it."""
    try:
        session.flush()
        if projects is not None:
            session.execute(sa.delete(models.TierProject).where(
                models.TierProject.tier_id == tier.id))
            session.add_all([models.TierProject(tier_id=tier.id, project_id=p)
                             for p in set(projects)])
            session.flush()
    except db_exc.DBDuplicateEntry:
        raise exception.Conflict(reason='tier %s already exists' % name)
    return _view(tier, _projects(session, [tier.id])[tier.id])


def create(session: orm.Session, values: Mapping[str, Any],
           projects: Collection[str] = ()) -> Tier:
    """Create a tier; ``projects`` may use it when it is private."""
    tier = models.Tier(created_at=models.utcnow(), **values)
    session.add(tier)
    return _save(session, tier, projects, values.get('name'))


def get(session: orm.Session, name: str, project_id: str | None = None
        ) -> Tier:
    """One tier; a project only gets the tiers it may use."""
    tier = tier_row(session, name, project_id)
    return _view(tier, _projects(session, [tier.id])[tier.id])


def list_(session: orm.Session, project_id: str | None = None
          ) -> list[Tier]:
    """Every tier (``project_id=None``) or those a project may use."""
    tiers = session.scalars(visible(
        sa.select(models.Tier), project_id).order_by(
            models.Tier.name)).all()
    projects = _projects(session, [t.id for t in tiers])
    return [_view(t, projects[t.id]) for t in tiers]


def update(session: orm.Session, name: str, values: Mapping[str, Any],
           projects: Collection[str] | None = None) -> Tier:
    """Change a tier; ``projects`` (when given) replaces its list."""
    tier = tier_row(session, name)
    for key, value in values.items():
        setattr(tier, key, value)
    tier.updated_at = models.utcnow()
    return _save(session, tier, projects, values.get('name'))


def delete(session: orm.Session, default_tier: str | None, name: str) -> None:
    """Delete a tier that no disk uses, nor the default (Conflict)."""
    tier = tier_row(session, name)
    users = session.scalars(sa.select(sa.func.count()).where(
        models.DiskTier.tier_id == tier.id)).one()
    if users or name == default_tier:
        raise exception.Conflict(
            reason='tier %s is in use (%d tier choices%s)' % (
                name, users, ', and it is [tiers] default_tier'
                if name == default_tier else ''))
    session.delete(tier)
