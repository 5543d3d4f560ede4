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

"""Initial schema: tiers, tier choices and refusals, domains, disks, caps,
decisions, agents.

The revision id is the newest of the migrations this one replaced, so a
development database synced to them is at head already.

Revision ID: 3e9a7c5d1b62
Revises:
Create Date: 2026-11-22
"""

import datetime

from alembic import op
from oslo_db.sqlalchemy import types as db_types
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '3e9a7c5d1b62'
down_revision = None
branch_labels = None
depends_on = None

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')


def _id() -> sa.Column[int]:
    return sa.Column('id', sa.Integer, primary_key=True, autoincrement=True)


def _timestamps() -> list[sa.Column[datetime.datetime]]:
    return [sa.Column('created_at', DateTime, nullable=False),
            sa.Column('updated_at', DateTime)]


def upgrade() -> None:
    op.create_table(
        'tiers', _id(),
        sa.Column('name', sa.String(64), nullable=False),
        sa.Column('description', sa.String(255), nullable=False),
        sa.Column('min_iops', sa.Double, nullable=False),
        sa.Column('min_bytes_sec', sa.Double, nullable=False),
        sa.Column('max_iops', sa.Double, nullable=False),
        sa.Column('max_bytes_sec', sa.Double, nullable=False),
        sa.Column('weight', sa.Double, nullable=False),
        sa.Column('is_public', sa.Boolean, nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint('id', name='pk_tiers'),
        sa.UniqueConstraint('name', name='uq_tiers_name'))
    op.create_table(
        'tier_projects', _id(),
        sa.Column('tier_id', sa.Integer, nullable=False),
        sa.Column('project_id', sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_tier_projects'),
        sa.ForeignKeyConstraint(['tier_id'], ['tiers.id'],
                                name='fk_tier_projects_tier_id_tiers',
                                ondelete='CASCADE'),
        sa.UniqueConstraint('tier_id', 'project_id',
                            name='uq_tier_projects_tier_id_project_id'))
    op.create_index('ix_tier_projects_project_id', 'tier_projects',
                    ['project_id'])
    op.create_table(
        'disk_tiers', _id(),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('dev', sa.String(64), nullable=False),
        sa.Column('source', sa.String(16), nullable=False),
        sa.Column('tier_id', sa.Integer, nullable=False),
        sa.Column('project_id', sa.String(64), nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint('id', name='pk_disk_tiers'),
        sa.ForeignKeyConstraint(['tier_id'], ['tiers.id'],
                                name='fk_disk_tiers_tier_id_tiers'),
        sa.UniqueConstraint('instance_uuid', 'dev', 'source',
                            name='uq_disk_tiers_instance_uuid_dev_source'))
    op.create_index('ix_disk_tiers_instance_uuid', 'disk_tiers',
                    ['instance_uuid'])
    op.create_index('ix_disk_tiers_tier_id', 'disk_tiers', ['tier_id'])
    op.create_table(
        'tier_refusals', _id(),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('dev', sa.String(64), nullable=False),
        sa.Column('source', sa.String(16), nullable=False),
        sa.Column('tier', sa.String(64), nullable=False),
        sa.Column('reason', sa.String(255), nullable=False),
        sa.Column('project_id', sa.String(64), nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint('id', name='pk_tier_refusals'),
        sa.UniqueConstraint('instance_uuid', 'dev', 'source',
                            name='uq_tier_refusals_instance_uuid_dev_source'))
    op.create_index('ix_tier_refusals_instance_uuid', 'tier_refusals',
                    ['instance_uuid'])
    op.create_table(
        'domains', _id(),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('kind', sa.String(16), nullable=False),
        sa.Column('iops_4k', sa.Double),
        sa.Column('bytes_sec', sa.Double),
        sa.Column('policy', sa.String(64)),
        sa.Column('params', db_types.JsonEncodedDict, nullable=False),
        *_timestamps(),
        sa.Column('form', sa.String(16), nullable=False,
                  server_default='additive'),
        sa.Column('profile_source', sa.String(16), nullable=False,
                  server_default='manual'),
        sa.Column('learned_form', sa.String(16)),
        sa.Column('learned_iops_4k', sa.Double),
        sa.Column('learned_bytes_sec', sa.Double),
        sa.Column('learned_error', sa.Double),
        sa.Column('learned_confidence', sa.Double),
        sa.Column('learned_intervals', sa.Integer),
        sa.Column('learned_mixes', sa.Integer),
        sa.Column('learned_identified', sa.String(64)),
        sa.Column('learned_at', DateTime),
        sa.Column('estimator_state', db_types.JsonEncodedDict),
        sa.PrimaryKeyConstraint('id', name='pk_domains'),
        sa.UniqueConstraint('name', name='uq_domains_name'))
    op.create_table(
        'disks', _id(),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('dev', sa.String(64), nullable=False),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('domain_id', sa.Integer, nullable=False),
        sa.Column('volume_id', sa.String(36)),
        sa.Column('project_id', sa.String(64), nullable=False),
        sa.Column('read_iops', sa.Double),
        sa.Column('write_iops', sa.Double),
        sa.Column('read_bytes_sec', sa.Double),
        sa.Column('write_bytes_sec', sa.Double),
        sa.Column('latency_ms', sa.Double),
        sa.Column('sampled_at', DateTime),
        *_timestamps(),
        sa.PrimaryKeyConstraint('id', name='pk_disks'),
        sa.ForeignKeyConstraint(['domain_id'], ['domains.id'],
                                name='fk_disks_domain_id_domains'),
        sa.UniqueConstraint('instance_uuid', 'dev',
                            name='uq_disks_instance_uuid_dev'),
        # Room in each page for the rates the controller rewrites every
        # [controller] rates_write_interval: the new version of a row fits
        # in its page, a HOT update, without a new entry in each index.
        postgresql_with={'fillfactor': 60})
    op.create_index('ix_disks_domain_id', 'disks', ['domain_id'])
    op.create_index('ix_disks_project_id', 'disks', ['project_id'])
    op.create_table(
        'decisions', _id(),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('domain', sa.String(255), nullable=False),
        sa.Column('policy', sa.String(64), nullable=False),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('dev', sa.String(64), nullable=False),
        sa.Column('project_id', sa.String(64), nullable=False),
        sa.Column('action', sa.String(16), nullable=False),
        sa.Column('old_limits', db_types.JsonEncodedDict, nullable=False),
        sa.Column('new_limits', db_types.JsonEncodedDict, nullable=False),
        sa.Column('reason', sa.Text, nullable=False),
        sa.Column('numbers', db_types.JsonEncodedDict, nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_decisions'))
    op.create_index('ix_decisions_created_at', 'decisions', ['created_at'])
    op.create_index('ix_decisions_domain_created_at', 'decisions',
                    ['domain', 'created_at'])
    op.create_index('ix_decisions_instance_uuid', 'decisions',
                    ['instance_uuid'])
    op.create_index('ix_decisions_project_id', 'decisions', ['project_id'])
    op.create_table(
        'caps', _id(),
        sa.Column('disk_id', sa.Integer, nullable=False),
        sa.Column('limits', db_types.JsonEncodedDict, nullable=False),
        sa.Column('lease_expires_at', DateTime, nullable=False),
        sa.Column('decision_id', sa.Integer),
        *_timestamps(),
        sa.PrimaryKeyConstraint('id', name='pk_caps'),
        sa.ForeignKeyConstraint(['disk_id'], ['disks.id'],
                                name='fk_caps_disk_id_disks',
                                ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['decision_id'], ['decisions.id'],
                                name='fk_caps_decision_id_decisions'),
        sa.UniqueConstraint('disk_id', name='uq_caps_disk_id'))
    op.create_table(
        'agents', _id(),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('driver', sa.String(64), nullable=False),
        sa.Column('last_heartbeat', DateTime, nullable=False),
        *_timestamps(),
        sa.Column('version', sa.String(64)),
        sa.Column('interval_s', sa.Float),
        sa.Column('disks', sa.Integer),
        sa.Column('caps', sa.Integer),
        sa.PrimaryKeyConstraint('id', name='pk_agents'),
        sa.UniqueConstraint('host', name='uq_agents_host'))
