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

"""A disk's record keeps its floor and cap by the minute.

Revision ID: 9d3f6b2a8e14
Revises: 9d3f6b2a8c41
Create Date: 2026-11-28
"""

from alembic import op
import sqlalchemy as sa

revision = '9d3f6b2a8e14'
down_revision = '9d3f6b2a8c41'
branch_labels = None
depends_on = None


def upgrade() -> None:
    for name in ('floor_iops', 'floor_bytes_sec', 'cap_iops',
                 'cap_bytes_sec'):
        op.add_column('disk_minutes', sa.Column(name, sa.Double))
