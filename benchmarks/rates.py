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

"""What writing a round's disk rates costs, statement by statement.

    python -m benchmarks.rates --db-url URL [--disks 100000] \\
        [--share 6] [--runs 3]

A fresh database (``--db-url``: an empty one; SQLite file by default)
gets the schema (its migrations, so PostgreSQL's fill factor too) and
``--disks`` disks in 100 domains; then, ``--runs`` times, the rates of
one ``--share``-th of the disks (a steady round's: at a 5 s decision
interval and the default 30 s ``rates_write_interval``, a sixth) are
written by :meth:`~iotguard.db.api.Connection.disk_rates_bulk_update`
(``bulk``: the statement of the database's dialect) and by the
executemany of one UPDATE per disk it replaced (``executemany``), one
after the other, each a different sixth, wall and CPU time of this
process. ``--no-fillfactor``: the disks table as it was before the
migration that leaves room in its pages on PostgreSQL. The figures of
the controller's admin guide. Nothing here runs in the service; it only
measures.
"""

import argparse
import datetime
import statistics
import sys
import tempfile
import time
import uuid

from oslo_config import cfg
import sqlalchemy as sa
from sqlalchemy import orm

from iotguard import conf as iotguard_conf
from iotguard.db import api as db_api
from iotguard.db import disks as db_disks
from iotguard.db import migration
from iotguard.db import models

FIELDS = ('sampled_at',) + db_disks._RATE_FIELDS


def _executemany(db, rows):
    with orm.Session(db.get_engine()) as session, session.begin():
        for start in range(0, len(rows), db_disks.RATES_CHUNK):
            db_disks._rates_executemany(
                session, FIELDS, rows[start:start + db_disks.RATES_CHUNK])


def _rows(ids, k):
    at = datetime.datetime(2026, 11, 26, 4, 0, 0) + datetime.timedelta(
        seconds=5 * k, microseconds=123)
    return [{'id': i, 'sampled_at': at, 'read_iops': 100.0 + k + i % 97,
             'write_iops': 50.5, 'read_bytes_sec': 409600.0 * (k + 1),
             'write_bytes_sec': 204800.0, 'latency_ms': 1.25 + k}
            for i in ids]


def make_conf(url):
    """iotguard's options on their defaults, the database at ``url``."""
    conf = cfg.ConfigOpts()
    iotguard_conf.register_opts(conf)
    conf([], project='iotguard', default_config_files=[])
    conf.set_override('connection', url, group='database')
    return conf


def connect(url):
    """A database connection as a controller's, to ``url``."""
    return db_api.Connection(make_conf(url))


def populate(url, disks, fillfactor=True, host_domains=50):
    """The schema and ``disks`` disks in 100 domains, 50 a host.

    The disks of a host are in ``host_domains`` domains. ``url``: an
    empty database, or None for a fresh SQLite file; returns the
    database's URL and engine.
    """
    url = url or 'sqlite:///%s/bench.sqlite' % tempfile.mkdtemp(
        prefix='iotguard-bench-')
    engine = sa.create_engine(url)
    migration.upgrade(engine)
    if not fillfactor and engine.dialect.name == 'postgresql':
        with engine.begin() as connection:
            connection.execute(sa.text(
                'ALTER TABLE disks RESET (fillfactor)'))
    db = connect(url)
    names = ['bench-%03d' % d for d in range(100)]
    for name in names:
        db.domain_create(name, 'ceph', iops_4k=50000.0, bytes_sec=2e9)
    rows = [{'instance_uuid': str(uuid.uuid5(uuid.NAMESPACE_URL,
                                             'rates/%d' % n)),
             'dev': 'vda', 'host': 'host-%04d' % (n // 50),
             'domain': names[(n // 50 + n % host_domains) % 100],
             'project_id': 'bench'}
            for n in range(disks)]
    for start in range(0, len(rows), 5000):
        db.disk_bulk_insert(rows[start:start + 5000])
    db.dispose()
    return url, engine


def run(args):
    url, engine = populate(args.db_url, args.disks,
                           fillfactor=not args.no_fillfactor)
    db = connect(url)
    with engine.connect() as connection:
        ids = sorted(connection.execute(sa.select(models.Disk.id)).scalars())
    engine.dispose()
    print('%d disks (%s%s), %d rates per write' % (
        len(ids), url.split(':')[0],
        ', no fill factor' if args.no_fillfactor else '',
        len(ids) // args.share))
    print('run  method       wall_s  cpu_s')
    figures = {'bulk': [], 'executemany': []}
    k = 0
    for n in range(args.runs):
        for method in ('executemany', 'bulk'):
            part = _rows(ids[k % args.share::args.share], k)
            k += 1
            cpu0, wall0 = time.process_time(), time.perf_counter()
            if method == 'bulk':
                db.disk_rates_bulk_update(part)
            else:
                _executemany(db, part)
            wall, cpu = (time.perf_counter() - wall0,
                         time.process_time() - cpu0)
            figures[method].append((wall, cpu))
            print('%3d  %-11s  %6.3f  %5.3f' % (n + 1, method, wall, cpu))
    for method, values in figures.items():
        walls = sorted(v[0] for v in values)
        print('%-11s wall min/median/max %.3f/%.3f/%.3f s, CPU median '
              '%.3f s' % (method, walls[0], statistics.median(walls),
                          walls[-1], statistics.median(v[1]
                                                       for v in values)))
    db.dispose()


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m benchmarks.rates',
        description='What writing a round\'s disk rates costs.')
    parser.add_argument('--db-url', help='an empty database (default: a '
                        'fresh SQLite file)')
    parser.add_argument('--disks', type=int, default=100000)
    parser.add_argument('--share', type=int, default=6,
                        help='one in this many disks is written per round')
    parser.add_argument('--runs', type=int, default=3)
    parser.add_argument('--no-fillfactor', action='store_true',
                        help='PostgreSQL: the disks table without the '
                        'fill factor migration 3e9a7c5d1b62 gives it '
                        '(PostgreSQL\'s default, 100)')
    run(parser.parse_args(argv))
    return 0


if __name__ == '__main__':
    sys.exit(main())
