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

"""A domain's profile form, its source and the learned profile.

Revision ID: 8c4f1e2a7b93
Revises: 8c3d5e1f2a47
Create Date: 2026-11-25
"""

from alembic import op
from oslo_db.sqlalchemy import types as db_types
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '8c4f1e2a7b93'
down_revision = '8c3d5e1f2a47'
branch_labels = None
depends_on = None

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')


def upgrade() -> None:
    # every existing profile was typed in the additive form, and is pinned
    op.add_column('domains', sa.Column('form', sa.String(16), nullable=False,
                                       server_default='additive'))
    op.add_column('domains', sa.Column('profile_source', sa.String(16),
                                       nullable=False,
                                       server_default='manual'))
    op.add_column('domains', sa.Column('learned_form', sa.String(16)))
    for name in ('learned_iops_4k', 'learned_bytes_sec', 'learned_error',
                 'learned_confidence'):
        op.add_column('domains', sa.Column(name, sa.Double))
    for name in ('learned_intervals', 'learned_mixes'):
        op.add_column('domains', sa.Column(name, sa.Integer))
    op.add_column('domains', sa.Column('learned_identified', sa.String(64)))
    op.add_column('domains', sa.Column('learned_at', DateTime))
    op.add_column('domains', sa.Column('estimator_state',
                                       db_types.JsonEncodedDict))
