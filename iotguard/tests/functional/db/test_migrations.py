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

"""The migrations build exactly the models' schema, on every backend."""

from oslo_db.sqlalchemy import test_migrations
import sqlalchemy as sa

from iotguard.db import migration
from iotguard.db import models
from iotguard.tests.functional.db import backends


class MigrationTests(test_migrations.ModelsMigrationsSync):
    """oslo.db's comparison of the migrated schema with the models."""

    migrate = False

    def get_engine(self):
        return self.engine

    def get_metadata(self):
        return models.Base.metadata

    def db_sync(self, engine):
        migration.upgrade(engine)

    def test_version_before_and_after_sync(self):
        self.assertIsNone(migration.version(self.engine))
        migration.upgrade(self.engine)
        self.assertEqual(migration.head(), migration.version(self.engine))

    def test_sync_twice_changes_nothing(self):
        migration.upgrade(self.engine)
        migration.upgrade(self.engine)
        self.assertEqual(migration.head(), migration.version(self.engine))

    def test_disks_leave_room_for_their_rates(self):
        migration.upgrade(self.engine)
        if self.engine.dialect.name != 'postgresql':
            self.skipTest('a PostgreSQL storage parameter')
        with self.engine.connect() as connection:
            options = connection.execute(sa.text(
                "SELECT reloptions FROM pg_class WHERE relname = 'disks'"
            )).scalar()
        self.assertEqual(['fillfactor=60'], options)
        self.assertEqual(
            {'fillfactor': 60},
            models.Disk.__table__.dialect_options['postgresql']['with'])


backends.on_every_backend(globals(), MigrationTests)
del MigrationTests
