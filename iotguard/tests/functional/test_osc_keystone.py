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

"""OSC and tempest plugins through a real Keystone and its catalog.

A throwaway Keystone (the one tools/install-keystone.sh puts in its own
virtualenv: SQLite, fernet tokens, keystone.wsgi.api under wsgiref in a
subprocess) holds the catalog entry of service type resource-guarantee;
iotguard-api runs with auth_strategy = keystone (keystonemiddleware
validating every token against that Keystone). Then:

* the real ``openstack`` CLI, with password authentication and no
  ``--os-iotguard-url``, finds iotguard in the catalog: the admin creates
  a tier, a project member lists it and is refused the creation;
* projects given by name are looked up in that Keystone (``tier create
  --project``, ``tier unset --project``, ``instance list --project``,
  with ``--project-domain`` for same-named projects), and a server name
  with no Nova in the catalog is a clear error;
* tempest runs the plugin's tier API tests (dynamic credentials made in
  that Keystone) and they pass.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import unittest

import fixtures
import openstack
from oslo_config import cfg

from iotguard.api import limits
from iotguard import conf as iotguard_conf
from iotguard.tests import base
from iotguard.tests.fixtures import confs
from iotguard.tests.fixtures import database
from iotguard.tests.fixtures import openstack as os_fixtures
from iotguard.tests.functional import test_osc

VENV = os.environ.get('IOTGUARD_KEYSTONE_VENV', '/opt/iotguard-keystone')
PASSWORD = 'secret-%d' % os.getpid()

SERVE = textwrap.dedent('''
    import socketserver
    import sys
    from wsgiref import simple_server

    sys.argv = sys.argv[:1]  # keystone parses the command line
    from keystone.wsgi.api import application


    class Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
        daemon_threads = True


    class Quiet(simple_server.WSGIRequestHandler):
        def log_message(self, *args):
            pass


    server = simple_server.make_server('127.0.0.1', 0, application,
                                       server_class=Server,
                                       handler_class=Quiet)
    print(server.server_port, flush=True)
    server.serve_forever()
''')

KEYSTONE_CONF = '''
[database]
connection = sqlite:///%(dir)s/keystone.sqlite
[fernet_tokens]
key_repository = %(dir)s/fernet
[fernet_receipts]
key_repository = %(dir)s/fernet
[credential]
key_repository = %(dir)s/credential
'''

IOTGUARD_CONF = '''
[api]
auth_strategy = keystone
nova_metadata_sync = false
'''

SERVICES = confs.section('service_available', iotguard='True', nova='False',
                         neutron='False', cinder='False', glance='False',
                         swift='False')

TIER_TESTS = ('test_create_show_update_delete',
              'test_floor_above_ceiling_is_refused',
              'test_duplicate_name_is_a_conflict',
              'test_project_cannot_change_tiers',
              'test_private_tier_only_for_its_projects')


def _write(directory, name, text):
    path = os.path.join(directory, name)
    with open(path, 'w') as out:
        out.write(text)
    return path


def run_cli(auth, home, *args, region='RegionOne'):
    """``openstack iotguard <args>`` with password ``auth``; the process."""
    command = [shutil.which('openstack', path=os.path.dirname(sys.executable)),
               '--os-auth-url', auth['auth_url'],
               '--os-username', auth['username'],
               '--os-password', auth['password'],
               '--os-project-name', auth['project_name'],
               '--os-user-domain-id', 'default',
               '--os-project-domain-id', 'default',
               '--os-identity-api-version', '3',
               '--os-interface', 'public',
               '--os-region-name', region, 'iotguard'] + list(args)
    env = {k: v for k, v in os.environ.items() if not k.startswith('OS_')}
    env['HOME'] = home
    return subprocess.run(command, env=env, capture_output=True, text=True,
                          timeout=60)


class Keystone(fixtures.Fixture):
    """A fresh Keystone: ``.url`` (.../v3), the admin's ``PASSWORD``."""

    def _setUp(self):
        self.dir = self.useFixture(fixtures.TempDir()).path
        conf = _write(self.dir, 'keystone.conf',
                      KEYSTONE_CONF % {'dir': self.dir})
        self.env = dict(os.environ, OS_KEYSTONE_CONFIG_FILES=conf)
        self._manage(conf, 'db_sync')
        for setup in ('fernet_setup', 'credential_setup'):
            self._manage(conf, setup, '--keystone-user', 'root',
                         '--keystone-group', 'root')
        serve = _write(self.dir, 'serve.py', SERVE)
        self.process = subprocess.Popen(
            [os.path.join(VENV, 'bin', 'python'), serve], env=self.env,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.addCleanup(self.process.wait, 10)
        self.addCleanup(self.process.terminate)
        port = self.process.stdout.readline().strip()
        if not port.isdigit():
            raise RuntimeError('keystone did not start: %r' % port)
        self.url = 'http://127.0.0.1:%s/v3' % port
        self._manage(conf, 'bootstrap', '--bootstrap-password', PASSWORD,
                     '--bootstrap-public-url', self.url,
                     '--bootstrap-region-id', 'RegionOne')

    def _manage(self, conf, *args):
        subprocess.run([os.path.join(VENV, 'bin', 'keystone-manage'),
                        '--config-file', conf] + list(args), env=self.env,
                       check=True, capture_output=True, timeout=120)

    def auth(self, user='admin', project='admin'):
        return {'auth_url': self.url, 'username': user,
                'password': PASSWORD, 'project_name': project,
                'user_domain_id': 'default', 'project_domain_id': 'default'}


def identity_kinds(identity):
    """:class:`os_fixtures.Kept`'s kinds of what tests make in Keystone.

    ``identity``: an admin connection's identity proxy.
    """
    def delete_domain(domain_id):
        identity.update_domain(domain_id, is_enabled=False)
        identity.delete_domain(domain_id)

    return [('endpoint', identity.endpoints, identity.delete_endpoint),
            ('service', identity.services, identity.delete_service),
            ('user', identity.users, identity.delete_user),
            ('project', identity.projects, identity.delete_project),
            ('role', identity.roles, identity.delete_role),
            ('domain', identity.domains, delete_domain)]


class SharedKeystone(base.TestCase):
    """One Keystone for the class's tests (``cls.keystone``).

    Its set-up (db_sync, fernet keys, bootstrap) takes half a minute.
    Every test starts from what it held after the bootstrap: what a test
    made in it (users, projects, domains, roles, catalog entries) is
    deleted after it, and checked gone.
    """

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not os.path.exists(os.path.join(VENV, 'bin', 'keystone-manage')):
            raise unittest.SkipTest(
                'no Keystone in %s (tools/install-keystone.sh)' % VENV)
        try:
            with fixtures.Timeout(300, gentle=True):
                cls.keystone = cls.class_fixture(Keystone())
                admin = openstack.connection.Connection(
                    region_name='RegionOne', **cls.keystone.auth())
                cls.addClassCleanup(admin.close)
                cls.kept = os_fixtures.Kept(identity_kinds(admin.identity))
        except BaseException:
            cls.tearDownClass()
            raise

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(300, gentle=True))
        self.addCleanup(self.kept.take_back)


def api_conf(test, extra=''):
    """iotguard-api's options behind ``test.keystone``, from a file.

    ``extra``: more of the file (sections of its own).
    """
    path = _write(test.useFixture(fixtures.TempDir()).path, 'iotguard.conf',
                  IOTGUARD_CONF + confs.authtoken(test.keystone.url,
                                                  PASSWORD) + extra)
    conf = cfg.ConfigOpts()
    iotguard_conf.register_opts(conf)
    conf(['--config-file', path], project='iotguard',
         default_config_files=[])
    return conf


def iotguard_in_catalog(test, keystone=None):
    """A Keystone and iotguard-api in its catalog, for ``test``.

    The Keystone is ``keystone`` (left as the test found it:
    :class:`SharedKeystone`), or a new one. Sets ``test.keystone``,
    ``test.api`` (authtoken on: [api] keystone and [keystone_authtoken]
    from a config file) and ``test.admin`` (an openstacksdk connection as
    Keystone's admin).
    """
    test.keystone = keystone or test.useFixture(Keystone())
    test.api = test.useFixture(test_osc.ApiServer(api_conf(test),
                                                  noauth=False))
    test.admin = openstack.connection.Connection(
        region_name='RegionOne', **test.keystone.auth())
    test.addCleanup(test.admin.close)
    identity = test.admin.identity
    service = identity.create_service(name='iotguard',
                                      type='resource-guarantee')
    identity.create_endpoint(service_id=service.id, interface='public',
                             url=test.api.url, region_id='RegionOne')


def member(test, project_name, user_name, domain_id='default'):
    """A new project with a new member user; that user's auth."""
    identity = test.admin.identity
    project = identity.create_project(name=project_name, domain_id=domain_id)
    user = identity.create_user(name=user_name, password=PASSWORD,
                                domain_id=domain_id)
    identity.assign_project_role_to_user(
        project, user, identity.find_role('member'))
    return test.keystone.auth(user_name, project_name)


class TestThroughKeystone(SharedKeystone):

    def setUp(self):
        super().setUp()
        iotguard_in_catalog(self, self.keystone)

    def _member(self, project_name, user_name, domain_id='default'):
        return member(self, project_name, user_name, domain_id)

    def openstack(self, auth, *args, ok=True):
        proc = run_cli(auth, self.useFixture(fixtures.TempHomeDir()).path,
                       *args)
        self.assertEqual(ok, proc.returncode == 0, proc.stderr)
        return proc.stdout, proc.stderr

    def test_openstack_cli_finds_iotguard_in_the_catalog(self):
        out, _ = self.openstack(self.keystone.auth(), 'tier', 'create',
                                'gold', '--min-iops', '2000', '-f', 'json')
        self.assertEqual(2000.0, json.loads(out)['Min IOPS'])
        member = self._member('demo', 'demo')
        out, _ = self.openstack(member, 'tier', 'list', '-f', 'json')
        self.assertEqual(['gold'], [t['Name'] for t in json.loads(out)])
        # The noauth options mean nothing with a password.
        _, err = self.openstack(member, '--os-iotguard-noauth-roles',
                                'admin', 'tier', 'create', 'mine', ok=False)
        self.assertIn('403', err)
        self.assertIn('iotguard:tier:create', err)
        self.assertIn('201 POST /v1/tiers', self.api.seen)
        self.assertIn('403 POST /v1/tiers', self.api.seen)

    def json(self, auth, *args, ok=True):
        return json.loads(self.openstack(auth, *(args + ('-f', 'json')),
                                         ok=ok)[0])

    def test_projects_by_name(self):
        admin = self.keystone.auth()
        member = self._member('demo', 'demo')
        demo = self.admin.identity.find_project('demo').id
        tier = self.json(admin, 'tier', 'create', 'silver', '--private',
                         '--project', 'demo', '--min-iops', '100')
        self.assertEqual([demo], tier['Projects'])
        # The project's member sees it: the name became the right ID.
        self.assertEqual(['silver'], [t['Name'] for t in self.json(
            member, 'tier', 'list')])
        db = self.api.db
        db.domain_create('local:c1', 'local', iops_4k=10000.0,
                         bytes_sec=400e6)
        server = '5a0c6f3e-0d7a-4b53-9a7e-3f7f2d9b8c41'
        db.disk_upsert(server, 'vda', 'c1', 'local:c1', demo)
        self.openstack(member, 'instance', 'set', '--tier', 'silver',
                       server)
        rows = self.json(admin, 'instance', 'list', '--project', 'demo')
        self.assertEqual([(server, demo, 'silver')],
                         [(r['Instance'], r['Project'], r['Tier'])
                          for r in rows])
        self.assertEqual([], self.json(admin, 'instance', 'list'))
        self.assertEqual([server], [r['Instance'] for r in self.json(
            member, 'instance', 'list')])
        # A second "demo" in another domain: --project-domain tells them
        # apart; without it the name is ambiguous.
        other = self.admin.identity.create_domain(name='other')
        self._member('demo', 'demo2', domain_id=other.id)
        self.assertEqual([], self.json(admin, 'instance', 'list',
                                       '--project', 'demo',
                                       '--project-domain', 'other'))
        self.assertEqual([server], [r['Instance'] for r in self.json(
            admin, 'instance', 'list', '--project', 'demo',
            '--project-domain', 'default')])
        _, err = self.openstack(admin, 'instance', 'list', '--project',
                                'demo', ok=False)
        self.assertIn("More than one project is named 'demo'", err)
        _, err = self.openstack(admin, 'instance', 'list', '--project',
                                'nobody', ok=False)
        self.assertIn("No project with a name or ID of 'nobody'", err)
        self.openstack(admin, 'instance', 'unset', '--tier', server)
        self.openstack(admin, 'tier', 'unset', 'silver', '--project', demo)
        self.assertEqual([], self.json(admin, 'tier', 'show',
                                       'silver')['Projects'])
        # No compute service in this catalog: a server name cannot be
        # looked up, and the error says what to do.
        _, err = self.openstack(member, 'instance', 'show', 'web-1',
                                ok=False)
        self.assertIn("Could not look server 'web-1' up in Nova", err)
        self.assertIn('give its UUID', err)
        self.assertIn('204 DELETE /v1/instances/%s/tier' % server,
                      self.api.seen)

    def test_unified_limits_of_floors(self):
        """A member's choice beyond the project's limit in Keystone: 409.

        A second iotguard-api, with [admission] unified_limits and
        [oslo_limit] naming the catalog's iotguard endpoint, over its own
        database; the limits are registered for that service and region.
        """
        identity = self.admin.identity
        service = identity.find_service('iotguard')
        endpoint = next(identity.endpoints(service_id=service.id))
        demo = self._member('demo', 'demo')
        project = identity.find_project('demo').id
        registered = identity.create_registered_limit(
            service_id=service.id, region_id='RegionOne',
            resource_name=limits.LOCAL, default_limit=0)
        self.addCleanup(identity.delete_registered_limit, registered)
        # gold is 2125 units, bronze 107: room for gold and bronze.
        own = identity.create_limit(
            service_id=service.id, region_id='RegionOne',
            project_id=project, resource_name=limits.LOCAL,
            resource_limit=2232)
        self.addCleanup(identity.delete_limit, own)
        # oslo.limit keeps one Keystone connection per process.
        self.useFixture(fixtures.MonkeyPatch(
            'oslo_limit.limit._SDK_CONNECTION', None))
        self.addCleanup(cfg.CONF.reset)
        api = self.useFixture(test_osc.ApiServer(api_conf(
            self, confs.section('admission', unified_limits='True')
            + confs.password_auth('oslo_limit', self.keystone.url, PASSWORD,
                                  endpoint_id=endpoint.id)), noauth=False))
        db = api.db
        db.tier_create(database.tier_values('gold', min_iops=2000.0))
        db.tier_create(database.tier_values('bronze', min_iops=100.0))
        db.domain_create('local:c1', 'local', iops_4k=100000.0,
                         bytes_sec=4e9)
        db.domain_create('ceph', 'ceph', iops_4k=100000.0, bytes_sec=4e9)
        x, y, z = ('5a0c6f3e-0d7a-4b53-9a7e-3f7f2d9b8c4%d' % i
                   for i in range(3))
        for uuid, domain in ((x, 'local:c1'), (y, 'local:c1'), (z, 'ceph')):
            db.disk_upsert(uuid, 'vda', 'c1', domain, project)
        connection = openstack.connection.Connection(
            region_name='RegionOne', **demo)
        self.addCleanup(connection.close)
        session = connection.session

        def choose(uuid, tier):
            return session.put('%s/v1/instances/%s/tier' % (api.url, uuid),
                               json={'tier': tier}, raise_exc=False)

        self.assertEqual(200, choose(x, 'gold').status_code)
        refused = choose(y, 'gold')
        self.assertEqual(409, refused.status_code)
        self.assertIn('iotguard_floor_units_local: limit 2232, committed '
                      '2125, this choice 2125 more',
                      refused.json()['error']['message'])
        self.assertIsNone(db.disk_list(instance_uuid=y)[0]['tier'])
        self.assertEqual(200, choose(y, 'bronze').status_code)
        # No limit registered for the shared domains' floors: none.
        refused = choose(z, 'bronze')
        self.assertEqual(409, refused.status_code)
        self.assertIn('iotguard_floor_units_shared: limit 0',
                      refused.json()['error']['message'])
        self.assertEqual(['gold', 'bronze', None], [
            d['tier'] and d['tier'].name for d in db.disk_list(
                project_id=project)])

    def test_tempest_tier_tests_pass(self):
        work = self.useFixture(fixtures.TempDir()).path
        _write(work, 'tempest.conf', confs.tempest(
            work, self.keystone.url, PASSWORD) + SERVICES)
        env = dict(os.environ, TEMPEST_CONFIG_DIR=work,
                   TEMPEST_CONFIG='tempest.conf')
        # Run outside the checkout: an iotguard.egg-info there would shadow
        # the installed entry points tempest finds its plugins by.
        proc = subprocess.run(
            [sys.executable, '-m', 'subunit.run',
             'iotguard.tempest_plugin.tests.api.test_tier'],
            cwd=work, env=env, capture_output=True, timeout=240)
        csv = subprocess.run(
            [os.path.join(os.path.dirname(sys.executable), 'subunit2csv')],
            input=proc.stdout, capture_output=True, timeout=60)
        outcomes = {}
        for row in csv.stdout.decode().splitlines()[1:]:
            test_id, status = row.split(',')[:2]
            name = test_id.rsplit('.', 1)[-1].split('[')[0]
            outcomes[name] = status
        self.assertEqual(dict.fromkeys(TIER_TESTS, 'success'), outcomes,
                         proc.stderr.decode()[-2000:])
        for request in ('201 POST /v1/tiers', '403 POST /v1/tiers',
                        '409 POST /v1/tiers', '400 POST /v1/tiers',
                        '204 DELETE /v1/tiers/'):
            self.assertTrue(any(r.startswith(request)
                                for r in self.api.seen), request)
