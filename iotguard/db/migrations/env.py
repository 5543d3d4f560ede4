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

"""Alembic environment: runs on the connection iotguard.db.migration gives.

``iotguard.db.migration`` passes an open connection in
``config.attributes['connection']``; the alembic command line (for
developers) falls back to ``sqlalchemy.url`` of alembic.ini.
"""

from alembic import context
import sqlalchemy as sa

from iotguard.db import models


def _run(connection: sa.Connection) -> None:
    context.configure(connection=connection,
                      target_metadata=models.Base.metadata,
                      render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = context.config.attributes.get('connection')
    if connection is not None:
        _run(connection)
        return
    engine = sa.create_engine(
        context.config.get_main_option('sqlalchemy.url', ''))
    with engine.connect() as connection:
        _run(connection)


run_migrations_online()
