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

"""What a domain's policy remembers (domains.policy_state).

Revision ID: 7c4e1a9b2d85
Revises: 5b2d8e1f4a73
Create Date: 2026-11-28
"""

from alembic import op
from oslo_db.sqlalchemy import types as db_types
import sqlalchemy as sa

revision = '7c4e1a9b2d85'
down_revision = '5b2d8e1f4a73'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('domains', sa.Column(
        'policy_state', db_types.JsonEncodedDict(mysql_as_long=True)))
