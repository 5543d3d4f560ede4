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

"""The devstack plugin, phase by phase, as close to devstack as this
machine allows.

devstack itself cannot run here. ``devstack/plugin.sh`` runs unchanged
under a harness (``iotguard/tests/functional/devstack/``) whose stand-ins
for devstack's functions keep devstack's semantics against real parts: a
real Keystone (the one of test_osc_keystone), MariaDB, RabbitMQ, a venv
made with Debian's /usr/bin/python3 as devstack's global venv, and
Debian's own uWSGI (``uwsgi-core`` + ``uwsgi-plugin-python3``) started
with devstack's command line for uWSGI services, ``--venv`` included.
The API is then reached through the URL the plugin put in Keystone's
catalog, with a Keystone token.

Not covered (no Apache, no systemd here): the TLS proxy and systemd's
unit handling; the agent runs the simulated driver, not libvirt.
"""

import configparser
import os
import signal
import socket
import subprocess
import sys
import textwrap
import unittest

import fixtures
import openstack
import requests

from iotguard.tests.fixtures import database
from iotguard.tests.fixtures import ports
from iotguard.tests.functional import test_osc_keystone

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, 'devstack')
TOP = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
UWSGI = '/usr/bin/uwsgi'
UWSGI_PYTHON3 = '/usr/lib/uwsgi/plugins/python3_plugin.so'
# uWSGI's python3 plugin embeds Debian's interpreter: the venv it is given
# must be made by that one.
SYSTEM_PYTHON = '/usr/bin/python3'
SERVICES = ('iotguard-api', 'iotguard-controller', 'iotguard-agent')
# What the Ceilometer plugin leaves in /etc/ceilometer (its default).
CEILOMETER_PIPELINE = textwrap.dedent('''\
    sources:
        - name: meter_source
          meters:
              - "*"
          sinks:
              - meter_sink
    sinks:
        - name: meter_sink
          publishers:
              - gnocchi://
    ''')


def _port_open(port):
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex(('127.0.0.1', port)) == 0


def _unavailable():
    if not os.access(UWSGI, os.X_OK) or not os.path.exists(UWSGI_PYTHON3):
        return ("no Debian uWSGI with its python3 plugin (apt-get install "
                "uwsgi-core uwsgi-plugin-python3; bindep's test profile)")
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return 'no %s for the devstack venv' % SYSTEM_PYTHON
    keystone = os.path.join(test_osc_keystone.VENV, 'bin', 'keystone-manage')
    if not os.path.exists(keystone):
        return 'no Keystone in %s (tools/install-keystone.sh)' % (
            test_osc_keystone.VENV)
    if not _port_open(5672):
        return 'no RabbitMQ on 127.0.0.1:5672 (tools/test-setup.sh)'
    return database.unavailable('mysql')


def _alive(pid):
    try:
        with open('/proc/%d/stat' % pid) as stat:
            return stat.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except FileNotFoundError:
        return False


def _group_members(pgid):
    """PIDs (not zombies) of process group ``pgid``."""
    members = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as stat:
                fields = stat.read().rsplit(')', 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if fields[0] != 'Z' and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


def _ini(path):
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(path)
    return parser


class DevstackPluginTest(test_osc_keystone.SharedKeystone):
    """plugin.sh through every phase, with its API under Debian's uWSGI.

    One Keystone for the tests, as devstack's lib/keystone leaves it for
    the plugins: what a test's stack made in it is deleted after it.
    """

    @classmethod
    def setUpClass(cls):
        why = _unavailable()
        if why:
            raise unittest.SkipTest(why)
        super().setUpClass()
        try:
            # devstack's global venv, made before any plugin runs, with the
            # database driver stack.sh installs (install_database_python).
            cls.venv = os.path.join(
                cls.class_fixture(fixtures.TempDir()).path, 'venv')
            subprocess.run([SYSTEM_PYTHON, '-m', 'venv',
                            '--system-site-packages', cls.venv],
                           check=True, timeout=120)
            subprocess.run([os.path.join(cls.venv, 'bin', 'pip'), 'install',
                            '-q', 'PyMySQL'], check=True, timeout=300,
                           capture_output=True)
        except BaseException:
            cls.tearDownClass()
            raise

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(420, gentle=True))
        self.admin = openstack.connection.Connection(
            region_name='RegionOne', **self.keystone.auth())
        self.addCleanup(self.admin.close)
        # What devstack's lib/keystone makes before the plugins run.
        identity = self.admin.identity
        identity.create_project(name='service', domain_id='default')
        if identity.find_role('service') is None:  # bootstrap makes it
            identity.create_role(name='service')
        self.work = self.useFixture(fixtures.TempDir()).path
        self.hostname = socket.gethostname()
        self.pidfiles = os.path.join(self.work, 'status')
        self.addCleanup(self._kill_leftovers)

    # -- the harness ----------------------------------------------------

    def localrc(self, services, host='127.0.0.1', **extra):
        """Write local.conf's [[local|localrc]] as variables."""
        work = self.work
        auth_root = self.keystone.url.rsplit('/v3', 1)[0]
        clouds = os.path.join(work, 'clouds.yaml')
        with open(clouds, 'w') as out:
            out.write(textwrap.dedent('''\
                clouds:
                  devstack-admin: &admin
                    auth:
                      auth_url: %(url)s
                      username: admin
                      password: %(password)s
                      project_name: admin
                      user_domain_id: default
                      project_domain_id: default
                    region_name: RegionOne
                    identity_api_version: 3
                  devstack-system-admin:
                    auth:
                      auth_url: %(url)s
                      username: admin
                      password: %(password)s
                      system_scope: all
                      user_domain_id: default
                    region_name: RegionOne
                    identity_api_version: 3
                ''') % {'url': self.keystone.url,
                        'password': test_osc_keystone.PASSWORD})
        self.db_prefix = 'dsh%d_' % os.getpid()
        self.addCleanup(self._drop_database)
        bracketed = '[%s]' % host if ':' in host else host
        self.port = ports.free_port(host)
        values = {
            'HARNESS_DB_PREFIX': self.db_prefix,
            'HARNESS_PYTHON': sys.executable,
            'IOTGUARD_DIR': TOP,
            'DEST': os.path.join(work, 'stack'),
            'DATA_DIR': os.path.join(work, 'stack', 'data'),
            'SERVICE_DIR': self.pidfiles,
            'LOGDIR': os.path.join(work, 'logs'),
            'STACK_USER': os.environ.get('USER', 'root'),
            'GLOBAL_VENV': 'True',
            'DEVSTACK_VENV': self.venv,
            'ENABLED_SERVICES': ','.join(services),
            'SERVICE_HOST': bracketed,
            'SERVICE_LISTEN_ADDRESS': bracketed,
            'SERVICE_PROTOCOL': 'http',
            'SERVICE_TIMEOUT': '60',
            'API_WORKERS': '1',
            'WORKER_TIMEOUT': '10',
            'ENABLE_DEBUG_LOG_LEVEL': 'True',
            'REGION_NAME': 'RegionOne',
            'KEYSTONE_SERVICE_URI': auth_root,
            'SERVICE_PASSWORD': test_osc_keystone.PASSWORD,
            'SERVICE_PROJECT_NAME': 'service',
            'SERVICE_DOMAIN_NAME': 'Default',
            'SSL_BUNDLE_FILE': '',
            'MEMCACHE_SERVERS': '',
            'DATABASE_TYPE': 'mysql',
            'DATABASE_USER': 'root',
            'DATABASE_PASSWORD': '',
            'DATABASE_HOST': '127.0.0.1',
            'RABBIT_USERID': 'guest',
            'RABBIT_PASSWORD': 'guest',
            'RABBIT_HOST': '127.0.0.1',
            'LIBVIRT_GROUP': '',
            'NOVA_CONF': os.path.join(work, 'nova.conf'),
            'CINDER_CONF': os.path.join(work, 'cinder.conf'),
            'CEILOMETER_CONF_DIR': os.path.join(work, 'ceilometer'),
            'TEMPEST_CONFIG': os.path.join(work, 'tempest', 'tempest.conf'),
            'IOTGUARD_CONF_DIR': os.path.join(work, 'etc', 'iotguard'),
            'IOTGUARD_SERVICE_PORT': str(self.port),
            'IOTGUARD_AGENT_VIRT_DRIVER': 'simulated',
        }
        values.update(extra)
        self.env = dict(os.environ, OS_CLIENT_CONFIG_FILE=clouds,
                        HOME=work,
                        PATH=os.path.dirname(sys.executable) + ':'
                        + os.environ['PATH'])
        self.env = {k: v for k, v in self.env.items()
                    if not k.startswith('OS_') or k == 'OS_CLIENT_CONFIG_FILE'}
        self.values = values
        path = os.path.join(work, 'localrc')
        with open(path, 'w') as out:
            for key, value in values.items():
                out.write("%s='%s'\n" % (key, value))
        self.localrc_path = path

    def phase(self, *args):
        """``plugin.sh ARGS`` as devstack sources it; its trace on failure."""
        proc = subprocess.run(
            [os.path.join(HARNESS, 'run-phase'), self.localrc_path] +
            list(args), env=self.env, cwd=self.work, capture_output=True,
            text=True, timeout=300)
        if proc.returncode:
            logs = ''.join('\n--- %s:\n%s' % (s, self.log(s))
                           for s in SERVICES)
            self.fail('%s failed:\n%s\n%s%s' % (
                ' '.join(args), proc.stdout[-3000:], proc.stderr[-4000:],
                logs))
        return proc.stdout + proc.stderr

    def pid(self, service):
        path = os.path.join(self.pidfiles, service + '.pid')
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return int(f.read())

    def log(self, service, tail=4000):
        """The last ``tail`` characters of ``service``'s log (None: all)."""
        path = os.path.join(self.values['LOGDIR'], service + '.log')
        if not os.path.exists(path):
            return '(no log)'
        with open(path, errors='replace') as f:
            return f.read()[-tail:] if tail else f.read()

    def _kill_leftovers(self):
        """After a failure: every process group the harness started."""
        if not os.path.isdir(self.pidfiles):
            return
        for name in os.listdir(self.pidfiles):
            if name.endswith('.pid'):
                with open(os.path.join(self.pidfiles, name)) as f:
                    pgid = int(f.read())
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def _drop_database(self):
        subprocess.run(['mysql', '-uroot', '-h127.0.0.1', '-e',
                        'DROP DATABASE IF EXISTS %siotguard' % self.db_prefix],
                       capture_output=True, timeout=60)

    def catalog_url(self):
        """The public URL of resource-guarantee in the real catalog."""
        identity = self.admin.identity
        [service] = list(identity.services(type='resource-guarantee'))
        [endpoint] = list(identity.endpoints(service_id=service.id,
                                             interface='public'))
        self.assertEqual('RegionOne', endpoint.region_id)
        return endpoint.url

    def stack(self, *phases):
        for phase in phases:
            self.phase('stack', phase)

    def assert_unstacked_and_clean(self, started):
        self.phase('unstack')
        for service, pid in started.items():
            self.assertFalse(_alive(pid), '%s still runs' % service)
            # uWSGI's master takes its workers and HTTP router with it.
            self.assertEqual([], _group_members(pid),
                             '%s left processes' % service)
        self.assertEqual([], os.listdir(self.pidfiles))
        self.phase('clean')
        for key in ('IOTGUARD_CONF_DIR',):
            self.assertFalse(os.path.exists(self.values[key]), key)
        self.assertFalse(os.path.exists(
            os.path.join(self.values['DATA_DIR'], 'iotguard')))

    # -- the tests --------------------------------------------------------

    def test_all_in_one(self):
        """An all-in-one node with the optional services enabled.

        API, controller, agent next to n-cpu, Cinder, Ceilometer and
        Gnocchi enabled, tempest configured.
        """
        services = ['key', 'mysql', 'rabbit', 'tempest', 'n-api', 'n-cpu',
                    'c-api', 'ceilometer-anotification', 'gnocchi-api',
                    'iotguard-api', 'iotguard-controller']
        profiles = ('local:%s=5000:200000000 shared:vms=8000:400000000 '
                    '%s@lvmdriver-1#lvmdriver-1=3000:150000000'
                    % (self.hostname, self.hostname))
        self.localrc(services, IOTGUARD_DOMAIN_PROFILES=profiles)
        os.makedirs(self.values['CEILOMETER_CONF_DIR'])
        pipeline = os.path.join(self.values['CEILOMETER_CONF_DIR'],
                                'pipeline.yaml')
        with open(pipeline, 'w') as out:
            out.write(CEILOMETER_PIPELINE)
        os.makedirs(os.path.dirname(self.values['TEMPEST_CONFIG']))

        self.stack('install', 'post-config')
        conf_dir = self.values['IOTGUARD_CONF_DIR']
        uwsgi_ini = os.path.join(conf_dir, 'iotguard-api-uwsgi.ini')
        ini = _ini(uwsgi_ini)['uwsgi']
        self.assertEqual('http,python3', ini['plugins'])
        self.assertEqual('127.0.0.1:%d' % self.port, ini['http'])
        self.assertEqual('iotguard.wsgi.api:application', ini['module'])
        conf = _ini(os.path.join(conf_dir, 'iotguard.conf'))
        state_dir = os.path.join(self.values['DATA_DIR'], 'iotguard')
        self.assertTrue(os.path.isdir(state_dir))
        self.assertEqual(os.path.join(state_dir, 'agent-caps.json'),
                         conf['agent']['state_file'])
        self.assertEqual('True', conf['ceilometer']['enabled'])
        self.assertEqual('300', conf['gnocchi']['granularity'])
        self.assertEqual('keystone', conf['gnocchi']['auth_mode'])
        self.assertIn('notifier://?topic=metering', open(pipeline).read())
        self.assertIn('gnocchi://', open(pipeline).read())
        for other in ('NOVA_CONF', 'CINDER_CONF'):
            self.assertEqual('messagingv2', _ini(self.values[other])[
                'oslo_messaging_notifications']['driver'], other)

        extra = self.phase('stack', 'extra')
        # With c-api: tier sync ran (this cloud's catalog has no Cinder).
        self.assertIn('Skipped: Cinder (block-storage) is not in the '
                      'service catalog', extra)
        self.stack('test-config')
        started = {s: self.pid(s) for s in SERVICES}
        for service, pid in started.items():
            self.assertTrue(pid and _alive(pid), '%s is not running: %s' % (
                service, self.log(service)))
        with open(os.path.join(self.pidfiles, 'iotguard-api.cmd')) as f:
            self.assertEqual(
                '%s --procname-prefix iotguard-api --ini %s --venv %s'
                % (UWSGI, uwsgi_ini, self.venv), f.read().strip())
        # uWSGI's first lines: the requests since may push them out of
        # the last 4000 characters.
        log = self.log('iotguard-api', tail=None)
        self.assertIn('detected binary path: /usr/bin/uwsgi-core', log)
        self.assertIn('PEP 405 virtualenv detected: %s' % self.venv, log)

        url = self.catalog_url()
        self.assertEqual('http://127.0.0.1:%d' % self.port, url)
        root = requests.get(url + '/', timeout=30)
        self.assertEqual(200, root.status_code, root.text)
        token = self.admin.session.get_token()
        tiers = requests.get(url + '/v1/tiers', timeout=30,
                             headers={'X-Auth-Token': token})
        self.assertEqual(200, tiers.status_code, tiers.text)
        self.assertEqual({'bronze', 'silver', 'gold'},
                         {t['name'] for t in tiers.json()['tiers']})
        refused = requests.get(url + '/v1/tiers', timeout=30)
        self.assertEqual(401, refused.status_code)
        domains = requests.get(url + '/v1/domains', timeout=30,
                               headers={'X-Auth-Token': token}).json()
        kinds = {d['name']: d['kind'] for d in domains['domains']}
        self.assertEqual('local', kinds['local:%s' % self.hostname])
        self.assertEqual('ceph', kinds['shared:vms'])
        self.assertEqual('cinder',
                         kinds['%s@lvmdriver-1#lvmdriver-1' % self.hostname])

        tempest = _ini(self.values['TEMPEST_CONFIG'])
        self.assertEqual('True', tempest['service_available']['iotguard'])
        self.assertEqual('resource-guarantee',
                         tempest['iotguard']['catalog_type'])
        self.assertEqual('True',
                         tempest['iotguard_feature_enabled']['agent'])

        self.assert_unstacked_and_clean(started)

    def test_api_node_on_ipv6_without_optional_services(self):
        """API and controller only, on IPv6 loopback.

        No agent, no Ceilometer/Gnocchi wiring, no tier sync, tempest
        without agent.
        """
        self.localrc(['key', 'mysql', 'rabbit', 'tempest', 'iotguard-api',
                      'iotguard-controller'], host='::1',
                     IOTGUARD_DOMAIN_PROFILES='local:h1=5000:1e8')
        os.makedirs(os.path.dirname(self.values['TEMPEST_CONFIG']))
        self.stack('install', 'post-config')
        conf_dir = self.values['IOTGUARD_CONF_DIR']
        conf = _ini(os.path.join(conf_dir, 'iotguard.conf'))
        for section in ('agent', 'ceilometer', 'gnocchi'):
            self.assertFalse(conf.has_section(section), section)
        self.assertFalse(os.path.exists(
            os.path.join(self.values['DATA_DIR'], 'iotguard')))
        self.assertFalse(os.path.exists(self.values['CINDER_CONF']))
        ini = _ini(os.path.join(conf_dir, 'iotguard-api-uwsgi.ini'))['uwsgi']
        self.assertEqual('[::1]:%d' % self.port, ini['http'])

        extra = self.phase('stack', 'extra')
        self.assertNotIn('tier sync', extra)
        started = {s: self.pid(s) for s in SERVICES if self.pid(s)}
        self.assertEqual({'iotguard-api', 'iotguard-controller'},
                         set(started))
        url = self.catalog_url()
        self.assertEqual('http://[::1]:%d' % self.port, url)
        self.assertEqual(200, requests.get(url + '/', timeout=30).status_code)
        self.stack('test-config')
        tempest = _ini(self.values['TEMPEST_CONFIG'])
        self.assertEqual('True', tempest['service_available']['iotguard'])
        self.assertEqual('False',
                         tempest['iotguard_feature_enabled']['agent'])
        self.assert_unstacked_and_clean(started)

        # A domain whose kind its name does not tell stops stack.sh
        # before iotguard-manage runs.
        script = ('source %s/functions; source %s; '
                  'source $IOTGUARD_DIR/devstack/settings; '
                  'source $IOTGUARD_DIR/devstack/lib/iotguard; '
                  'IOTGUARD_DOMAIN_PROFILES=nowhere=1:1 '
                  'set_iotguard_domain_profiles' % (HARNESS,
                                                    self.localrc_path))
        proc = subprocess.run(['bash', '-c', script], env=self.env,
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(1, proc.returncode, proc.stderr)
        self.assertIn('no kind for domain nowhere', proc.stderr)

    def test_tls_proxy_node_registers_https(self):
        """Behind tls-proxy: https in the catalog, uWSGI on the inner port.

        Only configured, not started: the TLS proxy is Apache, which the
        harness does not have.
        """
        inner = ports.free_port()
        self.localrc(['key', 'mysql', 'rabbit', 'tls-proxy', 'iotguard-api',
                      'iotguard-controller'],
                     IOTGUARD_SERVICE_PORT_INT=str(inner))
        self.stack('install', 'post-config')
        conf_dir = self.values['IOTGUARD_CONF_DIR']
        ini = _ini(os.path.join(conf_dir, 'iotguard-api-uwsgi.ini'))['uwsgi']
        self.assertEqual('127.0.0.1:%d' % inner, ini['http'])
        self.assertEqual('https://127.0.0.1:%d' % self.port,
                         self.catalog_url())
        self.phase('clean')
        self.assertFalse(os.path.exists(conf_dir))

    def test_horizon_node_gets_the_panels(self):
        """Where Horizon runs: the panels enabled, the Instances action set.

        ``stack post-config`` copies the three ``enabled/`` files and the
        settings snippet naming the customization module into Horizon's
        ``local/``; ``clean`` removes them. ``stack install`` (pip of the
        plugin, which pulls Horizon) is not run here: test_horizon serves
        the plugin, the snippet included, in a real Horizon.
        """
        horizon = os.path.join(self.work, 'horizon')
        local = os.path.join(horizon, 'openstack_dashboard', 'local')
        os.makedirs(os.path.join(local, 'enabled'))
        self.localrc(['horizon'], HORIZON_DIR=horizon)
        self.phase('stack', 'post-config')
        plugin = os.path.join(TOP, 'iotguard-dashboard', 'iotguard_dashboard')
        copied = {}
        for kind in ('enabled', 'local_settings.d'):
            for name in os.listdir(os.path.join(local, kind)):
                with open(os.path.join(local, kind, name)) as f, open(
                        os.path.join(plugin, kind, name)) as shipped:
                    self.assertEqual(shipped.read(), f.read(), name)
                copied[name] = f.name
        self.assertEqual(['_89_iotguard_dashboard.py',
                          '_90_iotguard_dashboard.py',
                          '_90_project_iotguard_disks.py',
                          '_91_admin_iotguard.py'], sorted(copied))
        # The snippet as Horizon's settings run it: it names the module,
        # and leaves a deployment's own one alone.
        with open(copied['_90_iotguard_dashboard.py']) as f:
            snippet = f.read()
        for config, module in (({}, 'iotguard_dashboard.customization'),
                               ({'customization_module': 'site.custom'},
                                'site.custom')):
            exec(snippet, {'HORIZON_CONFIG': config})
            self.assertEqual(module, config['customization_module'])
        self.phase('clean')
        self.assertEqual([], os.listdir(os.path.join(local, 'enabled')))
        self.assertEqual([], os.listdir(os.path.join(local,
                                                     'local_settings.d')))
