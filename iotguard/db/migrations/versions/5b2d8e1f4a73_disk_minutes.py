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

"""Each disk's record, by the minute (disk_minutes).

Revision ID: 5b2d8e1f4a73
Revises: 3e9a7c5d1b62
Create Date: 2026-11-28
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '5b2d8e1f4a73'
down_revision = '3e9a7c5d1b62'
branch_labels = None
depends_on = None

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')


def upgrade() -> None:
    op.create_table(
        'disk_minutes',
        sa.Column('disk_id', sa.Integer, nullable=False),
        sa.Column('minute', DateTime, nullable=False),
        *(sa.Column(name, sa.Double, nullable=False)
          for name in ('seconds', 'floor_due_s', 'floor_kept_s', 'capped_s',
                       'iops', 'bytes_sec')),
        sa.Column('cap_reason', sa.String(255)),
        sa.PrimaryKeyConstraint('disk_id', 'minute', name='pk_disk_minutes'),
        sa.ForeignKeyConstraint(['disk_id'], ['disks.id'],
                                name='fk_disk_minutes_disk_id_disks',
                                ondelete='CASCADE'))
    op.create_index('ix_disk_minutes_minute', 'disk_minutes', ['minute'])
