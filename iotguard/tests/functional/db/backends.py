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

"""Run a test class on SQLite, PostgreSQL and MySQL/MariaDB."""

from iotguard.tests import base
from iotguard.tests.fixtures import database


class BackendMixin:
    """Gives ``self.db``/``self.engine`` on ``self.backend``, migrated."""

    backend = None

    def setUp(self):
        super().setUp()
        why = database.unavailable(self.backend)
        if why:
            self.skipTest(why)
        self.database = self.useFixture(database.Database(
            self.backend, self.conf, migrate=getattr(self, 'migrate', True)))
        self.db = self.database.db
        self.engine = self.database.engine


def on_every_backend(namespace, tests):
    """Add ``<Tests><Backend>`` TestCase classes for each backend."""
    for backend in database.BACKENDS:
        name = '%s%s' % (tests.__name__, backend.capitalize())
        namespace[name] = type(name, (BackendMixin, tests, base.TestCase),
                               {'backend': backend,
                                '__module__': namespace['__name__']})
