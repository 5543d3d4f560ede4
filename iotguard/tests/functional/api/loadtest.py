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

"""Load figures of the API under a production WSGI server + wrk.

Not a test (no test_ prefix): a documented benchmark command::

    python -m iotguard.tests.functional.api.loadtest \\
        --server uwsgi --backend postgresql --workers 2 --duration 20 \\
        --endpoint instance --runs 3

It creates a throwaway database (as the functional tests do), seeds
``--instances`` instances with two disks each, a tier, rates and a cap,
serves iotguard.wsgi.api:application (noauth, so keystone's token
validation is not in the figure) and runs wrk on loopback, ``--runs``
times, printing each run and min / median / max with the load average
and the CPU model. Endpoints:

* ``instance``: ``GET /v1/instances/{uuid}`` of random instances;
* ``decisions``: ``GET /v1/decisions?limit=50``, the first page;
* ``choose``: ``PUT /v1/instances/{uuid}/tier`` (admission, a write).

Servers: ``gunicorn`` (test-requirements) or ``uwsgi`` as devstack runs
it: Debian's ``uwsgi`` with its python3 plugin (bindep), whose embedded
interpreter is Debian's ``/usr/bin/python3``, so the application runs from
a virtualenv of that interpreter (made once in ``--uwsgi-venv``). Needs
wrk (bindep).
"""

import argparse
import datetime
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

from iotguard.db import api as db_api
from iotguard import service
from iotguard.tests import dbrows
from iotguard.tests.fixtures import database

LUA = '''
local uuids = {%(uuids)s}
request = function()
  local uuid = uuids[math.random(#uuids)]
  %(request)s
end
'''
#: Endpoint -> the wrk request (Lua) built from a random ``uuid``.
REQUESTS = {
    'instance': 'return wrk.format("GET", "/v1/instances/" .. uuid)',
    'decisions': 'return wrk.format("GET", "/v1/decisions?limit=50")',
    'choose': ('wrk.headers["Content-Type"] = "application/json"\n'
               '  return wrk.format("PUT", "/v1/instances/" .. uuid .. '
               '"/tier", nil, \'{"tier": "gold"}\')'),
}
SYSTEM_PYTHON = '/usr/bin/python3'
UWSGI = '/usr/bin/uwsgi'


def seed(db, count):
    db.tier_create({'name': 'gold', 'min_iops': 10.0, 'max_iops': 5000.0})
    db.domain_create('local:bench', 'local', iops_4k=1e6, bytes_sec=1e10)
    now = datetime.datetime(2026, 1, 1)
    uuids = []
    for i in range(count):
        instance = str(uuid.uuid4())
        uuids.append(instance)
        for dev in ('vda', 'vdb'):
            db.disk_upsert(instance, dev, 'cn1', 'local:bench', 'bench')
        db.instance_tier_set(instance, 'gold', lambda *a: {})
        dbrows.disk_update_rates(db, instance, 'vda', now, read_iops=100.0,
                                 write_iops=50.0, latency_ms=1.0)
        decision = dbrows.decision_create(
            db, 'local:bench', 'guarantee', instance, 'vda', 'bench', 'cap',
            {}, {'total_iops_sec': 500}, 'bench', {})
        dbrows.cap_set(db, instance, 'vda', {'total_iops_sec': 500},
                       now + datetime.timedelta(days=1), decision)
    return uuids


def _wait(url, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError('%s did not answer' % url)


def uwsgi_venv(path):
    """A virtualenv of Debian's Python holding this tree, made once."""
    python = os.path.join(path, 'bin', 'python')
    if not os.path.exists(python):
        subprocess.run([SYSTEM_PYTHON, '-m', 'venv', path], check=True)
        root = os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
        subprocess.run([python, '-m', 'pip', 'install', '-q', '-e', root,
                        'psycopg2-binary', 'PyMySQL'], check=True)
    return path


def server_argv(args, port):
    bind = '127.0.0.1:%d' % port
    app = 'iotguard.wsgi.api:application'
    if args.server == 'gunicorn':
        return [sys.executable, '-m', 'gunicorn', '--workers',
                str(args.workers), '--bind', bind, '--log-level', 'warning',
                app]
    # As devstack's write_uwsgi_config + run_process start it.
    return [UWSGI, '--plugins', 'http,python3', '--http-socket', bind,
            '--module', app, '--processes', str(args.workers), '--master',
            '--enable-threads', '--lazy-apps', '--thunder-lock',
            '--die-on-term', '--disable-logging', '--buffer-size', '65535',
            '--venv', uwsgi_venv(args.uwsgi_venv)]


def parse_wrk(text):
    """Requests/s, p50 and p99 (ms) and non-2xx count of wrk --latency."""
    def ms(value):
        for unit, factor in (('us', 1e-3), ('ms', 1.0), ('s', 1e3)):
            if value.endswith(unit):
                return float(value[:-len(unit)]) * factor
        raise ValueError(value)
    out = {'errors': 0}
    for line in text.splitlines():
        words = line.split()
        if line.startswith('Requests/sec:'):
            out['rps'] = float(words[1])
        elif words[:1] == ['50%']:
            out['p50'] = ms(words[1])
        elif words[:1] == ['99%']:
            out['p99'] = ms(words[1])
        elif line.strip().startswith('Non-2xx or 3xx responses:'):
            out['errors'] = int(words[-1])
    return out


def noauth_conf(workdir, extra=''):
    """``(conf, path)``: a noauth API without Nova, logging to workdir.

    ``extra``: more sections, as config file text.
    """
    path = os.path.join(workdir, 'iotguard.conf')
    with open(path, 'w') as conf_file:
        conf_file.write(
            '[DEFAULT]\nuse_stderr = false\nlog_file = %s\n'
            '[api]\nauth_strategy = noauth\nnova_metadata_sync = false\n'
            % os.path.join(workdir, 'iotguard-api.log') + extra)
    return service.prepare_service([], [path]), path


def cpu_model():
    try:
        out = subprocess.run(['lscpu'], capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return 'unknown'
    for line in out.splitlines():
        if line.startswith('Model name:'):
            return line.split(':', 1)[1].strip()
    return 'unknown'


def main(argv=None):
    parser = argparse.ArgumentParser(prog='loadtest')
    parser.add_argument('--backend', default='postgresql',
                        choices=database.BACKENDS)
    parser.add_argument('--server', default='gunicorn',
                        choices=('gunicorn', 'uwsgi'))
    parser.add_argument('--endpoint', default='instance',
                        choices=sorted(REQUESTS))
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--duration', type=int, default=20)
    parser.add_argument('--runs', type=int, default=3)
    parser.add_argument('--connections', type=int, default=8)
    parser.add_argument('--instances', type=int, default=1000)
    parser.add_argument('--port', type=int, default=18778)
    parser.add_argument('--uwsgi-venv',
                        default='/var/tmp/iotguard-uwsgi-venv')
    args = parser.parse_args(argv)
    why = database.unavailable(args.backend)
    if why:
        sys.exit(why)
    fixture = database.Database(args.backend)
    fixture.setUp()
    workdir = tempfile.mkdtemp(prefix='iotguard-load-')
    server = None
    try:
        conf, conf_path = noauth_conf(
            workdir, '[database]\nconnection = %s\n' % fixture.url)
        db = db_api.Connection(conf)
        uuids = seed(db, args.instances)
        db.dispose()
        lua = os.path.join(workdir, 'requests.lua')
        with open(lua, 'w') as lua_file:
            lua_file.write(LUA % {
                'uuids': ', '.join('"%s"' % u for u in uuids),
                'request': REQUESTS[args.endpoint]})
        env = dict(os.environ, OS_IOTGUARD_CONFIG_FILES=conf_path)
        with open(os.path.join(workdir, 'server.log'), 'ab') as log:
            server = subprocess.Popen(server_argv(args, args.port), env=env,
                                      stdout=log, stderr=log,
                                      start_new_session=True)
        base_url = 'http://127.0.0.1:%d' % args.port
        _wait(base_url + '/', 60)
        check = urllib.request.Request(
            base_url + '/v1/instances/' + uuids[0], headers={
                'X-User-Id': 'bench', 'X-Project-Id': 'bench',
                'X-Roles': 'member,reader'})
        urllib.request.urlopen(check, timeout=10).read()  # 200 or raise
        print('server=%s backend=%s endpoint=%s workers=%d instances=%d '
              'connections=%d duration=%ds cpu=%r' % (
                  args.server, args.backend, args.endpoint, args.workers,
                  args.instances, args.connections, args.duration,
                  cpu_model()))
        runs = []
        for _ in range(args.runs):
            load = os.getloadavg()[0]
            result = subprocess.run(
                ['wrk', '--threads', '1', '--connections',
                 str(args.connections), '--duration', '%ds' % args.duration,
                 '--latency', '--script', lua,
                 '--header', 'X-User-Id: bench', '--header',
                 'X-Project-Id: bench', '--header',
                 'X-Roles: member,reader', base_url],
                check=True, capture_output=True, text=True)
            run = dict(parse_wrk(result.stdout), load=load)
            runs.append(run)
            print('run: %(rps).0f req/s, p50 %(p50).1f ms, p99 %(p99).1f '
                  'ms, non-2xx %(errors)d, load average %(load).2f' % run)
        if any(r['errors'] for r in runs):
            print('FAILED: answers other than 2xx (see %s)' % workdir)
            return 1
        for key, unit in (('rps', 'req/s'), ('p50', 'ms'), ('p99', 'ms')):
            values = sorted(r[key] for r in runs)
            print('%s min/median/max: %.1f / %.1f / %.1f %s' % (
                key, values[0], values[len(values) // 2], values[-1],
                unit))
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        fixture.cleanUp()
    return 0


if __name__ == '__main__':
    sys.exit(main())
