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

"""iotguard-manage: database, tiers in Nova and Cinder, domain profiles.

Commands and flags: ``--help`` and doc/source/cli/iotguard-manage.rst.
``tier sync`` talks to Nova and Cinder as the cloud named by ``--os-cloud``
(clouds.yaml) or the ``OS_*`` environment, as an admin.
"""

import argparse
from collections.abc import Callable
import dataclasses
import sys
from typing import Any

from oslo_config import cfg

from iotguard.controller import placement
from iotguard.db import api as db_api
from iotguard.db import migration
from iotguard import exception
from iotguard.manage import measure
from iotguard.manage import tiersync
from iotguard.policy import admission
from iotguard.policy import base
from iotguard import service

KINDS = ('local', 'ceph', 'cinder')
Args = argparse.Namespace
Db = db_api.Connection


def db_sync(conf: cfg.ConfigOpts, db: Db, args: Args) -> None:
    migration.upgrade(db.get_engine())
    print('Database schema at %s.' % migration.version(db.get_engine()))


def db_version(conf: cfg.ConfigOpts, db: Db, args: Args) -> None:
    print(migration.version(db.get_engine()) or 'None (run db sync)')


def _connect(cloud: str | None) -> Any:
    import openstack  # only tier sync needs the cloud
    return openstack.connect(cloud=cloud)


def tier_sync(conf: cfg.ConfigOpts, db: Db, args: Args) -> None:
    tiers = db.tier_list()
    try:
        conn = args.connect(args.os_cloud)
    except tiersync.cloud_errors() as exc:
        raise exception.TierSyncFailed(
            reason='cannot connect to the cloud: %s' % exc)
    verb = 'Would change' if args.dry_run else 'Changed'
    try:
        report = tiersync.sync(conn, tiers, conf.tiers.flavor_tiers,
                               conf.tiers.volume_type_prefix,
                               dry_run=args.dry_run,
                               floor=placement.flavor_request(conf))
    except exception.TierSyncFailed as exc:
        done = getattr(exc, 'done', [])
        for change in done:
            print('%s: %s' % (verb, change))
        if done:
            print('%d change(s) made before the failure.' % len(done))
        raise
    for skipped in report.skipped:
        print('Skipped: %s.' % skipped)
    for change in report.changes:
        print('%s: %s' % (verb, change))
    for notice in report.notices:
        print('Left alone: %s' % notice)
    print('%d change(s)%s.' % (len(report.changes),
                               ' to make' if args.dry_run else ' made'))


def _store_profile(db: Db, args: Args, profile: base.Profile
                   ) -> admission.Domain:
    """The profile as the domain's manual one (created with --create).

    One write either way: a domain is never left with half a profile.
    """
    values = dataclasses.asdict(profile)
    try:
        return db.domain_update(args.name, values)
    except exception.NotFound:
        if not args.create:
            raise
    return db.domain_create(args.name, args.kind, **values)


def domain_calibrate(conf: cfg.ConfigOpts, db: Db, args: Args) -> None:
    if args.measure is not None:
        profile = _measure(db, args)
    else:
        profile = base.Profile(args.iops_4k, args.bytes_sec, args.form)
    domain = _store_profile(db, args, profile)
    print('Domain %(name)s: iops_4k=%(iops_4k)g bytes_sec=%(bytes_sec)g '
          'form=%(form)s' % vars(domain))


def domain_merge(conf: cfg.ConfigOpts, db: Db, args: Args) -> None:
    domain, moved = db.domain_merge(args.into, args.sources, args.kind)
    print('Domain %s: %d disk(s) moved from %s, which are deleted; '
          'iops_4k=%s bytes_sec=%s form=%s' % (
              domain.name, moved, ', '.join(args.sources),
              domain.iops_4k, domain.bytes_sec, domain.form))
    if domain.iops_4k is None and domain.bytes_sec is None:
        print('It has no capacity profile yet: iotguard-manage domain '
              'calibrate %s' % domain.name)


def _measure(db: Db, args: Args) -> base.Profile:
    """Measure on --measure's path; the profile, or MeasureFailed."""
    if not args.create:
        db.domain_get(args.name)  # NotFound before any write
    target = measure.prepare(args.measure, size=args.size,
                             destroy=args.yes_destroy, depth=args.depth,
                             large_size=args.large_size)
    engine = args.engine
    if engine == 'auto':
        engine = 'fio' if measure.fio_path() else 'builtin'
    print('Measuring %s with %s: %s writes, %d in flight, %g s a phase; '
          '%s.' % (target.path, engine,
                   'O_DIRECT' if args.direct else 'O_DSYNC', args.depth,
                   args.seconds, 'a file created for it'
                   if target.created else 'its data is overwritten'))
    try:
        result = measure.measure(
            target, engine, seconds=args.seconds, depth=args.depth,
            large_size=args.large_size, direct=args.direct,
            progress=lambda phase: print(measure.phase_line(phase)))
    finally:
        target.cleanup()
    for line in measure.report_lines(result):
        print(line)
    return result.profile


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0 or value == float('inf'):
        raise argparse.ArgumentTypeError('must be a number > 0')
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 2:
        raise argparse.ArgumentTypeError('must be an integer >= 2')
    return value


def _size(text: str) -> int:
    try:
        value = measure.parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc))
    if value <= 0:
        raise argparse.ArgumentTypeError('must be a size > 0')
    return value


def _check_calibrate(cal: argparse.ArgumentParser) -> Callable[[Args], None]:
    """Usage errors argparse cannot see: typed or measured, not both."""
    def check(args: Args) -> None:
        typed = [flag for flag, value in (('--iops-4k', args.iops_4k),
                                          ('--bytes-sec', args.bytes_sec),
                                          ('--form', args.form))
                 if value is not None]
        if args.measure is not None:
            if typed:
                cal.error('--measure finds %s itself: give one or the '
                          'other' % ', '.join(typed))
        else:
            if args.iops_4k is None or args.bytes_sec is None:
                cal.error('give --iops-4k and --bytes-sec, or --measure '
                          'PATH')
            if args.form is None:
                args.form = base.ADDITIVE
    return check


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog='iotguard-manage')
    top.add_argument('--config-file', action='append', default=[],
                     help='iotguard configuration file (repeatable)')
    top.add_argument('--config-dir', action='append', default=[],
                     help='directory of configuration files (repeatable)')
    groups = top.add_subparsers(dest='group', required=True)
    dbp = groups.add_parser('db', help='the database schema')
    dbc = dbp.add_subparsers(dest='command', required=True)
    dbc.add_parser('sync', help='upgrade to the newest schema').set_defaults(
        func=db_sync)
    dbc.add_parser('version', help='print the schema revision').set_defaults(
        func=db_version)
    tier = groups.add_parser('tier', help='tiers in Nova and Cinder')
    tierc = tier.add_subparsers(dest='command', required=True)
    sync = tierc.add_parser('sync', help='flavor extra specs, volume types '
                                         'and QoS specs from the tiers')
    sync.add_argument('--dry-run', action='store_true',
                      help='print what would change, change nothing')
    sync.add_argument('--os-cloud', help='cloud of clouds.yaml to use')
    sync.set_defaults(func=tier_sync, connect=_connect)
    domain = groups.add_parser('domain', help='contention domains')
    domainc = domain.add_subparsers(dest='command', required=True)
    cal = domainc.add_parser('calibrate', help="set a domain's capacity "
                                               'profile')
    cal.add_argument('name')
    cal.add_argument('--iops-4k', type=_positive,
                     help='random 4 KiB IOPS the storage sustains')
    cal.add_argument('--bytes-sec', type=_positive,
                     help='sequential bytes per second it sustains')
    cal.add_argument('--create', action='store_true',
                     help='create the domain when it does not exist')
    cal.add_argument('--kind', choices=KINDS, default='local',
                     help='kind of a domain created (default local)')
    cal.add_argument('--form', choices=base.FORMS,
                     help='how the two figures combine: additive (seek + '
                     'transfer: disks, arrays; the default) or max (IOPS '
                     'and bandwidth provisioned separately: a token '
                     'bucket, e.g. QEMU throttle, Ceph or Cinder QoS)')
    meas = cal.add_argument_group(
        'measuring', 'instead of --iops-4k, --bytes-sec and --form: write '
        'to a test file or volume on the storage and measure all three')
    meas.add_argument('--measure', metavar='PATH',
                      help='file or block device to write on (a file that '
                      'does not exist is created, then removed)')
    meas.add_argument('--seconds', type=_positive, default=measure.SECONDS,
                      help='length of each of the three phases (default '
                      '%(default)g)')
    meas.add_argument('--depth', type=_count, default=measure.DEPTH,
                      help='writes in flight (default %(default)d)')
    meas.add_argument('--size', type=_size, default=measure.CREATE_SIZE,
                      help='size of a file created, e.g. 1G (default '
                      '%(default)d bytes)')
    meas.add_argument('--large-size', type=_size, default=measure.LARGE_SIZE,
                      help='size of the sequential writes (default '
                      '%(default)d bytes)')
    meas.add_argument('--engine', choices=measure.ENGINES, default='auto',
                      help='fio, the built-in generator, or fio when it is '
                      'installed (auto, the default)')
    meas.add_argument('--no-direct', dest='direct', action='store_false',
                      help='write through the page cache with O_DSYNC '
                      'where O_DIRECT is refused')
    meas.add_argument('--yes-destroy', action='store_true',
                      help='accept writing over an existing non-empty file '
                      'or a block device')
    cal.set_defaults(func=domain_calibrate, check=_check_calibrate(cal))
    merge = domainc.add_parser(
        'merge', help='make several domains one (their storage is one '
        'capacity): move their disks into INTO and delete them')
    merge.add_argument('into')
    merge.add_argument('sources', nargs='+', metavar='SOURCE')
    merge.add_argument('--kind', choices=KINDS, default='ceph',
                       help='kind of INTO when it is created (default '
                       'ceph)')
    merge.set_defaults(func=domain_merge)
    return top


def main(argv: list[str] | None = None,
         connect: Callable[[str | None], Any] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    if getattr(args, 'check', None):
        args.check(args)
    conf = service.prepare_service(
        [arg for path in args.config_file for arg in ('--config-file', path)]
        + [arg for path in args.config_dir for arg in ('--config-dir', path)])
    if connect is not None:
        args.connect = connect
    db = db_api.Connection(conf)
    try:
        args.func(conf, db, args)
    except exception.IotguardException as exc:
        print('Error: %s' % exc.message, file=sys.stderr)
        return 1
    finally:
        db.dispose()
    return 0
