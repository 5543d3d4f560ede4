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

"""Tiers per GiB (tiers.*_per_gb) and disks' sizes (disks.size_*).

Revision ID: 9d3f6b2a8c41
Revises: 7c4e1a9b2d85
Create Date: 2026-11-28
"""

from alembic import op
from oslo_db.sqlalchemy import types as db_types
import sqlalchemy as sa

revision = '9d3f6b2a8c41'
down_revision = '7c4e1a9b2d85'
branch_labels = None
depends_on = None


def upgrade() -> None:
    for name in ('min_iops_per_gb', 'min_bytes_sec_per_gb',
                 'max_iops_per_gb', 'max_bytes_sec_per_gb'):
        op.add_column('tiers', sa.Column(name, sa.Double, nullable=False,
                                         server_default='0'))
    op.add_column('disks', sa.Column('size_gib', sa.Integer))
    op.add_column('disks', sa.Column('size_refused',
                                     db_types.JsonEncodedDict))
