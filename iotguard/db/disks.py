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

"""Disks, their tier choices and refusals, and the admission transaction.

Which tier a disk has is :func:`iotguard.db.tiering.resolve`'s to say.
"""

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import datetime
import json
import math
import sys
from typing import Any

from oslo_db import exception as db_exc
import sqlalchemy as sa
from sqlalchemy.dialects.mysql import base as mysql_base
from sqlalchemy import orm

from iotguard.db import domains
from iotguard.db import models
from iotguard.db import tiering
from iotguard.db import tiers
from iotguard import exception
from iotguard.policy import admission
from iotguard.policy import base
from iotguard.wire import rates as rates_mod

_RATE_FIELDS = rates_mod.DISK_FIELDS


#: Disks' rates per statement of :func:`rates_update`
#: (about 100 bytes each on the wire).
RATES_CHUNK = 10000

Rows = Sequence[Mapping[str, Any]]
#: ``admit(tier, domain, others, before, after)`` of :func:`instance_tier_set`
Admit = Callable[[str, admission.Domain, list[base.Tier], list[base.Tier],
                  list[base.Tier]], dict[str, Any]]
#: A project's limits on its floors: (instance, owner, the chosen tier, the
#: owner's disks as :func:`list_` gives them); raises to refuse.
Limit = Callable[[str, str, base.Tier, list[dict[str, Any]]], None]


def _rates_executemany(session: orm.Session, fields: Sequence[str],
                       rows: Rows) -> None:
    table = models.Base.metadata.tables['disks']
    statement = table.update().where(
        table.c.id == sa.bindparam('b_id')).values(
            {f: sa.bindparam('b_' + f) for f in fields})
    session.execute(statement, [dict({'b_' + f: row.get(f) for f in fields},
                                     b_id=row['id']) for row in rows])


def _rates_postgresql(session: orm.Session, fields: Sequence[str],
                      rows: Rows) -> None:
    """One UPDATE of ``rows`` from arrays, a column each (PostgreSQL)."""
    types = dict.fromkeys(fields, 'DOUBLE PRECISION[]')
    types.update(id='INTEGER[]', sampled_at='TIMESTAMP[]')
    columns = ('id',) + tuple(fields)
    session.execute(sa.text(
        'UPDATE disks SET %s FROM unnest(%s) AS v(%s) WHERE disks.id = v.id'
        % (', '.join('%s = v.%s' % (f, f) for f in fields),
           ', '.join('CAST(:%s AS %s)' % (c, types[c]) for c in columns),
           ', '.join(columns))),
        {c: [row.get(c) for row in rows] for c in columns})


def _has_json_table(dialect: mysql_base.MySQLDialect) -> bool:
    version = dialect.server_version_info or ()
    return version >= ((10, 6) if dialect.is_mariadb else (8, 0, 4))


def _json_value(value: object) -> object:
    if isinstance(value, datetime.datetime):
        return value.isoformat(' ')
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _rates_mysql(session: orm.Session, fields: Sequence[str],
                 rows: Rows) -> None:
    """One UPDATE of ``rows`` joined to them as JSON (MySQL, MariaDB)."""
    types = dict.fromkeys(fields, 'DOUBLE')
    types.update(id='INTEGER', sampled_at='DATETIME(6)')
    columns = ('id',) + tuple(fields)
    session.execute(sa.text(
        "UPDATE disks JOIN JSON_TABLE(:rows, '$[*]' COLUMNS (%s)) AS v "
        'ON disks.id = v.id SET %s'
        % (', '.join("%s %s PATH '$[%d]'" % (c, types[c], i)
                     for i, c in enumerate(columns)),
           ', '.join('disks.%s = v.%s' % (f, f) for f in fields))),
        {'rows': json.dumps([[_json_value(row.get(c)) for c in columns]
                             for row in rows])})


def _check_source(source: str) -> None:
    if source not in tiering.TIER_SOURCES:
        raise exception.Invalid(reason='unknown tier source %r' % source)


def _owner(instance_uuid: str, owners: set[str],
           project_id: str | None = None) -> str:
    """The project owning an instance's disks (``owners``, a set).

    NotFound when iotguard knows no disk of it, or ``project_id`` (when
    given) does not own it: a project never learns of another's instance.
    """
    if not owners or (project_id is not None and owners != {project_id}):
        raise exception.NotFound(what='instance %s' % instance_uuid)
    return next(iter(owners))


def upsert(session: orm.Session, instance_uuid: str, dev: str, host: str,
           domain: str, project_id: str, volume_id: str | None = None,
           size_gib: int | None = None) -> None:
    """Record where a disk lives (membership).

    ``size_gib`` is that of a new disk: a known disk changes size through
    :func:`size_set` (admission).
    """
    domain_id = domains.domain_row(session, domain).id
    disk = models.find_or_add(session, models.Disk,
                              instance_uuid=instance_uuid, dev=dev)
    disk.host, disk.domain_id = host, domain_id
    disk.project_id, disk.volume_id = project_id, volume_id
    if disk.id is None:
        disk.size_gib = size_gib


def _the(instance_uuid: str, dev: str) -> sa.ColumnElement[bool]:
    """The condition that picks one disk."""
    return sa.and_(models.Disk.instance_uuid == instance_uuid,
                   models.Disk.dev == dev)


def _missing(instance_uuid: str, dev: str) -> exception.NotFound:
    return exception.NotFound(
        what='disk %s of instance %s' % (dev, instance_uuid))


def delete(session: orm.Session, instance_uuid: str, dev: str) -> None:
    if not models.rowcount(session, sa.delete(models.Disk).where(
            _the(instance_uuid, dev))):
        raise _missing(instance_uuid, dev)


def tier_set(session: orm.Session, instance_uuid: str, dev: str, tier: str,
             source: str, project_id: str) -> None:
    """Record a tier choice from a flavor or volume type (no admission).

    The API's tenant choices go through :func:`instance_tier_set`.
    """
    _check_source(source)
    tier_id = tiers.tier_row(session, tier).id
    row = models.find_or_add(session, models.DiskTier,
                             instance_uuid=instance_uuid, dev=dev,
                             source=source)
    row.tier_id, row.project_id = tier_id, project_id


def _tier_of(choices: Mapping[tiering.Key, base.Tier],
             default: base.Tier | None, disk: Any,
             refusals: Mapping[tiering.Key, Any] | None = None
             ) -> tuple[base.Tier | None, str | None, Any]:
    """:func:`tiering.resolve`'s, the tier priced at the disk's size.

    ``disk`` has ``size_gib`` too (:meth:`iotguard.policy.base.Tier.at`).
    """
    tier, source, refused = tiering.resolve(choices, default, disk, refusals)
    return (tier.at(disk.size_gib) if tier else None), source, refused


def effective_tiers(session: orm.Session,
                    instance_uuids: Iterable[str] | sa.Select[str],
                    default_tier: str | None
                    ) -> tuple[dict[tiering.Key, base.Tier], base.Tier | None]:
    """{(instance_uuid, dev or '*', source): Tier} and the default Tier.

    ``instance_uuids``: a list, or a select of them (a domain's
    instances, read in the same query).
    """
    choices: dict[tiering.Key, base.Tier] = {}
    uuids = (instance_uuids if isinstance(instance_uuids, sa.Select)
             else sorted(set(instance_uuids)) or None)
    if uuids is not None:
        # Plain rows, and each tier read once: a domain may hold
        # thousands of choices among a handful of tiers.
        rows = session.execute(
            sa.select(models.DiskTier.instance_uuid, models.DiskTier.dev,
                      models.DiskTier.source, models.DiskTier.tier_id)
            .where(models.DiskTier.instance_uuid.in_(uuids))).all()
        by_id = {t.id: tiers.record(t) for t in session.scalars(
            sa.select(models.Tier).where(models.Tier.id.in_(
                {r.tier_id for r in rows})))} if rows else {}
        for instance_uuid, dev, source, tier_id in rows:
            choices[(instance_uuid, dev, source)] = by_id[tier_id]
    tier = session.scalars(sa.select(models.Tier).where(
        models.Tier.name == default_tier)).first() if default_tier else None
    return choices, tiers.record(tier) if tier is not None else None


def list_(session: orm.Session, default_tier: str | None,
          instance_uuid: str | None = None, domain: str | None = None,
          project_id: str | None = None, volume_id: str | None = None
          ) -> list[dict[str, Any]]:
    """Disks as dicts, filtered: where, tier (and its source), rates, cap."""
    query = sa.select(models.Disk).order_by(
        models.Disk.instance_uuid, models.Disk.dev)
    if instance_uuid is not None:
        query = query.where(models.Disk.instance_uuid == instance_uuid)
    if volume_id is not None:
        query = query.where(models.Disk.volume_id == volume_id)
    if domain is not None:
        query = query.where(models.Disk.domain_id
                            == domains.domain_row(session, domain).id)
    if project_id is not None:
        query = query.where(models.Disk.project_id == project_id)
    disks = session.scalars(query).all()
    if not disks:
        return []
    uuids = sorted({d.instance_uuid for d in disks})
    choices, default = effective_tiers(session, uuids, default_tier)
    refusals = {(r.instance_uuid, r.dev, r.source): {
        'tier': r.tier, 'source': r.source, 'reason': r.reason,
        'since': r.created_at} for r in session.scalars(
            sa.select(models.TierRefusal).where(
                models.TierRefusal.instance_uuid.in_(uuids)))}
    names = dict(session.execute(sa.select(
        models.Domain.id, models.Domain.name).where(models.Domain.id.in_(
            {d.domain_id for d in disks}))).tuples().all())
    caps = {cap.disk_id: {'limits': cap.limits,
                          'lease_expires_at': cap.lease_expires_at,
                          'decision_id': cap.decision_id, 'reason': reason}
            for cap, reason in session.execute(
                sa.select(models.Cap, models.Decision.reason)
                .outerjoin(models.Decision,
                           models.Decision.id == models.Cap.decision_id)
                .where(models.Cap.disk_id.in_([d.id for d in disks])))}
    out = []
    for disk in disks:
        tier, source, refused = _tier_of(choices, default, disk, refusals)
        view = models.row(disk, ('id', 'instance_uuid', 'dev', 'host',
                                 'volume_id', 'project_id', 'sampled_at',
                                 'size_gib', 'size_refused')
                          + _RATE_FIELDS)
        view.update(size_refused=disk.size_refused or None,
                    domain=names[disk.domain_id], tier=tier,
                    tier_source=source, tier_refused=refused,
                    cap=caps.get(disk.id))
        out.append(view)
    return out


def _lock_domains(session: orm.Session, disks: sa.ColumnElement[bool]
                  ) -> dict[int, models.Domain]:
    """Write-lock the domains of the ``disks`` (a condition); by id.

    With an update that changes nothing, before reading anything else: a
    row lock on PostgreSQL and MySQL / MariaDB (whose REPEATABLE READ
    snapshot is then taken after it), the database write lock on SQLite. A
    choice that held the lock before has committed when the reads run.
    """
    mine = models.Domain.id.in_(sa.select(models.Disk.domain_id).where(
        disks))
    session.execute(
        sa.update(models.Domain).where(mine).values(
            updated_at=models.Domain.updated_at)
        .execution_options(synchronize_session=False))
    return {d.id: d for d in session.scalars(
        sa.select(models.Domain).where(mine))}


def _members(session: orm.Session, domain_id: int, default_tier: str | None
             ) -> tuple[Sequence[Any], dict[tiering.Key, base.Tier],
                        base.Tier | None]:
    """A domain's disks, their tier choices and the default tier.

    Plain rows (what :func:`_tier_of` reads), not ORM objects: a domain
    may hold thousands of disks.
    """
    members = session.execute(sa.select(
        models.Disk.instance_uuid, models.Disk.dev, models.Disk.volume_id,
        models.Disk.size_gib).where(
            models.Disk.domain_id == domain_id)).all()
    choices, default = effective_tiers(
        session, sa.select(models.Disk.instance_uuid).where(
            models.Disk.domain_id == domain_id), default_tier)
    return members, choices, default


def instance_tier_set(session: orm.Session, default_tier: str | None,
                      instance_uuid: str, tier: str, admit: Admit,
                      project_id: str | None = None, source: str = 'api',
                      dev: str = tiering.ALL_DISKS,
                      limit: Limit | None = None) -> dict[str, Any]:
    """A tier choice for an instance's disks, admission first.

    ``source``: ``api`` (a tenant's, for every disk), ``flavor`` or
    ``volume_type`` (``dev``: the volume's disk). The choice replaces the
    source's refusal, if any.

    The domains involved are locked: for each holding a disk the choice
    applies to, ``admit(tier, domain, others, before, after)`` gets the
    domain dict and Tier records (the domain's other disks; the disks the
    choice applies to, before and after) and returns the numbers to
    report, or raises and nothing is written. ``project_id`` (when given)
    must own the instance and be allowed the tier, else NotFound.

    ``limit(instance_uuid, owner, tier, disks)`` (the project's unified
    limits, :mod:`iotguard.api.limits`) gets the owner's disks as
    :func:`list_` reads them and raises to refuse, before admission and
    under the same locks: with it, every domain holding a disk of the
    owner is locked, so that two choices of one project, in one domain or
    in two, are checked against its limits one after the other.
    """
    _check_source(source)
    mine = models.Disk.instance_uuid == instance_uuid
    if limit is not None:
        mine = models.Disk.project_id.in_(sa.select(
            models.Disk.project_id).where(mine))
    locked = _lock_domains(session, mine)
    disks = session.scalars(sa.select(models.Disk).where(
        models.Disk.instance_uuid == instance_uuid).order_by(
            models.Disk.dev)).all()
    owner = _owner(instance_uuid, {d.project_id for d in disks},
                   project_id)
    new = tiers.tier_row(session, tier, owner)
    new_tier = tiers.record(new)
    if limit is not None:
        limit(instance_uuid, owner, new_tier,
              list_(session, default_tier, project_id=owner))

    def concerned(disk: models.Disk | sa.Row[str, str, str | None]) -> bool:
        return (disk.instance_uuid == instance_uuid
                and dev in (tiering.ALL_DISKS, disk.dev)
                and tiering.source_applies(source, disk.volume_id))

    numbers = []
    domain_ids = sorted({d.domain_id for d in disks if concerned(d)})
    for domain_id in domain_ids:
        domain = locked.get(domain_id)
        if domain is None:
            raise exception.Conflict(
                reason='a disk of instance %s moved to another '
                       'domain meanwhile; try again' % instance_uuid)
        members, choices, default = _members(session, domain_id,
                                             default_tier)
        changed = dict(choices)
        changed[(instance_uuid, dev, source)] = new_tier
        others, before, after = [], [], []
        for member in members:
            current = _tier_of(choices, default, member)[0]
            if concerned(member):
                before.append(current)
                after.append(_tier_of(changed, default, member)[0])
            else:
                others.append(current)
        record = domains.record(domain)
        if any(t and t.latency_p99_ms for t in after):
            record = dataclasses.replace(record, service_ratio=(
                domains.service_ratio(session, domain.name)))
        numbers.append(admit(
            tier, record,
            [t for t in others if t], [t for t in before if t],
            [t for t in after if t]))
    tier_choice_unset(session, instance_uuid, source, dev)
    session.add(models.DiskTier(
        instance_uuid=instance_uuid, dev=dev,
        source=source, tier_id=new.id, project_id=owner,
        created_at=models.utcnow()))
    return {'instance_uuid': instance_uuid, 'tier': tier,
            'project_id': owner, 'admission': numbers}


def size_set(session: orm.Session, default_tier: str | None,
             instance_uuid: str, dev: str, size_gib: int, admit: Admit
             ) -> dict[str, Any] | None:
    """A disk's new size, its tier admitted again when that moves a floor.

    The disk's domain is locked as for :func:`instance_tier_set`;
    ``admit`` gets the disk's tier priced at the size before and after.
    Returns its numbers (None when no floor moved), or raises and nothing
    is written. Written, the size drops the disk's size refusal.
    """
    locked = _lock_domains(session, _the(instance_uuid, dev))
    disk = session.scalars(sa.select(models.Disk).where(
        _the(instance_uuid, dev))).first()
    if disk is None or disk.domain_id not in locked:
        raise _missing(instance_uuid, dev)
    members, choices, default = _members(session, disk.domain_id,
                                         default_tier)
    tier = tiering.resolve(choices, default, disk)[0]
    numbers = None
    if tier is not None and tier.at(disk.size_gib) != tier.at(size_gib):
        others = [_tier_of(choices, default, m)[0] for m in members
                  if (m.instance_uuid, m.dev) != (instance_uuid, dev)]
        numbers = admit(tier.name, domains.record(locked[disk.domain_id]),
                        [t for t in others if t], [tier.at(disk.size_gib)],
                        [tier.at(size_gib)])
    disk.size_gib, disk.size_refused = size_gib, None
    disk.updated_at = models.utcnow()    # the controller reads it again
    return numbers


def size_refusal_set(session: orm.Session, instance_uuid: str, dev: str,
                     size_gib: int, reason: str) -> bool:
    """Record that admission refused a disk's larger size.

    The disk keeps the size its floor was admitted at. True when this is
    news (no refusal of that size was recorded), to notify once.
    """
    disk = session.scalars(sa.select(models.Disk).where(
        _the(instance_uuid, dev))).first()
    if disk is None:
        raise _missing(instance_uuid, dev)
    refused = disk.size_refused or {}
    if refused.get('size_gib') == size_gib:
        return False
    disk.size_refused = {'size_gib': size_gib, 'reason': reason[:255],
                         'since': models.utcnow().isoformat()}
    return True


def tier_choice_unset(session: orm.Session, instance_uuid: str, source: str,
                      dev: str | None = None) -> None:
    """Drop a source's choice and refusal (for ``dev``, or all)."""
    for table in (models.DiskTier, models.TierRefusal):
        query = sa.delete(table).where(
            table.instance_uuid == instance_uuid, table.source == source)
        if dev is not None:
            query = query.where(table.dev == dev)
        session.execute(query)


def tier_refusal_set(session: orm.Session, instance_uuid: str, dev: str,
                     source: str, tier: str, reason: str, project_id: str
                     ) -> bool:
    """Record that admission refused ``tier`` from ``source``.

    The source's choice for the disk (if any) goes: the disk falls back
    to the weaker sources. Returns True when this is news (no refusal
    of the same tier was recorded), for the caller to notify once.
    """
    reason = reason[:255]
    session.execute(sa.delete(models.DiskTier).where(
        models.DiskTier.instance_uuid == instance_uuid,
        models.DiskTier.dev == dev,
        models.DiskTier.source == source))
    row = models.find_or_add(session, models.TierRefusal,
                             instance_uuid=instance_uuid, dev=dev,
                             source=source)
    news = row.tier != tier
    if news:
        row.created_at = models.utcnow()
    row.tier, row.reason, row.project_id = tier, reason, project_id
    return news


@dataclasses.dataclass(frozen=True, slots=True)
class Member:
    """A disk of a domain, as a round needs it (no rates, no cap).

    ``tier`` and ``tier_source``: as :func:`tiering.resolve` gives them.
    """

    id: int
    instance_uuid: str
    dev: str
    host: str
    project_id: str
    volume_id: str | None
    domain: str
    tier: base.Tier | None
    tier_source: str | None


def of_domains(session: orm.Session, default_tier: str | None,
               domain_names: Iterable[str]) -> dict[str, list[Member]]:
    """The disks of many domains as a round needs them, in one read.

    ``{name: [Member]}``, each list ordered by instance and device; the
    tier resolved as for :func:`list_`, the caps in force apart
    (:func:`iotguard.db.caps.of_domains`). The same queries whatever the
    number of domains; NotFound when one is unknown.
    """
    disk = models.Disk
    names = sorted(set(domain_names))
    if not names:
        return {}
    ids = dict(session.execute(
        sa.select(models.Domain.id, models.Domain.name).where(
            models.Domain.name.in_(names))).tuples().all())
    if len(ids) < len(names):
        raise exception.NotFound(what='domain %s' % sorted(
            set(names) - set(ids.values()))[0])
    rows = session.execute(
        sa.select(disk.id, disk.instance_uuid, disk.dev, disk.host,
                  disk.project_id, disk.volume_id, disk.domain_id,
                  disk.size_gib)
        .where(disk.domain_id.in_(list(ids)))
        .order_by(disk.instance_uuid, disk.dev)).all()
    choices, default = effective_tiers(
        session, sa.select(disk.instance_uuid).where(
            disk.domain_id.in_(list(ids))), default_tier)
    chosen = {key[0] for key in choices}
    default_source = 'default' if default else None
    out: dict[str, list[Member]] = {name: [] for name in names}
    for r in rows:
        # Most disks have no choice of their own: the default tier.
        if r.instance_uuid in chosen:
            tier, source, _refused = _tier_of(choices, default, r)
        else:
            tier = default.at(r.size_gib) if default else None
            source = default_source
        name = ids[r.domain_id]
        out[name].append(Member(
            r.id, r.instance_uuid, r.dev, r.host, r.project_id, r.volume_id,
            name, tier, source))
    return out


def version(session: orm.Session) -> tuple[tuple[Any, ...], ...]:
    """What changes whenever :func:`of_domains`' answer may have.

    Counts, largest ids, id sums and latest times of the disks, tier
    choices and tiers: the controller reads the disks again only when
    these changed.
    """
    return tuple(tuple(session.execute(sa.select(
        sa.func.count(), sa.func.max(table.id), sa.func.sum(table.id),
        sa.func.max(table.created_at), sa.func.max(table.updated_at))).one())
        for table in (models.Disk, models.DiskTier, models.Tier))


def rates_update(session: orm.Session, rates: Rows) -> int:
    """Store the latest rates of many disks at once (by disk id).

    Each item: ``id``, ``sampled_at`` and any of :data:`_RATE_FIELDS` (a
    missing one is written as NULL). Returns how many disks were given
    (an unknown id is skipped).

    A round writes tens of thousands, and psycopg2 and PyMySQL run an
    executemany as one round trip per row: so one statement per
    :data:`RATES_CHUNK` disks, ``UPDATE ... FROM unnest(arrays)`` on
    PostgreSQL, ``UPDATE ... JOIN JSON_TABLE(...)`` where MySQL / MariaDB
    have it (a rate that is not finite is written as NULL there: MySQL's
    doubles cannot hold it), an executemany elsewhere (SQLite).
    """
    if not rates:
        return 0
    allowed = set(_RATE_FIELDS) | {'id', 'sampled_at'}
    for row in rates:
        unknown = set(row) - allowed
        if unknown:
            raise exception.Invalid(reason='unknown rates %s'
                                    % sorted(unknown))
    fields = ('sampled_at',) + _RATE_FIELDS
    dialect = session.get_bind().dialect
    if dialect.name == 'postgresql':
        write = _rates_postgresql
    elif (isinstance(dialect, mysql_base.MySQLDialect)
          and _has_json_table(dialect)):
        write = _rates_mysql
    else:
        write = _rates_executemany
    for start in range(0, len(rates), RATES_CHUNK):
        write(session, fields, rates[start:start + RATES_CHUNK])
    return len(rates)


def bulk_insert(session: orm.Session, disks: Rows) -> int:
    """Insert many new disks in one statement (benchmarks, imports).

    Each is a dict ``instance_uuid, dev, host, domain, project_id``
    (and optionally ``volume_id``); an unknown domain is NotFound, a
    disk that exists already Conflict. Returns how many were inserted.
    """
    if not disks:
        return 0
    try:
        ids = dict(session.execute(sa.select(
            models.Domain.name, models.Domain.id)).tuples().all())
        now = models.utcnow()
        rows = []
        for disk in disks:
            if disk['domain'] not in ids:
                raise exception.NotFound(
                    what='domain %s' % disk['domain'])
            rows.append({
                'instance_uuid': disk['instance_uuid'],
                'dev': disk['dev'], 'host': disk['host'],
                'domain_id': ids[disk['domain']],
                'project_id': disk['project_id'],
                'volume_id': disk.get('volume_id'),
                'created_at': now})
        session.execute(sa.insert(models.Disk), rows)
        return len(rows)
    except db_exc.DBDuplicateEntry:
        raise exception.Conflict(reason='a disk exists already')


def sizes(session: orm.Session, instance_uuids: Iterable[str]
          ) -> dict[tuple[str, str], int | None]:
    """``{(instance_uuid, dev): size_gib}`` of the instances' disks."""
    return {(u, d): size for u, d, size in session.execute(sa.select(
        models.Disk.instance_uuid, models.Disk.dev, models.Disk.size_gib
    ).where(models.Disk.instance_uuid.in_(list(instance_uuids))))}


def tier_requests(session: orm.Session, source: str,
                  instance_uuids: Iterable[str]
                  ) -> dict[tuple[str, str], tuple[str, str]]:
    """What ``source`` asked for the instances' disks.

    ``{(instance_uuid, dev or '*'): (tier name, state)}``, ``state``
    ``admitted`` or ``refused``.
    """
    uuids = list(instance_uuids)
    admitted = session.execute(
        sa.select(models.DiskTier.instance_uuid, models.DiskTier.dev,
                  models.Tier.name)
        .join(models.Tier, models.Tier.id == models.DiskTier.tier_id)
        .where(models.DiskTier.source == source,
               models.DiskTier.instance_uuid.in_(uuids)))
    refused = session.execute(
        sa.select(models.TierRefusal.instance_uuid,
                  models.TierRefusal.dev, models.TierRefusal.tier)
        .where(models.TierRefusal.source == source,
               models.TierRefusal.instance_uuid.in_(uuids)))
    found = {(u, d): (t, 'refused') for u, d, t in refused}
    found.update({(u, d): (t, 'admitted') for u, d, t in admitted})
    return found


def instance_tier_unset(session: orm.Session, instance_uuid: str,
                        project_id: str | None = None) -> str:
    """Drop the API's choice for every disk of an instance.

    Its disks fall back to the other sources or the default tier; no
    admission is needed to lower floors. Returns the owner's project id;
    NotFound as :func:`_owner`.
    """
    owner = _owner(instance_uuid, set(session.scalars(
        sa.select(models.Disk.project_id).where(
            models.Disk.instance_uuid == instance_uuid))), project_id)
    tier_choice_unset(session, instance_uuid, 'api')
    return owner


def tier_choices_forget(session: orm.Session,
                        instance_uuids: Iterable[str] | None = None,
                        keep: Iterable[str] | None = None,
                        before: datetime.datetime | None = None) -> int:
    """Drop the tier choices of instances that no longer exist.

    Either of ``instance_uuids`` (those instances), or of every
    instance not in ``keep`` whose choice was made before ``before``
    (a full resync: a choice made meanwhile for a server the listing
    did not show yet stays). Returns how many were dropped.
    """
    dropped = 0
    for table in (models.DiskTier, models.TierRefusal):
        query = sa.delete(table)
        if instance_uuids is not None:
            query = query.where(
                table.instance_uuid.in_(list(instance_uuids)))
        else:
            query = query.where(
                table.instance_uuid.not_in(list(keep or ())),
                table.created_at < before)
        dropped += models.rowcount(session, query)
    return dropped


def index(session: orm.Session) -> dict[tuple[str, str], tuple[str, str]]:
    """``{(instance_uuid, dev): (domain, host)}`` of every disk.

    One light query for the controller's routing of samples. Every
    controller holds it whole, so the disks share one ``(domain, host)``
    tuple per pair and one string per device name (with the controller's
    map of devices, 283 bytes a disk instead of 671: 100,000 disks, 50 a
    host).
    """
    rows = session.execute(sa.select(
        models.Disk.instance_uuid, models.Disk.dev,
        models.Domain.name, models.Disk.host).join(
            models.Domain, models.Domain.id == models.Disk.domain_id))
    pairs: dict[tuple[str, str], tuple[str, str]] = {}
    return {(u, sys.intern(d)): pairs.setdefault((domain, host),
                                                 (domain, host))
            for u, d, domain, host in rows}
