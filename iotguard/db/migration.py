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

"""Schema upgrades through alembic's API (iotguard-manage db sync)."""

import os

from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script
import sqlalchemy as sa

_LOCATION = os.path.join(os.path.dirname(__file__), 'migrations')


def _config(connection: sa.Connection | None) -> alembic_config.Config:
    cfg = alembic_config.Config(os.path.join(_LOCATION, 'alembic.ini'))
    cfg.set_main_option('script_location', _LOCATION)
    cfg.attributes['connection'] = connection
    return cfg


def upgrade(engine: sa.Engine) -> None:
    """Bring the schema of ``engine``'s database to the newest revision."""
    with engine.begin() as connection:
        command.upgrade(_config(connection), 'head')


def version(engine: sa.Engine) -> str | None:
    """The revision the database is at, ``None`` before the first sync."""
    with engine.connect() as connection:
        return alembic_migration.MigrationContext.configure(
            connection).get_current_revision()


def head() -> str | None:
    """The newest revision this code knows."""
    return alembic_script.ScriptDirectory.from_config(
        _config(None)).get_current_head()
