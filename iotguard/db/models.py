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

"""iotguard's tables. Schema changes go through alembic only.

Datetimes are naive UTC. Limits, parameters and numbers are JSON objects.
A disk's ``dev`` is its target device (``vda``); a tier choice for
``dev = '*'`` covers every disk of the instance.
"""

from collections.abc import Iterable
import datetime
import typing
from typing import Any

from oslo_db.sqlalchemy import types as db_types
import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy import orm
from sqlalchemy.orm import Mapped
from sqlalchemy.orm import mapped_column

#: Microsecond datetimes on MySQL/MariaDB too (the default there is seconds).
DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')

NAMING = {
    'ix': 'ix_%(column_0_label)s',
    'uq': 'uq_%(table_name)s_%(column_0_name)s',
    'fk': 'fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s',
    'pk': 'pk_%(table_name)s',
}


class Base(orm.DeclarativeBase):
    metadata = sa.MetaData(naming_convention=NAMING)


def _timestamps() -> tuple[Mapped[datetime.datetime],
                           Mapped[datetime.datetime | None]]:
    return (mapped_column('created_at', DateTime, nullable=False),
            mapped_column('updated_at', DateTime))


class Tier(Base):
    __tablename__ = 'tiers'
    __table_args__ = (sa.UniqueConstraint('name', name='uq_tiers_name'),)

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(sa.String(64))
    description: Mapped[str] = mapped_column(sa.String(255), default='')
    min_iops: Mapped[float] = mapped_column(sa.Double, default=0.0)
    min_bytes_sec: Mapped[float] = mapped_column(sa.Double, default=0.0)
    max_iops: Mapped[float] = mapped_column(sa.Double, default=0.0)
    max_bytes_sec: Mapped[float] = mapped_column(sa.Double, default=0.0)
    weight: Mapped[float] = mapped_column(sa.Double, default=1.0)
    is_public: Mapped[bool] = mapped_column(default=True)
    created_at, updated_at = _timestamps()
    #: limits per GiB of the disk (iotguard.policy.base.PER_GB)
    min_iops_per_gb: Mapped[float] = mapped_column(
        sa.Double, default=0.0, server_default='0')
    min_bytes_sec_per_gb: Mapped[float] = mapped_column(
        sa.Double, default=0.0, server_default='0')
    max_iops_per_gb: Mapped[float] = mapped_column(
        sa.Double, default=0.0, server_default='0')
    max_bytes_sec_per_gb: Mapped[float] = mapped_column(
        sa.Double, default=0.0, server_default='0')
    #: a burst (iotguard.policy.base.BURST)
    burst_factor: Mapped[float] = mapped_column(
        sa.Double, default=0.0, server_default='0')
    burst_seconds: Mapped[float] = mapped_column(
        sa.Double, default=0.0, server_default='0')
    #: the latency objective (iotguard.policy.base.Tier.latency_p99_ms)
    latency_p99_ms: Mapped[float] = mapped_column(
        sa.Double, default=0.0, server_default='0')


class TierProject(Base):
    """A project that may use a private tier."""

    __tablename__ = 'tier_projects'
    __table_args__ = (
        sa.UniqueConstraint('tier_id', 'project_id',
                            name='uq_tier_projects_tier_id_project_id'),
    )

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    tier_id: Mapped[int] = mapped_column(
        sa.ForeignKey('tiers.id', ondelete='CASCADE'))
    project_id: Mapped[str] = mapped_column(sa.String(64), index=True)


class DiskTier(Base):
    """The tier chosen for one disk (or all disks) of an instance."""

    __tablename__ = 'disk_tiers'
    __table_args__ = (
        sa.UniqueConstraint('instance_uuid', 'dev', 'source',
                            name='uq_disk_tiers_instance_uuid_dev_source'),
    )

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    instance_uuid: Mapped[str] = mapped_column(sa.String(36), index=True)
    dev: Mapped[str] = mapped_column(sa.String(64))
    source: Mapped[str] = mapped_column(sa.String(16))
    tier_id: Mapped[int] = mapped_column(sa.ForeignKey('tiers.id'),
                                         index=True)
    project_id: Mapped[str] = mapped_column(sa.String(64))
    created_at, updated_at = _timestamps()


class TierRefusal(Base):
    """A tier a flavor or volume type names that admission refused.

    The disk keeps what the weaker sources give it; membership tries the
    tier again at every resync and drops this row once it is admitted or
    no longer asked for.
    """

    __tablename__ = 'tier_refusals'
    __table_args__ = (
        sa.UniqueConstraint('instance_uuid', 'dev', 'source',
                            name='uq_tier_refusals_instance_uuid_dev_source'),
    )

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    instance_uuid: Mapped[str] = mapped_column(sa.String(36), index=True)
    dev: Mapped[str] = mapped_column(sa.String(64))
    source: Mapped[str] = mapped_column(sa.String(16))
    tier: Mapped[str] = mapped_column(sa.String(64))
    reason: Mapped[str] = mapped_column(sa.String(255))
    project_id: Mapped[str] = mapped_column(sa.String(64))
    created_at, updated_at = _timestamps()


class Domain(Base):
    """A contention domain and its capacity profile."""

    __tablename__ = 'domains'
    __table_args__ = (sa.UniqueConstraint('name', name='uq_domains_name'),)

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(sa.String(255))
    kind: Mapped[str] = mapped_column(sa.String(16))
    iops_4k: Mapped[float | None] = mapped_column(sa.Double)
    bytes_sec: Mapped[float | None] = mapped_column(sa.Double)
    policy: Mapped[str | None] = mapped_column(sa.String(64))
    params: Mapped[dict[str, Any]] = mapped_column(db_types.JsonEncodedDict)
    created_at, updated_at = _timestamps()
    #: the manual profile's form (``additive`` or ``max``)
    form: Mapped[str] = mapped_column(sa.String(16), default='additive',
                                      server_default='additive')
    #: the profile decisions and admission use: ``manual`` (pinned) or
    #: ``learned`` (the estimator's fit, with its margin)
    profile_source: Mapped[str] = mapped_column(
        sa.String(16), default='manual', server_default='manual')
    #: the estimator's latest fit (iotguard.policy.estimator.Fit)
    learned_form: Mapped[str | None] = mapped_column(sa.String(16))
    learned_iops_4k: Mapped[float | None] = mapped_column(sa.Double)
    learned_bytes_sec: Mapped[float | None] = mapped_column(sa.Double)
    learned_error: Mapped[float | None] = mapped_column(sa.Double)
    learned_intervals: Mapped[int | None] = mapped_column()
    learned_mixes: Mapped[int | None] = mapped_column()
    learned_confidence: Mapped[float | None] = mapped_column(sa.Double)
    learned_identified: Mapped[str | None] = mapped_column(sa.String(64))
    learned_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    #: the estimator's state (iotguard.policy.estimator.State)
    estimator_state: Mapped[dict[str, Any] | None] = mapped_column(
        db_types.JsonEncodedDict)
    #: what the domain's policy remembers between decisions (``policy``
    #: and its ``state``, iotguard.controller.loop), written every round:
    #: read only on its own (deferred), up to some MiB on MySQL
    policy_state: Mapped[dict[str, Any] | None] = mapped_column(
        db_types.JsonEncodedDict(mysql_as_long=True), deferred=True)


class Disk(Base):
    """One disk of one instance, where it lives and its latest rates."""

    __tablename__ = 'disks'
    __table_args__ = (
        sa.UniqueConstraint('instance_uuid', 'dev',
                            name='uq_disks_instance_uuid_dev'),
        # room for the rates rewritten in place (migration 3e9a7c5d1b62)
        {'postgresql_with': {'fillfactor': 60}},
    )

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    instance_uuid: Mapped[str] = mapped_column(sa.String(36))
    dev: Mapped[str] = mapped_column(sa.String(64))
    host: Mapped[str] = mapped_column(sa.String(255))
    domain_id: Mapped[int] = mapped_column(sa.ForeignKey('domains.id'),
                                           index=True)
    volume_id: Mapped[str | None] = mapped_column(sa.String(36))
    project_id: Mapped[str] = mapped_column(sa.String(64), index=True)
    read_iops: Mapped[float | None] = mapped_column(sa.Double)
    write_iops: Mapped[float | None] = mapped_column(sa.Double)
    read_bytes_sec: Mapped[float | None] = mapped_column(sa.Double)
    write_bytes_sec: Mapped[float | None] = mapped_column(sa.Double)
    latency_ms: Mapped[float | None] = mapped_column(sa.Double)
    #: The 99th percentile latency (ms) where the agent measures it
    #: (``[agent] latency_histograms``); None: not measured.
    latency_p99_ms: Mapped[float | None] = mapped_column(sa.Double)
    sampled_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    created_at, updated_at = _timestamps()
    #: the size (GiB) its tier is priced at (admitted), None: unknown
    size_gib: Mapped[int | None] = mapped_column()
    #: a larger size admission refused: ``size_gib``, ``reason``, ``since``
    size_refused: Mapped[dict[str, Any] | None] = mapped_column(
        db_types.JsonEncodedDict)


class DiskMinute(Base):
    """One minute of a disk's record: its floor kept, its cap and why.

    Seconds are those the controller saw fresh samples of; rates are their
    means; the floor is the one in force in the minute's last round, the
    cap the minute's tightest, in IOPS and bytes/s (null: none of that
    kind). Written for the disks with a floor or a cap in that minute.
    """

    __tablename__ = 'disk_minutes'

    disk_id: Mapped[int] = mapped_column(
        sa.ForeignKey('disks.id', ondelete='CASCADE'), primary_key=True)
    minute: Mapped[datetime.datetime] = mapped_column(
        DateTime, primary_key=True, index=True)
    seconds: Mapped[float] = mapped_column(sa.Double)
    floor_due_s: Mapped[float] = mapped_column(sa.Double)
    floor_kept_s: Mapped[float] = mapped_column(sa.Double)
    capped_s: Mapped[float] = mapped_column(sa.Double)
    iops: Mapped[float] = mapped_column(sa.Double)
    bytes_sec: Mapped[float] = mapped_column(sa.Double)
    cap_reason: Mapped[str | None] = mapped_column(sa.String(255))
    floor_iops: Mapped[float | None] = mapped_column(sa.Double)
    floor_bytes_sec: Mapped[float | None] = mapped_column(sa.Double)
    cap_iops: Mapped[float | None] = mapped_column(sa.Double)
    cap_bytes_sec: Mapped[float | None] = mapped_column(sa.Double)


class Cap(Base):
    """The dynamic cap in force on one disk, with its lease."""

    __tablename__ = 'caps'
    __table_args__ = (sa.UniqueConstraint('disk_id', name='uq_caps_disk_id'),)

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    disk_id: Mapped[int] = mapped_column(
        sa.ForeignKey('disks.id', ondelete='CASCADE'))
    limits: Mapped[dict[str, Any]] = mapped_column(db_types.JsonEncodedDict)
    lease_expires_at: Mapped[datetime.datetime] = mapped_column(DateTime)
    decision_id: Mapped[int | None] = mapped_column(
        sa.ForeignKey('decisions.id'))
    created_at, updated_at = _timestamps()


class Decision(Base):
    """One decision of the audit trail: names copied, so it outlives them."""

    __tablename__ = 'decisions'
    __table_args__ = (
        sa.Index('ix_decisions_domain_created_at', 'domain', 'created_at'),
    )

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime,
                                                          index=True)
    domain: Mapped[str] = mapped_column(sa.String(255))
    policy: Mapped[str] = mapped_column(sa.String(64))
    instance_uuid: Mapped[str] = mapped_column(sa.String(36), index=True)
    dev: Mapped[str] = mapped_column(sa.String(64))
    project_id: Mapped[str] = mapped_column(sa.String(64), index=True)
    action: Mapped[str] = mapped_column(sa.String(16))
    old_limits: Mapped[dict[str, Any]] = mapped_column(
        db_types.JsonEncodedDict)
    new_limits: Mapped[dict[str, Any]] = mapped_column(
        db_types.JsonEncodedDict)
    reason: Mapped[str] = mapped_column(sa.Text)
    numbers: Mapped[dict[str, Any]] = mapped_column(db_types.JsonEncodedDict)


class Agent(Base):
    """An iotguard-agent and when it was last heard of."""

    __tablename__ = 'agents'
    __table_args__ = (sa.UniqueConstraint('host', name='uq_agents_host'),)

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    host: Mapped[str] = mapped_column(sa.String(255))
    driver: Mapped[str] = mapped_column(sa.String(64))
    last_heartbeat: Mapped[datetime.datetime] = mapped_column(DateTime)
    #: From the last heartbeat (None when the agent did not say): the
    #: agent's version, its reporting interval (seconds), how many disks
    #: it reported and how many caps it had in force.
    version: Mapped[str | None] = mapped_column(sa.String(64))
    interval_s: Mapped[float | None] = mapped_column(sa.Float)
    disks: Mapped[int | None] = mapped_column()
    caps: Mapped[int | None] = mapped_column()
    #: The host's clock less the recording controller's (s), as that
    #: controller learned it from the host's samples
    #: (:class:`iotguard.controller.samples.Clocks`); None: not known.
    clock_offset_s: Mapped[float | None] = mapped_column(sa.Float)
    created_at, updated_at = _timestamps()


def utcnow() -> datetime.datetime:
    """Naive UTC now, the form every datetime column holds."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


#: The tables :func:`find_or_add` serves.
M = typing.TypeVar('M', Disk, DiskTier, TierRefusal, Agent)


def find_or_add(session: orm.Session, model: type[M],
                now: datetime.datetime | None = None, **keys: Any) -> M:
    """The row of ``model`` with ``keys``, or a new one added.

    ``created_at`` of a new row, or ``updated_at`` of the one found, is
    ``now`` (default :func:`utcnow`).
    """
    now = now or utcnow()
    found = session.scalars(sa.select(model).filter_by(**keys)).first()
    if found is None:
        found = model(created_at=now, **keys)
        session.add(found)
    else:
        found.updated_at = now
    return found


def rowcount(session: orm.Session, statement: sa.Executable) -> int:
    """How many rows an UPDATE or DELETE ``statement`` touched."""
    return typing.cast(sa.CursorResult[Any],
                       session.execute(statement)).rowcount


def row(obj: object, fields: Iterable[str]) -> dict[str, Any]:
    """``fields`` of a model object (or a row) as a dict."""
    return {f: getattr(obj, f) for f in fields}
