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

"""Room in the disks' pages for their rates (PostgreSQL).

The controller rewrites the rates of every disk each ``[controller]
rates_write_interval``. With a fill factor of 60 the new version of a row
fits in its own page, so PostgreSQL updates it in place of its indexes
(a HOT update) instead of adding an entry to each of them. Existing pages
are not rewritten here (that would lock the table): they gain the room
as their rows move. Nothing changes on other databases.

Revision ID: 3e9a7c5d1b62
Revises: 8c4f1e2a7b93
Create Date: 2026-11-26
"""

from alembic import op

revision = '3e9a7c5d1b62'
down_revision = '8c4f1e2a7b93'
branch_labels = None
depends_on = None

#: As in :class:`iotguard.db.models.Disk`.
FILLFACTOR = 60


def upgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        op.execute('ALTER TABLE disks SET (fillfactor = %d)' % FILLFACTOR)
