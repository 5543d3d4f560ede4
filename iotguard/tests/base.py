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

"""Base test case: a fresh ConfigOpts per test, no network, no sleep."""

import os
import time

import fixtures
from oslo_config import cfg
from oslo_config import fixture as config_fixture
import testtools

from iotguard import conf as iotguard_conf


class TestCase(testtools.TestCase):
    """Every test gets ``self.conf``, its own registered ConfigOpts."""

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(60, gentle=True))
        conf = cfg.ConfigOpts()
        iotguard_conf.register_opts(conf)
        self.conf_fixture = self.useFixture(config_fixture.Config(conf))
        self.conf = self.conf_fixture.conf
        self.conf([], project='iotguard', default_config_files=[])

    def flags(self, group=None, **kw):
        """Override options for this test only."""
        for name, value in kw.items():
            self.conf_fixture.config(group=group, **{name: value})

    @classmethod
    def class_fixture(cls, fixture):
        """``fixture`` set up for the whole class (a cloud, a database).

        Cleaned up by :meth:`tearDownClass`, last set up first.
        """
        fixture.setUp()
        if 'class_fixtures' not in cls.__dict__:
            cls.class_fixtures = []
        cls.class_fixtures.append(fixture)
        return fixture

    @classmethod
    def tearDownClass(cls):
        for fixture in reversed(cls.__dict__.get('class_fixtures', [])):
            fixture.cleanUp()
        cls.class_fixtures = []
        super().tearDownClass()


def wait_for(predicate, timeout, step=0.1):
    """``predicate()`` once it is true, polled until ``timeout`` (s).

    For the functional tests, whose real services answer in their own
    time; the last answer (false) when the time is up.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(step)
    return predicate()


def bed_report(test, text):
    """Append ``text`` under ``test``'s id to ``$IOTGUARD_BED_REPORT``.

    For the functional tests on a real bed, whose figures a person reads
    (and the docs quote) when that variable names a file; nothing if not.
    """
    path = os.environ.get('IOTGUARD_BED_REPORT')
    if path:
        with open(path, 'a') as f:
            f.write('== %s %s\n%s\n' % (
                time.strftime('%Y-%m-%dT%H:%M:%S'), test.id(), text))
