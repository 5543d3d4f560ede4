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

"""The agent host's clock offset the controller learned (agents.*).

Revision ID: b4e8c1d7a325
Revises: 6e1b4d8a2f57
Create Date: 2026-11-29
"""

from alembic import op
import sqlalchemy as sa

revision = 'b4e8c1d7a325'
down_revision = '6e1b4d8a2f57'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('agents', sa.Column('clock_offset_s', sa.Float))
