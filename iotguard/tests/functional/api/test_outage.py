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

"""The database cut off and back, through a TCP proxy: 503, then 200.

The application talks to a real PostgreSQL or MariaDB server through
:class:`TCPProxy` on loopback, configured as iotguard-api configures
itself (:func:`iotguard.conf.database.set_api_defaults`). Cutting the
proxy closes every connection and refuses new ones: each request must
answer 503 with ``Retry-After`` within :data:`MAX_WAIT_S`; restoring it,
the same application object answers 200 again.
"""

import socket
import threading
import time

import fixtures
from sqlalchemy.engine import url as sa_url

from iotguard.api import util
from iotguard.conf import database as database_conf
from iotguard.db import api as db_api
from iotguard.tests.functional.api import base

#: The longest a request may take while the database is away, in seconds
#: (it takes milliseconds; the margin is for a busy machine).
MAX_WAIT_S = 5.0


def _close(sock):
    """Shut down (which wakes a thread blocked on it) and close."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


class TCPProxy(fixtures.Fixture):
    """``127.0.0.1:port`` forwarded to ``upstream`` (host, port), threads.

    :meth:`cut` closes every connection and stops listening, so a new
    connection is refused; :meth:`restore` listens again on the same port.
    """

    def __init__(self, upstream):
        super().__init__()
        self.upstream = upstream

    def _setUp(self):
        self.port = 0
        self._listening = None
        self._open = []
        self.restore()
        self.addCleanup(self.cut)

    def restore(self):
        listener = socket.create_server(('127.0.0.1', self.port))
        listener.settimeout(0.1)
        self.port = listener.getsockname()[1]
        stop = threading.Event()
        thread = threading.Thread(target=self._accept,
                                  args=(listener, stop), daemon=True)
        thread.start()
        self._listening = (listener, stop, thread)

    def cut(self):
        if self._listening is None:
            return
        listener, stop, thread = self._listening
        self._listening = None
        stop.set()
        thread.join()
        listener.close()
        # The accept thread, the only one to add to it, has ended.
        for sock in self._open:
            _close(sock)
        self._open = []

    def _accept(self, listener, stop):
        while not stop.is_set():
            try:
                client, _address = listener.accept()
            except socket.timeout:
                continue
            client.settimeout(None)
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                _close(client)
                continue
            server.settimeout(None)
            self._open += [client, server]
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink),
                                 daemon=True).start()

    @staticmethod
    def _pump(source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        _close(source)
        _close(sink)


class Outage:
    """The application on a database behind a :class:`TCPProxy`."""

    def setUp(self):
        super().setUp()
        database_conf.set_api_defaults(self.conf)
        real = sa_url.make_url(self.conf.database.connection)
        self.proxy = self.useFixture(TCPProxy((real.host, real.port)))
        self.flags(group='database', connection=real.set(
            port=self.proxy.port).render_as_string(hide_password=False))
        proxied = db_api.Connection(self.conf)
        self.addCleanup(proxied.dispose)
        self.app = self.deploy(proxied)

    def assertServed(self, tier):
        """A read answers 200 and a write (creating ``tier``) 201."""
        response = self.call('GET', '/v1/tiers', who=base.ADMIN)
        self.assertEqual(200, response.status_code, response.text)
        response = self.call('POST', '/v1/tiers', body={'name': tier},
                             who=base.ADMIN)
        self.assertEqual(201, response.status_code, response.text)

    def assertUnavailable(self, rounds=3):
        """Reads and writes answer 503 with Retry-After, quickly."""
        for _round in range(rounds):
            for method, body in (('GET', None),
                                 ('POST', {'name': 'during-outage'})):
                started = time.monotonic()
                response = self.call(method, '/v1/tiers', body=body,
                                     who=base.ADMIN)
                took = time.monotonic() - started
                error = self.assertError(response, 503,
                                         'database is unreachable')
                self.assertTrue(error['request_id'].startswith('req-'))
                self.assertEqual(str(util.RETRY_AFTER_S),
                                 response.headers['Retry-After'])
                self.assertLess(took, MAX_WAIT_S, method)

    def assertTiers(self, names):
        """The tiers in the database, read directly, not through the proxy."""
        self.assertEqual(sorted(names),
                         sorted(t.name for t in self.db.tier_list()))

    def test_cut_mid_run_then_back(self):
        self.assertServed('before')
        self.proxy.cut()
        self.assertUnavailable()
        self.proxy.restore()
        self.assertServed('after')
        self.assertTiers(['before', 'after'])

    def test_down_at_start_then_up(self):
        # deploy() opened nothing: the first request starts the engine.
        self.proxy.cut()
        self.assertUnavailable()
        self.proxy.restore()
        self.assertServed('after')
        self.assertTiers(['after'])


class OutagePostgresql(Outage, base.APITestCase):
    backend = 'postgresql'


class OutageMysql(Outage, base.APITestCase):
    backend = 'mysql'
