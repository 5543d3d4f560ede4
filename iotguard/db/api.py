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

"""Every query iotguard makes, behind one object.

``Connection(conf)`` owns its own enginefacade transaction context
(configured from ``[database]``; nothing global), opens no connection until
the first query, and returns plain dicts: no session or model object leaves
this module. Duplicates raise :class:`iotguard.exception.Conflict`, missing
rows :class:`iotguard.exception.NotFound`.
"""

import datetime
import json
import math
import sys
import types

from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
import sqlalchemy as sa

from iotguard.db import models
from iotguard import exception

#: enginefacade options that oslo.db's [database] group has but
#: configure() does not take.
_NOT_FOR_FACADE = ('backend', 'db_max_retries', 'db_inc_retry_interval',
                   'use_db_reconnect', 'db_retry_interval',
                   'db_max_retry_interval', 'mysql_enable_ndb',
                   'asyncio_connection', 'asyncio_slave_connection')

_TIER_FIELDS = ('name', 'description', 'min_iops', 'min_bytes_sec',
                'max_iops', 'max_bytes_sec', 'weight', 'is_public')
#: The estimator's fit, as the ``learned_*`` columns of a domain.
LEARNED_FIELDS = ('form', 'iops_4k', 'bytes_sec', 'error', 'intervals',
                  'mixes', 'confidence', 'identified')
_DOMAIN_FIELDS = ('name', 'kind', 'iops_4k', 'bytes_sec', 'policy',
                  'params', 'form', 'profile_source') + tuple(
                      'learned_' + f for f in LEARNED_FIELDS) + (
                          'learned_at',)
_DECISION_FIELDS = ('id', 'created_at', 'domain', 'policy', 'instance_uuid',
                    'dev', 'project_id', 'action', 'old_limits',
                    'new_limits', 'reason', 'numbers')
_AGENT_FIELDS = ('host', 'driver', 'version', 'last_heartbeat', 'interval_s',
                 'disks', 'caps', 'created_at')
_RATE_FIELDS = ('read_iops', 'write_iops', 'read_bytes_sec',
                'write_bytes_sec', 'latency_ms')


#: Disks' rates per statement of :meth:`Connection.disk_rates_bulk_update`
#: (about 100 bytes each on the wire).
RATES_CHUNK = 10000


def _rates_executemany(session, fields, rows):
    table = models.Disk.__table__
    statement = table.update().where(
        table.c.id == sa.bindparam('b_id')).values(
            {f: sa.bindparam('b_' + f) for f in fields})
    session.execute(statement, [dict({'b_' + f: row.get(f) for f in fields},
                                     b_id=row['id']) for row in rows])


def _rates_postgresql(session, fields, rows):
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


def _has_json_table(dialect):
    version = dialect.server_version_info or ()
    return version >= ((10, 6) if dialect.is_mariadb else (8, 0, 4))


def _json_value(value):
    if isinstance(value, datetime.datetime):
        return value.isoformat(' ')
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _rates_mysql(session, fields, rows):
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


def utcnow():
    """Naive UTC now, the form every datetime column holds."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _row(obj, fields):
    return {f: getattr(obj, f) for f in fields}


def _tier_dict(tier, projects):
    result = _row(tier, ('id',) + _TIER_FIELDS + ('created_at',
                                                  'updated_at'))
    result['projects'] = sorted(projects)
    return result


def _owner(instance_uuid, owners, project_id=None):
    """The project owning an instance's disks (``owners``, a set).

    NotFound when iotguard knows no disk of it, or ``project_id`` (when
    given) does not own it: a project never learns of another's instance.
    """
    if not owners or (project_id is not None and owners != {project_id}):
        raise exception.NotFound(what='instance %s' % instance_uuid)
    return next(iter(owners))


class Connection:
    """iotguard's database: construct it with the config, no I/O."""

    def __init__(self, conf):
        self._default_tier = conf.tiers.default_tier
        settings = {k: v for k, v in conf.database.items()
                    if k not in _NOT_FOR_FACADE}
        settings['sqlite_fk'] = True
        self._tx = enginefacade.transaction_context()
        self._tx.configure(**settings)

    def _reader(self):
        return self._tx.reader.using(types.SimpleNamespace())

    def _writer(self):
        return self._tx.writer.using(types.SimpleNamespace())

    def get_engine(self):
        """The writer engine, for migrations."""
        return self._tx.writer.get_engine()

    def dispose(self):
        """Close every pooled connection (tests, process shutdown)."""
        self.get_engine().dispose()

    # -- tiers -------------------------------------------------------------

    @staticmethod
    def _tier_row(session, name):
        tier = session.scalars(sa.select(models.Tier).where(
            models.Tier.name == name)).first()
        if tier is None:
            raise exception.NotFound(what='tier %s' % name)
        return tier

    @staticmethod
    def _tier_projects(session, tier_ids):
        projects = {tier_id: [] for tier_id in tier_ids}
        if tier_ids:
            rows = session.execute(sa.select(
                models.TierProject.tier_id, models.TierProject.project_id
            ).where(models.TierProject.tier_id.in_(tier_ids)))
            for tier_id, project_id in rows:
                projects[tier_id].append(project_id)
        return projects

    @staticmethod
    def _visible(query, project_id):
        if project_id is None:
            return query
        granted = sa.select(models.TierProject.tier_id).where(
            models.TierProject.project_id == project_id)
        return query.where(sa.or_(models.Tier.is_public.is_(True),
                                  models.Tier.id.in_(granted)))

    def tier_create(self, values, projects=()):
        """Create a tier; ``projects`` may use it when it is private."""
        try:
            with self._writer() as session:
                tier = models.Tier(created_at=utcnow(), **values)
                session.add(tier)
                session.flush()
                for project_id in set(projects):
                    session.add(models.TierProject(tier_id=tier.id,
                                                   project_id=project_id))
                session.flush()
                return _tier_dict(tier, projects)
        except db_exc.DBDuplicateEntry:
            raise exception.Conflict(
                reason='tier %s already exists' % values.get('name'))

    def tier_get(self, name, project_id=None):
        """One tier; a project only gets the tiers it may use."""
        with self._reader() as session:
            query = self._visible(sa.select(models.Tier).where(
                models.Tier.name == name), project_id)
            tier = session.scalars(query).first()
            if tier is None:
                raise exception.NotFound(what='tier %s' % name)
            return _tier_dict(tier,
                              self._tier_projects(session, [tier.id])[tier.id])

    def tier_list(self, project_id=None):
        """Every tier (``project_id=None``) or those a project may use."""
        with self._reader() as session:
            tiers = session.scalars(self._visible(
                sa.select(models.Tier), project_id).order_by(
                    models.Tier.name)).all()
            projects = self._tier_projects(session, [t.id for t in tiers])
            return [_tier_dict(t, projects[t.id]) for t in tiers]

    def tier_update(self, name, values, projects=None):
        """Change a tier; ``projects`` (when given) replaces its list."""
        try:
            with self._writer() as session:
                tier = self._tier_row(session, name)
                for key, value in values.items():
                    setattr(tier, key, value)
                tier.updated_at = utcnow()
                if projects is not None:
                    session.execute(sa.delete(models.TierProject).where(
                        models.TierProject.tier_id == tier.id))
                    for project_id in set(projects):
                        session.add(models.TierProject(
                            tier_id=tier.id, project_id=project_id))
                session.flush()
                return _tier_dict(
                    tier, self._tier_projects(session, [tier.id])[tier.id])
        except db_exc.DBDuplicateEntry:
            raise exception.Conflict(
                reason='tier %s already exists' % values.get('name'))

    def tier_delete(self, name):
        """Delete a tier that no disk uses (else Conflict)."""
        with self._writer() as session:
            tier = self._tier_row(session, name)
            users = session.scalar(sa.select(sa.func.count()).where(
                models.DiskTier.tier_id == tier.id))
            if users or name == self._default_tier:
                raise exception.Conflict(
                    reason='tier %s is in use (%d tier choices%s)' % (
                        name, users,
                        ', and it is [tiers] default_tier'
                        if name == self._default_tier else ''))
            session.delete(tier)

    # -- domains -----------------------------------------------------------

    @staticmethod
    def _domain_row(session, name, for_update=False):
        query = sa.select(models.Domain).where(models.Domain.name == name)
        if for_update:
            query = query.with_for_update()
        domain = session.scalars(query).first()
        if domain is None:
            raise exception.NotFound(what='domain %s' % name)
        return domain

    def domain_create(self, name, kind, iops_4k=None, bytes_sec=None,
                      policy=None, params=None, form='additive'):
        try:
            with self._writer() as session:
                domain = models.Domain(
                    name=name, kind=kind, iops_4k=iops_4k,
                    bytes_sec=bytes_sec, policy=policy, form=form,
                    params=params or {}, created_at=utcnow())
                session.add(domain)
                session.flush()
                return _row(domain, ('id',) + _DOMAIN_FIELDS)
        except db_exc.DBDuplicateEntry:
            raise exception.Conflict(reason='domain %s already exists'
                                     % name)

    def domain_get(self, name):
        with self._reader() as session:
            return _row(self._domain_row(session, name),
                        ('id',) + _DOMAIN_FIELDS + ('created_at',
                                                    'updated_at'))

    def domain_list(self):
        with self._reader() as session:
            domains = session.scalars(sa.select(models.Domain).order_by(
                models.Domain.name)).all()
            return [_row(d, ('id',) + _DOMAIN_FIELDS + ('created_at',
                                                        'updated_at'))
                    for d in domains]

    def domain_update(self, name, values):
        """Change a domain's profile, policy or parameters."""
        with self._writer() as session:
            domain = self._domain_row(session, name)
            for key, value in values.items():
                setattr(domain, key, value)
            domain.updated_at = utcnow()
            session.flush()
            return _row(domain, ('id',) + _DOMAIN_FIELDS + ('created_at',
                                                            'updated_at'))

    def domain_learned(self, name, fit, state):
        """Write the estimator's ``state`` and its ``fit`` (a dict).

        A ``fit`` of None leaves the last one in place.
        """
        with self._writer() as session:
            domain = self._domain_row(session, name)
            if fit is not None:
                for field in LEARNED_FIELDS:
                    value = fit[field]
                    if field == 'identified':
                        value = ','.join(value)
                    setattr(domain, 'learned_' + field, value)
                domain.learned_at = utcnow()
            domain.estimator_state = state
            session.flush()

    def domain_estimator_state(self, name):
        """The estimator's state of a domain (a dict, None if none)."""
        with self._reader() as session:
            return self._domain_row(session, name).estimator_state

    def domain_merge(self, into, sources, kind):
        """Move the disks of ``sources`` into ``into``; delete ``sources``.

        For storage that was several domains and is one (a Ceph cluster
        once split into Nova's pool and Cinder's). ``into`` is created
        (``kind``) when missing. It keeps its manual profile, policy and
        parameters; what it lacks it takes from the first source that has
        it. Learned fits stay with ``into`` (a source's fit saw part of
        the load only). One transaction: nothing is written when a source
        does not exist. Returns ``(domain, disks moved)``.
        """
        if into in sources or not sources or len(set(sources)) < len(
                sources):
            raise exception.Invalid(
                reason='merge distinct domains other than %s into it'
                % into)
        with self._writer() as session:
            merged = [self._domain_row(session, name, for_update=True)
                      for name in sources]
            try:
                target = self._domain_row(session, into, for_update=True)
            except exception.NotFound:
                target = models.Domain(name=into, kind=kind, params={},
                                       form='additive',
                                       profile_source='manual',
                                       created_at=utcnow())
                session.add(target)
                session.flush()
            if target.iops_4k is None and target.bytes_sec is None:
                for source in merged:
                    if source.iops_4k is not None or \
                            source.bytes_sec is not None:
                        target.iops_4k, target.bytes_sec = (
                            source.iops_4k, source.bytes_sec)
                        target.form = source.form
                        break
            target.policy = target.policy or next(
                (s.policy for s in merged if s.policy), None)
            target.params = target.params or next(
                (s.params for s in merged if s.params), {})
            moved = session.execute(
                sa.update(models.Disk)
                .where(models.Disk.domain_id.in_([s.id for s in merged]))
                .values(domain_id=target.id, updated_at=utcnow())
                .execution_options(synchronize_session=False)).rowcount
            for source in merged:
                session.delete(source)
            target.updated_at = utcnow()
            session.flush()
            return (_row(target, ('id',) + _DOMAIN_FIELDS + (
                'created_at', 'updated_at')), moved)

    # -- disks and their tiers -----------------------------------------------

    def disk_upsert(self, instance_uuid, dev, host, domain, project_id,
                    volume_id=None):
        """Record where a disk lives (membership); returns the disk."""
        with self._writer() as session:
            domain_id = self._domain_row(session, domain).id
            disk = session.scalars(sa.select(models.Disk).where(
                models.Disk.instance_uuid == instance_uuid,
                models.Disk.dev == dev)).first()
            if disk is None:
                disk = models.Disk(instance_uuid=instance_uuid, dev=dev,
                                   created_at=utcnow())
                session.add(disk)
            else:
                disk.updated_at = utcnow()
            disk.host, disk.domain_id = host, domain_id
            disk.project_id, disk.volume_id = project_id, volume_id
            session.flush()
            return self._disk_views(session, [disk])[0]

    def disk_delete(self, instance_uuid, dev):
        with self._writer() as session:
            count = session.execute(sa.delete(models.Disk).where(
                models.Disk.instance_uuid == instance_uuid,
                models.Disk.dev == dev)).rowcount
            if not count:
                raise exception.NotFound(
                    what='disk %s of instance %s' % (dev, instance_uuid))

    def disk_tier_set(self, instance_uuid, dev, tier, source, project_id):
        """Record a tier choice from a flavor or volume type (no admission).

        The API's tenant choices go through :meth:`instance_tier_set`.
        """
        if source not in models.TIER_SOURCES:
            raise exception.Invalid(reason='unknown tier source %r'
                                    % source)
        with self._writer() as session:
            tier_id = self._tier_row(session, tier).id
            row = self._choice_row(session, models.DiskTier, instance_uuid,
                                   dev, source)
            if row is None:
                session.add(models.DiskTier(
                    instance_uuid=instance_uuid, dev=dev, source=source,
                    tier_id=tier_id, project_id=project_id,
                    created_at=utcnow()))
            else:
                row.tier_id, row.updated_at = tier_id, utcnow()

    def _effective_tiers(self, session, instance_uuids):
        """{(instance_uuid, dev or '*', source): tier dict} and the default.

        ``instance_uuids``: a list, or a select of them (a domain's
        instances, read in the same query). See :meth:`_resolve` for how
        they give each disk its tier.
        """
        choices = {}
        if not isinstance(instance_uuids, sa.Select):
            instance_uuids = sorted(set(instance_uuids)) or None
        if instance_uuids is not None:
            rows = session.execute(
                sa.select(models.DiskTier.instance_uuid, models.DiskTier.dev,
                          models.DiskTier.source, models.DiskTier.tier_id)
                .where(models.DiskTier.instance_uuid.in_(instance_uuids)))
            # Plain rows, and each tier read once: a domain may hold
            # thousands of choices among a handful of tiers.
            rows = rows.all()
            tiers = {t.id: _row(t, _TIER_FIELDS) for t in session.scalars(
                sa.select(models.Tier).where(models.Tier.id.in_(
                    {r.tier_id for r in rows})))} if rows else {}
            for instance_uuid, dev, source, tier_id in rows:
                choices[(instance_uuid, dev, source)] = tiers[tier_id]
        default = None
        if self._default_tier:
            tier = session.scalars(sa.select(models.Tier).where(
                models.Tier.name == self._default_tier)).first()
            if tier is not None:
                default = _row(tier, _TIER_FIELDS)
        return choices, default

    @staticmethod
    def _refusals(session, instance_uuids):
        """{(instance_uuid, dev or '*', source): refusal dict}."""
        if not instance_uuids:
            return {}
        rows = session.scalars(sa.select(models.TierRefusal).where(
            models.TierRefusal.instance_uuid.in_(sorted(set(instance_uuids)))))
        return {(r.instance_uuid, r.dev, r.source): {
            'tier': r.tier, 'source': r.source, 'reason': r.reason,
            'since': r.created_at} for r in rows}

    @staticmethod
    def _resolve(choices, default, disk, refusals=None):
        """``(tier, source, refused)`` of one disk; first match wins.

        Sources in the order of ``models.TIER_SOURCES``, each only where it
        applies (:func:`models.source_applies`); within a source a choice
        for the disk beats one for all its disks. ``refused``: the refusal
        of a stronger source than the one that gave the tier, or None.
        """
        refused = None
        for source in models.TIER_SOURCES:
            if not models.source_applies(source, disk.volume_id):
                continue
            for which in (disk.dev, models.ALL_DISKS):
                key = (disk.instance_uuid, which, source)
                if key in choices:
                    return choices[key], source, refused
                if refused is None and refusals and key in refusals:
                    refused = refusals[key]
        return default, 'default' if default else None, refused

    def _disk_views(self, session, disks):
        """Disks as dicts: where, tier (and its source), rates, cap."""
        if not disks:
            return []
        uuids = [d.instance_uuid for d in disks]
        choices, default = self._effective_tiers(session, uuids)
        refusals = self._refusals(session, uuids)
        domains = dict(session.execute(sa.select(
            models.Domain.id, models.Domain.name).where(
                models.Domain.id.in_({d.domain_id for d in disks}))).all())
        caps = {}
        rows = session.execute(
            sa.select(models.Cap, models.Decision.reason)
            .outerjoin(models.Decision,
                       models.Decision.id == models.Cap.decision_id)
            .where(models.Cap.disk_id.in_([d.id for d in disks])))
        for cap, reason in rows:
            caps[cap.disk_id] = {'limits': cap.limits,
                                 'lease_expires_at': cap.lease_expires_at,
                                 'decision_id': cap.decision_id,
                                 'reason': reason}
        views = []
        for disk in disks:
            tier, source, refused = self._resolve(choices, default, disk,
                                                  refusals)
            view = _row(disk, ('id', 'instance_uuid', 'dev', 'host',
                               'volume_id', 'project_id', 'sampled_at')
                        + _RATE_FIELDS)
            view.update(domain=domains[disk.domain_id], tier=tier,
                        tier_source=source, tier_refused=refused,
                        cap=caps.get(disk.id))
            views.append(view)
        return views

    def disk_list(self, instance_uuid=None, domain=None, project_id=None):
        """Disks with their tier, rates and cap, filtered."""
        with self._reader() as session:
            query = sa.select(models.Disk).order_by(
                models.Disk.instance_uuid, models.Disk.dev)
            if instance_uuid is not None:
                query = query.where(models.Disk.instance_uuid == instance_uuid)
            if domain is not None:
                query = query.where(models.Disk.domain_id
                                    == self._domain_row(session, domain).id)
            if project_id is not None:
                query = query.where(models.Disk.project_id == project_id)
            return self._disk_views(session, session.scalars(query).all())

    def instance_tier_set(self, instance_uuid, tier, admit,
                          project_id=None, source='api',
                          dev=models.ALL_DISKS):
        """A tier choice for an instance's disks, admission first.

        ``source``: ``api`` (a tenant's choice through the API, for every
        disk), or ``flavor`` / ``volume_type`` (what the instance's flavor
        or a volume's type names, recorded by the controller's membership;
        ``dev`` the volume's disk for a volume type). A choice recorded
        here replaces the source's refusal, if any.

        Runs in one transaction that locks the domains involved: for each
        domain holding a disk the choice applies to, ``admit(tier, domain,
        others, before, after)`` is called with the domain dict and three
        lists of tier dicts (the domain's other disks, and the instance's
        disks the choice applies to, before and after); it returns the
        numbers to report or raises, in which case nothing is written.
        ``project_id`` (when given) must own the instance and be allowed
        the tier, else NotFound.
        """
        if source not in models.TIER_SOURCES:
            raise exception.Invalid(reason='unknown tier source %r'
                                    % source)
        with self._writer() as session:
            # Write-lock the instance's domains before reading anything
            # else, with an update that changes nothing: a row lock on
            # PostgreSQL and MySQL/MariaDB (where the snapshot of the later
            # plain reads is then taken after the lock, under REPEATABLE
            # READ), the database write lock on SQLite. A choice that held
            # the lock before has committed when the reads below run.
            mine = models.Domain.id.in_(sa.select(models.Disk.domain_id).where(
                models.Disk.instance_uuid == instance_uuid))
            session.execute(
                sa.update(models.Domain).where(mine).values(
                    updated_at=models.Domain.updated_at)
                .execution_options(synchronize_session=False))
            domains = {d.id: d for d in session.scalars(
                sa.select(models.Domain).where(mine))}
            disks = session.scalars(sa.select(models.Disk).where(
                models.Disk.instance_uuid == instance_uuid).order_by(
                    models.Disk.dev)).all()
            owner = _owner(instance_uuid, {d.project_id for d in disks},
                           project_id)
            new = session.scalars(self._visible(
                sa.select(models.Tier).where(models.Tier.name == tier),
                owner)).first()
            if new is None:
                raise exception.NotFound(what='tier %s' % tier)
            new_tier = _row(new, _TIER_FIELDS)

            def concerned(disk):
                return (disk.instance_uuid == instance_uuid
                        and dev in (models.ALL_DISKS, disk.dev)
                        and models.source_applies(source, disk.volume_id))

            numbers = []
            domain_ids = sorted({d.domain_id for d in disks if concerned(d)})
            for domain_id in domain_ids:
                domain = domains.get(domain_id)
                if domain is None:
                    raise exception.Conflict(
                        reason='a disk of instance %s moved to another '
                               'domain meanwhile; try again' % instance_uuid)
                # Plain rows (what _resolve reads), not ORM objects: a
                # domain may hold thousands of disks.
                members = session.execute(sa.select(
                    models.Disk.instance_uuid, models.Disk.dev,
                    models.Disk.volume_id).where(
                        models.Disk.domain_id == domain_id)).all()
                choices, default = self._effective_tiers(
                    session, sa.select(models.Disk.instance_uuid).where(
                        models.Disk.domain_id == domain_id))
                changed = dict(choices)
                changed[(instance_uuid, dev, source)] = new_tier
                others, before, after = [], [], []
                for member in members:
                    current = self._resolve(choices, default, member)[0]
                    if concerned(member):
                        before.append(current)
                        after.append(
                            self._resolve(changed, default, member)[0])
                    else:
                        others.append(current)
                numbers.append(admit(
                    tier, _row(domain, _DOMAIN_FIELDS),
                    [t for t in others if t], [t for t in before if t],
                    [t for t in after if t]))
            self._choice_delete(session, instance_uuid, source, dev)
            session.add(models.DiskTier(
                instance_uuid=instance_uuid, dev=dev,
                source=source, tier_id=new.id, project_id=owner,
                created_at=utcnow()))
            return {'instance_uuid': instance_uuid, 'tier': tier,
                    'project_id': owner, 'admission': numbers}

    @staticmethod
    def _choice_row(session, table, instance_uuid, dev, source):
        """The row of ``table`` (a choice or a refusal) for one source."""
        return session.scalars(sa.select(table).where(
            table.instance_uuid == instance_uuid, table.dev == dev,
            table.source == source)).first()

    @staticmethod
    def _choice_delete(session, instance_uuid, source, dev=None):
        """Drop a source's choice and refusal (for ``dev``, or all)."""
        for table in (models.DiskTier, models.TierRefusal):
            query = sa.delete(table).where(
                table.instance_uuid == instance_uuid, table.source == source)
            if dev is not None:
                query = query.where(table.dev == dev)
            session.execute(query)

    def tier_refusal_set(self, instance_uuid, dev, source, tier, reason,
                         project_id):
        """Record that admission refused ``tier`` from ``source``.

        The source's choice for the disk (if any) goes: the disk falls back
        to the weaker sources. Returns True when this is news (no refusal
        of the same tier was recorded), for the caller to notify once.
        """
        reason = reason[:255]
        with self._writer() as session:
            session.execute(sa.delete(models.DiskTier).where(
                models.DiskTier.instance_uuid == instance_uuid,
                models.DiskTier.dev == dev,
                models.DiskTier.source == source))
            row = self._choice_row(session, models.TierRefusal,
                                   instance_uuid, dev, source)
            if row is None:
                session.add(models.TierRefusal(
                    instance_uuid=instance_uuid, dev=dev, source=source,
                    tier=tier, reason=reason, project_id=project_id,
                    created_at=utcnow()))
                return True
            news = row.tier != tier
            if news:
                row.created_at = utcnow()
            row.tier, row.reason, row.updated_at = tier, reason, utcnow()
            return news

    # -- caps ----------------------------------------------------------------

    def cap_delete_expired(self, now):
        """Drop the caps whose lease lapsed before ``now``; how many."""
        with self._writer() as session:
            return session.execute(sa.delete(models.Cap).where(
                models.Cap.lease_expires_at < now)).rowcount

    # -- iotguard-controller: batched calls of a domain round, bulk disks ---

    def decisions_create(self, decisions):
        """Append many decisions in one transaction; their ids, in order.

        Each is a dict of ``domain, policy, instance_uuid, dev,
        project_id, action, old_limits, new_limits, reason, numbers`` and
        optionally ``created_at`` (default now).
        """
        if not decisions:
            return []
        fields = ('domain', 'policy', 'instance_uuid', 'dev', 'project_id',
                  'action', 'old_limits', 'new_limits', 'reason', 'numbers')
        with self._writer() as session:
            rows = [models.Decision(
                created_at=d.get('created_at') or utcnow(),
                **{f: d[f] for f in fields}) for d in decisions]
            session.add_all(rows)
            session.flush()
            return [row.id for row in rows]

    def _disk_ids(self, session, keys):
        uuids = sorted({k[0] for k in keys})
        found = {}
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

    def caps_set(self, caps):
        """Record many caps in force in one transaction.

        Each: ``instance_uuid, dev, limits, lease_expires_at,
        decision_id``; a disk's cap replaces the one it had. NotFound (and
        nothing written) when a disk is unknown.
        """
        if not caps:
            return 0
        with self._writer() as session:
            ids = self._disk_ids(session, [(c['instance_uuid'], c['dev'])
                                           for c in caps])
            existing = {cap.disk_id: cap for cap in session.scalars(
                sa.select(models.Cap).where(models.Cap.disk_id.in_(
                    sorted(set(ids.values())))))}
            now = utcnow()
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

    def caps_release(self, disks):
        """Forget the caps of many ``(instance_uuid, dev)``; how many."""
        if not disks:
            return 0
        with self._writer() as session:
            ids = self._disk_ids(session, list(disks))
            return session.execute(sa.delete(models.Cap).where(
                models.Cap.disk_id.in_(sorted(set(ids.values()))))).rowcount

    def caps_renew(self, disk_ids, lease_expires_at):
        """Extend the lease of the caps of ``disk_ids`` (disk row ids).

        One transaction for a whole round's renewals (in statements of
        500 disks); returns how many caps were renewed (a disk without a
        cap is skipped).
        """
        ids = sorted(set(disk_ids))
        if not ids:
            return 0
        renewed, now = 0, utcnow()
        with self._writer() as session:
            for start in range(0, len(ids), 500):
                renewed += session.execute(sa.update(models.Cap).where(
                    models.Cap.disk_id.in_(ids[start:start + 500])).values(
                        lease_expires_at=lease_expires_at,
                        updated_at=now)).rowcount
        return renewed

    def domain_disks(self, domain):
        """The disks of one domain as the decision loop needs them.

        Like :meth:`disk_list` (same tier resolution) but one light query
        without ORM objects, and each ``cap`` also has ``set_at``: when the
        decision that set it was taken. NotFound for an unknown domain.
        """
        return self.domains_disks([domain])[domain]

    def domains_disks(self, domains):
        """:meth:`domain_disks` of many domains in one read (a round's).

        ``{name: [disk]}``, each list ordered by instance and device; the
        same queries whatever the number of domains. NotFound when one is
        unknown.
        """
        disk, cap = models.Disk, models.Cap
        names = sorted(set(domains))
        if not names:
            return {}
        with self._reader() as session:
            ids = dict(session.execute(
                sa.select(models.Domain.id, models.Domain.name).where(
                    models.Domain.name.in_(names))).all())
            if len(ids) < len(names):
                raise exception.NotFound(what='domain %s' % sorted(
                    set(names) - set(ids.values()))[0])
            rows = session.execute(
                sa.select(disk.id, disk.instance_uuid, disk.dev, disk.host,
                          disk.project_id, disk.volume_id, disk.domain_id,
                          cap.limits, cap.lease_expires_at, cap.decision_id,
                          models.Decision.created_at)
                .outerjoin(cap, cap.disk_id == disk.id)
                .outerjoin(models.Decision,
                           models.Decision.id == cap.decision_id)
                .where(disk.domain_id.in_(list(ids)))
                .order_by(disk.instance_uuid, disk.dev)).all()
            choices, default = self._effective_tiers(
                session, sa.select(disk.instance_uuid).where(
                    disk.domain_id.in_(list(ids))))
        chosen = {key[0] for key in choices}
        default_source = 'default' if default else None
        out = {name: [] for name in names}
        for r in rows:
            # Most disks have no choice of their own: the default tier.
            if r.instance_uuid in chosen:
                tier, source, _refused = self._resolve(choices, default, r)
            else:
                tier, source = default, default_source
            name = ids[r.domain_id]
            out[name].append({
                'id': r.id, 'instance_uuid': r.instance_uuid, 'dev': r.dev,
                'host': r.host, 'project_id': r.project_id,
                'volume_id': r.volume_id, 'domain': name, 'tier': tier,
                'tier_source': source,
                'cap': None if r.limits is None else {
                    'limits': r.limits,
                    'lease_expires_at': r.lease_expires_at,
                    'decision_id': r.decision_id, 'set_at': r.created_at}})
        return out

    def disks_version(self):
        """What changes whenever the disks or their tiers may have.

        Whatever :meth:`domains_disks` says apart from the caps.

        Counts, largest ids, id sums and latest times of the disks, tier
        choices and tiers: a few aggregates, so that the controller reads
        the disks again only when they changed.
        """
        def of(table):
            return (sa.func.count(), sa.func.max(table.id),
                    sa.func.sum(table.id), sa.func.max(table.created_at),
                    sa.func.max(table.updated_at))

        with self._reader() as session:
            return tuple(tuple(session.execute(sa.select(*of(table))).one())
                         for table in (models.Disk, models.DiskTier,
                                       models.Tier))

    def domains_caps(self, domains):
        """The caps in force in ``domains``: ``{disk id: cap}``.

        Each cap as :meth:`domain_disks` gives it (``set_at`` included);
        the only part of those views a round must read every time.
        """
        disk, cap = models.Disk, models.Cap
        with self._reader() as session:
            rows = session.execute(
                sa.select(cap.disk_id, cap.limits, cap.lease_expires_at,
                          cap.decision_id, models.Decision.created_at)
                .join(disk, disk.id == cap.disk_id)
                .join(models.Domain, models.Domain.id == disk.domain_id)
                .outerjoin(models.Decision,
                           models.Decision.id == cap.decision_id)
                .where(models.Domain.name.in_(sorted(set(domains))))).all()
        return {r.disk_id: {'limits': r.limits,
                            'lease_expires_at': r.lease_expires_at,
                            'decision_id': r.decision_id,
                            'set_at': r.created_at} for r in rows}

    def disk_rates_bulk_update(self, rates):
        """Store the latest rates of many disks at once (by disk id).

        Each item: ``id``, ``sampled_at`` and the rate fields of
        ``read_iops, write_iops, read_bytes_sec, write_bytes_sec,
        latency_ms`` (a missing field is written as NULL). One
        transaction; returns how many disks were given (an unknown id is
        skipped).

        A round writes tens of thousands of them: on PostgreSQL one
        ``UPDATE ... FROM unnest(arrays)`` per ``RATES_CHUNK`` disks, on
        MySQL / MariaDB one ``UPDATE ... JOIN JSON_TABLE(...)`` (a rate
        that is not finite is written as NULL there: MySQL's doubles
        cannot hold it), elsewhere (SQLite, in process) an executemany
        of one UPDATE per disk. psycopg2 and PyMySQL run an executemany
        UPDATE as one round trip per row.
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
        with self._writer() as session:
            dialect = session.get_bind().dialect
            if dialect.name == 'postgresql':
                write = _rates_postgresql
            elif (dialect.name in ('mysql', 'mariadb')
                  and _has_json_table(dialect)):
                write = _rates_mysql
            else:
                write = _rates_executemany
            for start in range(0, len(rates), RATES_CHUNK):
                write(session, fields, rates[start:start + RATES_CHUNK])
        return len(rates)

    def disk_bulk_insert(self, disks):
        """Insert many new disks in one statement (benchmarks, imports).

        Each is a dict ``instance_uuid, dev, host, domain, project_id``
        (and optionally ``volume_id``); an unknown domain is NotFound, a
        disk that exists already Conflict. Returns how many were inserted.
        """
        if not disks:
            return 0
        try:
            with self._writer() as session:
                ids = dict(session.execute(sa.select(
                    models.Domain.name, models.Domain.id)).all())
                now = utcnow()
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

    def tier_requests(self, source, instance_uuids):
        """What ``source`` asked for the instances' disks.

        ``{(instance_uuid, dev or '*'): (tier name, state)}``, ``state``
        ``admitted`` or ``refused``.
        """
        uuids = list(instance_uuids)
        with self._reader() as session:
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

    def instance_tier_unset(self, instance_uuid, project_id=None,
                            source='api'):
        """Drop ``source``'s choice for every disk of an instance.

        Its disks fall back to the other sources (flavor, volume type) or
        the default tier; no admission is needed to lower floors. Returns
        the owner's project id. NotFound when iotguard knows no disk of
        the instance, or ``project_id`` (when given) does not own it.
        """
        with self._writer() as session:
            owner = _owner(instance_uuid, set(session.scalars(
                sa.select(models.Disk.project_id).where(
                    models.Disk.instance_uuid == instance_uuid))), project_id)
            self._choice_delete(session, instance_uuid, source)
            return owner

    def tier_choice_unset(self, instance_uuid, source, dev=None):
        """Drop what ``source`` asked for an instance (or one ``dev``)."""
        with self._writer() as session:
            self._choice_delete(session, instance_uuid, source, dev)

    def tier_choices_forget(self, instance_uuids=None, keep=None,
                            before=None):
        """Drop the tier choices of instances that no longer exist.

        Either of ``instance_uuids`` (those instances), or of every
        instance not in ``keep`` whose choice was made before ``before``
        (a full resync: a choice made meanwhile for a server the listing
        did not show yet stays). Returns how many were dropped.
        """
        dropped = 0
        with self._writer() as session:
            for table in (models.DiskTier, models.TierRefusal):
                query = sa.delete(table)
                if instance_uuids is not None:
                    query = query.where(
                        table.instance_uuid.in_(list(instance_uuids)))
                else:
                    query = query.where(
                        table.instance_uuid.not_in(list(keep or ())),
                        table.created_at < before)
                dropped += session.execute(query).rowcount
        return dropped

    def disk_index(self):
        """``{(instance_uuid, dev): (domain, host)}`` of every disk.

        One light query (no tiers, caps or rates) for the controller's
        routing of incoming samples. Every controller holds it whole, so
        it is kept small: one ``(domain, host)`` tuple per pair and one
        string per device name, shared by the disks (with the
        controller's map of each instance's devices, 283 bytes a disk
        instead of 671: 100,000 disks, 50 a host).
        """
        with self._reader() as session:
            rows = session.execute(sa.select(
                models.Disk.instance_uuid, models.Disk.dev,
                models.Domain.name, models.Disk.host).join(
                    models.Domain, models.Domain.id == models.Disk.domain_id))
            pairs: dict[tuple[str, str], tuple[str, str]] = {}
            return {(u, sys.intern(d)): pairs.setdefault((domain, host),
                                                         (domain, host))
                    for u, d, domain, host in rows}

    # -- decisions (audit trail) ---------------------------------------------

    def decision_list(self, limit, marker=None, instance_uuid=None,
                      domain=None, since=None, project_id=None):
        """Newest first; ``marker`` is the id of the last one seen.

        An unknown marker (or one the project may not see) is NotFound.
        """
        decision = models.Decision
        with self._reader() as session:
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
            return [_row(r, _DECISION_FIELDS) for r in rows]

    def decision_get(self, decision_id, project_id=None):
        """One decision; NotFound if unknown or not ``project_id``'s."""
        decision = models.Decision
        with self._reader() as session:
            query = sa.select(decision).where(decision.id == decision_id)
            if project_id is not None:
                query = query.where(decision.project_id == project_id)
            row = session.scalar(query)
            if row is None:
                raise exception.NotFound(what='decision %s' % decision_id)
            return _row(row, _DECISION_FIELDS)

    # -- agents --------------------------------------------------------------

    def agent_heartbeat(self, host, driver, now=None, version=None,
                        interval_s=None, disks=None, caps=None):
        """Record that the agent on ``host`` is alive, and what it said."""
        now = now or utcnow()
        with self._writer() as session:
            agent = session.scalars(sa.select(models.Agent).where(
                models.Agent.host == host)).first()
            if agent is None:
                agent = models.Agent(host=host, created_at=now)
                session.add(agent)
            else:
                agent.updated_at = now
            agent.driver, agent.last_heartbeat = driver, now
            agent.version, agent.interval_s = version, interval_s
            agent.disks, agent.caps = disks, caps

    def agent_list(self, host=None):
        """Every agent (or the one on ``host``), by host."""
        with self._reader() as session:
            query = sa.select(models.Agent).order_by(models.Agent.host)
            if host is not None:
                query = query.where(models.Agent.host == host)
            return [_row(a, _AGENT_FIELDS)
                    for a in session.scalars(query).all()]
