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

"""The real WSGI application over a real database, called in process."""

import json
from unittest import mock

import fixtures
from oslo_utils import timeutils
import sqlalchemy as sa
import webob

from iotguard.api import app
from iotguard.api import nova
from iotguard.tests import base
from iotguard.tests.fixtures import database

ADMIN = {'project': 'admin-proj', 'roles': 'admin,member,reader'}
MEMBER_A = {'project': 'proj-a', 'roles': 'member,reader'}
READER_A = {'project': 'proj-a', 'roles': 'reader'}
NOROLE_A = {'project': 'proj-a', 'roles': ''}
MEMBER_B = {'project': 'proj-b', 'roles': 'member,reader'}


class Dump:
    """Every row of every table by name, each time it is called.

    The tables are reflected once, when it is made.
    """

    def __init__(self, engine):
        self.engine = engine
        self.metadata = sa.MetaData()
        self.metadata.reflect(engine)

    def __call__(self):
        with self.engine.connect() as connection:
            return {name: connection.execute(
                sa.select(table).order_by(*table.columns)).all()
                for name, table in self.metadata.tables.items()}


class APITestCase(base.TestCase):
    """``self.call(...)`` talks to iotguard.api.app.deploy() on ``backend``.

    Auth is noauth; Nova's compute API records what
    :class:`iotguard.api.nova.Metadata` asks of it (``self.nova_calls``:
    ``(instance, tier)``, tier None for an unset).
    """

    backend = 'sqlite'

    def setUp(self):
        super().setUp()
        why = database.unavailable(self.backend)
        if why:
            self.skipTest(why)
        self.flags(group='api', auth_strategy='noauth')
        self.db = self.useFixture(database.Database(self.backend,
                                                    self.conf)).db
        self.nova_calls = []
        compute = mock.Mock()
        compute.set_server_metadata.side_effect = (
            lambda uuid, **md: self.nova_calls.append(
                (uuid, md[nova.METADATA_KEY])))
        compute.delete_server_metadata.side_effect = (
            lambda uuid, keys: self.nova_calls.append((uuid, None)))
        self.useFixture(fixtures.MockPatch(
            'iotguard.clients.get_connection',
            return_value=mock.Mock(compute=compute)))
        self.app = self.deploy(self.db)

    def at(self, when):
        """The API's clock reads ``when`` for the rest of the test.

        (Rates sampled before ``[controller]`` intervals x
        ``STALE_INTERVALS`` are stale and left out of a domain's
        utilisation; the fixtures' rates have fixed times.)
        """
        timeutils.set_time_override(when)
        self.addCleanup(timeutils.clear_time_override)

    def deploy(self, db):
        return app.deploy(self.conf, db=db)

    def call(self, method, path, body=None, who=None, raw=None,
             content_type='application/json', headers=None, environ=None):
        """One request; ``who`` is a dict of project and roles.

        ``environ`` overrides WSGI variables, as a server sets them: e.g.
        ``PATH_INFO`` of raw bytes (latin-1), which ``path`` cannot give.
        """
        req = webob.Request.blank(path, method=method)
        req.environ.update(environ or {})
        if who is not None:
            req.headers['X-User-Id'] = 'user-%s' % who['project']
            req.headers['X-Project-Id'] = who['project']
            req.headers['X-Roles'] = who['roles']
        if body is not None:
            raw = json.dumps(body).encode()
        if raw is not None:
            req.body = raw
            req.content_type = content_type
        req.headers.update(headers or {})
        return req.get_response(self.app)

    def assertError(self, response, code, message_part=None):
        """A JSON error of the OpenStack format with ``code``."""
        self.assertEqual(code, response.status_code, response.text)
        error = response.json['error']
        self.assertEqual(code, error['code'])
        self.assertTrue(error['title'])
        self.assertTrue(error['message'])
        if message_part:
            self.assertIn(message_part, error['message'])
        return error
