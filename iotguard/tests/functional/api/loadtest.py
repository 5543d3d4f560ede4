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

"""Load figure of GET /v1/instances/{uuid}: gunicorn workers + wrk.

Not a test (no test_ prefix): a documented benchmark command::

    python -m iotguard.tests.functional.api.loadtest \\
        --backend postgresql --workers 2 --duration 20

It creates a throwaway database (as the functional tests do), seeds
``--instances`` instances with two disks each, a tier, rates and a cap,
serves iotguard.wsgi.api:application with gunicorn (noauth, so keystone's
token validation is not in the figure) and runs wrk on loopback against
random instances. Needs gunicorn (test-requirements) and wrk (bindep).
"""

import argparse
import datetime
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

from iotguard.db import api as db_api
from iotguard import service
from iotguard.tests.fixtures import database

LUA = '''
local uuids = {%(uuids)s}
request = function()
  local path = "/v1/instances/" .. uuids[math.random(#uuids)]
  return wrk.format("GET", path)
end
'''


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
        db.disk_update_rates(instance, 'vda', now, read_iops=100.0,
                             write_iops=50.0, latency_ms=1.0)
        decision = db.decision_create('local:bench', 'guarantee', instance,
                                      'vda', 'bench', 'cap', {},
                                      {'total_iops_sec': 500}, 'bench', {})
        db.cap_set(instance, 'vda', {'total_iops_sec': 500},
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


def main(argv=None):
    parser = argparse.ArgumentParser(prog='loadtest')
    parser.add_argument('--backend', default='postgresql',
                        choices=database.BACKENDS)
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--duration', type=int, default=20)
    parser.add_argument('--connections', type=int, default=8)
    parser.add_argument('--instances', type=int, default=1000)
    parser.add_argument('--port', type=int, default=18778)
    args = parser.parse_args(argv)
    why = database.unavailable(args.backend)
    if why:
        sys.exit(why)
    fixture = database.Database(args.backend)
    fixture.setUp()
    workdir = tempfile.mkdtemp(prefix='iotguard-load-')
    server = None
    try:
        conf_path = os.path.join(workdir, 'iotguard.conf')
        with open(conf_path, 'w') as conf_file:
            conf_file.write('[DEFAULT]\nuse_stderr = false\n'
                            '[api]\nauth_strategy = noauth\n'
                            'nova_metadata_sync = false\n'
                            '[database]\nconnection = %s\n' % fixture.url)
        conf = service.prepare_service([], [conf_path])
        db = db_api.Connection(conf)
        uuids = seed(db, args.instances)
        db.dispose()
        lua = os.path.join(workdir, 'instances.lua')
        with open(lua, 'w') as lua_file:
            lua_file.write(LUA % {'uuids': ', '.join(
                '"%s"' % u for u in uuids)})
        env = dict(os.environ, OS_IOTGUARD_CONFIG_FILES=conf_path)
        server = subprocess.Popen(
            [sys.executable, '-m', 'gunicorn', '--workers',
             str(args.workers), '--bind', '127.0.0.1:%d' % args.port,
             '--log-level', 'warning', 'iotguard.wsgi.api:application'],
            env=env)
        base_url = 'http://127.0.0.1:%d' % args.port
        _wait(base_url + '/')
        check = urllib.request.Request(
            base_url + '/v1/instances/' + uuids[0], headers={
                'X-User-Id': 'bench', 'X-Project-Id': 'bench',
                'X-Roles': 'reader'})
        urllib.request.urlopen(check, timeout=10).read()  # 200 or raise
        result = subprocess.run(
            ['wrk', '--threads', '1', '--connections',
             str(args.connections), '--duration', '%ds' % args.duration,
             '--latency', '--script', lua,
             '--header', 'X-User-Id: bench', '--header',
             'X-Project-Id: bench', '--header', 'X-Roles: reader',
             base_url], check=True, capture_output=True, text=True)
        print('backend=%s workers=%d instances=%d connections=%d' % (
            args.backend, args.workers, args.instances, args.connections))
        print(result.stdout)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        fixture.cleanUp()
    return 0


if __name__ == '__main__':
    sys.exit(main())
