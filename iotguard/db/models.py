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

import datetime

from oslo_db.sqlalchemy import types as db_types
import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy import orm

from iotguard.db.tiering import ALL_DISKS  # noqa: F401
from iotguard.db.tiering import source_applies  # noqa: F401
from iotguard.db.tiering import TIER_SOURCES  # noqa: F401

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


def _timestamps():
    return (sa.Column('created_at', DateTime, nullable=False),
            sa.Column('updated_at', DateTime))


class Tier(Base):
    __tablename__ = 'tiers'
    __table_args__ = (sa.UniqueConstraint('name', name='uq_tiers_name'),)

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    name = sa.Column(sa.String(64), nullable=False)
    description = sa.Column(sa.String(255), nullable=False, default='')
    min_iops = sa.Column(sa.Double, nullable=False, default=0.0)
    min_bytes_sec = sa.Column(sa.Double, nullable=False, default=0.0)
    max_iops = sa.Column(sa.Double, nullable=False, default=0.0)
    max_bytes_sec = sa.Column(sa.Double, nullable=False, default=0.0)
    weight = sa.Column(sa.Double, nullable=False, default=1.0)
    is_public = sa.Column(sa.Boolean, nullable=False, default=True)
    created_at, updated_at = _timestamps()


class TierProject(Base):
    """A project that may use a private tier."""

    __tablename__ = 'tier_projects'
    __table_args__ = (
        sa.UniqueConstraint('tier_id', 'project_id',
                            name='uq_tier_projects_tier_id_project_id'),
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    tier_id = sa.Column(sa.Integer,
                        sa.ForeignKey('tiers.id', ondelete='CASCADE'),
                        nullable=False)
    project_id = sa.Column(sa.String(64), nullable=False, index=True)


class DiskTier(Base):
    """The tier chosen for one disk (or all disks) of an instance."""

    __tablename__ = 'disk_tiers'
    __table_args__ = (
        sa.UniqueConstraint('instance_uuid', 'dev', 'source',
                            name='uq_disk_tiers_instance_uuid_dev_source'),
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False, index=True)
    dev = sa.Column(sa.String(64), nullable=False)
    source = sa.Column(sa.String(16), nullable=False)
    tier_id = sa.Column(sa.Integer, sa.ForeignKey('tiers.id'),
                        nullable=False, index=True)
    project_id = sa.Column(sa.String(64), nullable=False)
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

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False, index=True)
    dev = sa.Column(sa.String(64), nullable=False)
    source = sa.Column(sa.String(16), nullable=False)
    tier = sa.Column(sa.String(64), nullable=False)
    reason = sa.Column(sa.String(255), nullable=False)
    project_id = sa.Column(sa.String(64), nullable=False)
    created_at, updated_at = _timestamps()


class Domain(Base):
    """A contention domain and its capacity profile."""

    __tablename__ = 'domains'
    __table_args__ = (sa.UniqueConstraint('name', name='uq_domains_name'),)

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    name = sa.Column(sa.String(255), nullable=False)
    kind = sa.Column(sa.String(16), nullable=False)
    iops_4k = sa.Column(sa.Double)
    bytes_sec = sa.Column(sa.Double)
    policy = sa.Column(sa.String(64))
    params = sa.Column(db_types.JsonEncodedDict, nullable=False)
    created_at, updated_at = _timestamps()
    #: the manual profile's form (``additive`` or ``max``)
    form = sa.Column(sa.String(16), nullable=False, default='additive',
                     server_default='additive')
    #: the profile decisions and admission use: ``manual`` (pinned) or
    #: ``learned`` (the estimator's fit, with its margin)
    profile_source = sa.Column(sa.String(16), nullable=False,
                               default='manual', server_default='manual')
    #: the estimator's latest fit (iotguard.policy.estimator.Fit)
    learned_form = sa.Column(sa.String(16))
    learned_iops_4k = sa.Column(sa.Double)
    learned_bytes_sec = sa.Column(sa.Double)
    learned_error = sa.Column(sa.Double)
    learned_intervals = sa.Column(sa.Integer)
    learned_mixes = sa.Column(sa.Integer)
    learned_confidence = sa.Column(sa.Double)
    learned_identified = sa.Column(sa.String(64))
    learned_at = sa.Column(DateTime)
    #: the estimator's state (iotguard.policy.estimator.State)
    estimator_state = sa.Column(db_types.JsonEncodedDict)


class Disk(Base):
    """One disk of one instance, where it lives and its latest rates."""

    __tablename__ = 'disks'
    __table_args__ = (
        sa.UniqueConstraint('instance_uuid', 'dev',
                            name='uq_disks_instance_uuid_dev'),
        # room for the rates rewritten in place (migration 3e9a7c5d1b62)
        {'postgresql_with': {'fillfactor': 60}},
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False)
    dev = sa.Column(sa.String(64), nullable=False)
    host = sa.Column(sa.String(255), nullable=False)
    domain_id = sa.Column(sa.Integer,
                          sa.ForeignKey('domains.id'), nullable=False,
                          index=True)
    volume_id = sa.Column(sa.String(36))
    project_id = sa.Column(sa.String(64), nullable=False, index=True)
    read_iops = sa.Column(sa.Double)
    write_iops = sa.Column(sa.Double)
    read_bytes_sec = sa.Column(sa.Double)
    write_bytes_sec = sa.Column(sa.Double)
    latency_ms = sa.Column(sa.Double)
    sampled_at = sa.Column(DateTime)
    created_at, updated_at = _timestamps()


class Cap(Base):
    """The dynamic cap in force on one disk, with its lease."""

    __tablename__ = 'caps'
    __table_args__ = (sa.UniqueConstraint('disk_id', name='uq_caps_disk_id'),)

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    disk_id = sa.Column(sa.Integer,
                        sa.ForeignKey('disks.id', ondelete='CASCADE'),
                        nullable=False)
    limits = sa.Column(db_types.JsonEncodedDict, nullable=False)
    lease_expires_at = sa.Column(DateTime, nullable=False)
    decision_id = sa.Column(sa.Integer, sa.ForeignKey('decisions.id'))
    created_at, updated_at = _timestamps()


class Decision(Base):
    """The audit trail: one row per decision, kept after the disk goes.

    Names are copied, not referenced, so the trail survives the disk,
    the instance and the domain.
    """

    __tablename__ = 'decisions'
    __table_args__ = (
        sa.Index('ix_decisions_domain_created_at', 'domain', 'created_at'),
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    created_at = sa.Column(DateTime, nullable=False, index=True)
    domain = sa.Column(sa.String(255), nullable=False)
    policy = sa.Column(sa.String(64), nullable=False)
    instance_uuid = sa.Column(sa.String(36), nullable=False, index=True)
    dev = sa.Column(sa.String(64), nullable=False)
    project_id = sa.Column(sa.String(64), nullable=False, index=True)
    action = sa.Column(sa.String(16), nullable=False)
    old_limits = sa.Column(db_types.JsonEncodedDict, nullable=False)
    new_limits = sa.Column(db_types.JsonEncodedDict, nullable=False)
    reason = sa.Column(sa.Text, nullable=False)
    numbers = sa.Column(db_types.JsonEncodedDict, nullable=False)


class Agent(Base):
    """An iotguard-agent and when it was last heard of."""

    __tablename__ = 'agents'
    __table_args__ = (sa.UniqueConstraint('host', name='uq_agents_host'),)

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    host = sa.Column(sa.String(255), nullable=False)
    driver = sa.Column(sa.String(64), nullable=False)
    last_heartbeat = sa.Column(DateTime, nullable=False)
    #: From the last heartbeat (None when the agent did not say): the
    #: agent's version, its reporting interval (seconds), how many disks
    #: it reported and how many caps it had in force.
    version = sa.Column(sa.String(64))
    interval_s = sa.Column(sa.Float)
    disks = sa.Column(sa.Integer)
    caps = sa.Column(sa.Integer)
    created_at, updated_at = _timestamps()


def utcnow():
    """Naive UTC now, the form every datetime column holds."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def aware(value):
    """A datetime column's naive UTC as an aware UTC datetime (or None)."""
    return None if value is None else value.replace(
        tzinfo=datetime.timezone.utc)


def row(obj, fields):
    """``fields`` of a model object (or a row) as a dict."""
    return {f: getattr(obj, f) for f in fields}
