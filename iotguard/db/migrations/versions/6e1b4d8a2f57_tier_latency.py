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

"""Tiers' latency objectives (tiers.latency_p99_ms).

Revision ID: 6e1b4d8a2f57
Revises: 3a7f5c2e9b16
Create Date: 2026-11-28
"""

from alembic import op
import sqlalchemy as sa

revision = '6e1b4d8a2f57'
down_revision = '3a7f5c2e9b16'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('tiers', sa.Column('latency_p99_ms', sa.Double,
                                     nullable=False, server_default='0'))
