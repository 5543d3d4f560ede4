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

"""What an agent's heartbeat says: its version, interval, disks and caps.

Revision ID: 8c3d5e1f2a47
Revises: 5b7e2d9c4a10
Create Date: 2026-11-25
"""

from alembic import op
import sqlalchemy as sa

revision = '8c3d5e1f2a47'
down_revision = '5b7e2d9c4a10'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable: rows written before this revision (and agents that do not
    # send a field) have none.
    op.add_column('agents', sa.Column('version', sa.String(64)))
    op.add_column('agents', sa.Column('interval_s', sa.Float))
    op.add_column('agents', sa.Column('disks', sa.Integer))
    op.add_column('agents', sa.Column('caps', sa.Integer))
