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

"""Refused flavor and volume type tiers; the API's choices are 'api'.

Revision ID: 5b7e2d9c4a10
Revises: 1f0a6c3e9b21
Create Date: 2026-11-24
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '5b7e2d9c4a10'
down_revision = '1f0a6c3e9b21'
branch_labels = None
depends_on = None

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')


def upgrade() -> None:
    op.create_table(
        'tier_refusals',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('dev', sa.String(64), nullable=False),
        sa.Column('source', sa.String(16), nullable=False),
        sa.Column('tier', sa.String(64), nullable=False),
        sa.Column('reason', sa.String(255), nullable=False),
        sa.Column('project_id', sa.String(64), nullable=False),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime),
        sa.PrimaryKeyConstraint('id', name='pk_tier_refusals'),
        sa.UniqueConstraint('instance_uuid', 'dev', 'source',
                            name='uq_tier_refusals_instance_uuid_dev_source'))
    op.create_index('ix_tier_refusals_instance_uuid', 'tier_refusals',
                    ['instance_uuid'])
    # A tenant's choice through the API was recorded as 'metadata'.
    op.execute("UPDATE disk_tiers SET source = 'api' "
               "WHERE source = 'metadata'")
