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

"""``openstack iotguard tier list|show|create|set|unset|delete``."""

import argparse
import logging
from typing import Any

from osc_lib.command import command
from osc_lib import exceptions

from iotguard.osc.v1 import common

LOG = logging.getLogger(__name__)

COLUMNS = (('name', 'Name'), ('min_iops', 'Min IOPS'),
           ('min_bytes_sec', 'Min Bytes/s'), ('max_iops', 'Max IOPS'),
           ('max_bytes_sec', 'Max Bytes/s'), ('weight', 'Weight'),
           ('is_public', 'Public'))
LONG_COLUMNS = COLUMNS + (('min_iops_per_gb', 'Min IOPS/GiB'),
                          ('min_bytes_sec_per_gb', 'Min Bytes/s/GiB'),
                          ('max_iops_per_gb', 'Max IOPS/GiB'),
                          ('max_bytes_sec_per_gb', 'Max Bytes/s/GiB'),
                          ('burst_factor', 'Burst Factor'),
                          ('burst_seconds', 'Burst Seconds'),
                          ('latency_p99_ms', 'Latency p99 ms'),
                          ('description', 'Description'),
                          ('projects', 'Projects'))
SHOW_COLUMNS = LONG_COLUMNS + (('created_at', 'Created At'),
                               ('updated_at', 'Updated At'))
NUMBERS = (('min_iops', 'Floor: I/O operations per second'),
           ('min_bytes_sec', 'Floor: bytes per second'),
           ('max_iops', 'Ceiling: I/O operations per second (0: none)'),
           ('max_bytes_sec', 'Ceiling: bytes per second (0: none)'),
           ('min_iops_per_gb', 'Floor per GiB of the disk: I/O operations '
            'per second (0: none); a disk gets the larger of it times its '
            'size and --min-iops, at most --max-iops'),
           ('min_bytes_sec_per_gb', 'Floor per GiB of the disk: bytes per '
            'second (0: none), as --min-iops-per-gb'),
           ('max_iops_per_gb', 'Ceiling per GiB of the disk: I/O '
            'operations per second (0: none), at most --max-iops, never '
            'below the floor'),
           ('max_bytes_sec_per_gb', 'Ceiling per GiB of the disk: bytes '
            'per second (0: none), as --max-iops-per-gb'),
           ('burst_factor', 'Burst: how far above its ceilings a disk may '
            'run, in multiples of its floor (0: none; else above 1, with '
            '--burst-seconds)'),
           ('burst_seconds', 'Burst: the most seconds of it a disk saves '
            'up, a second per second idle below its floor (0: none)'),
           ('latency_p99_ms', 'Latency objective: the 99th percentile of '
            'a disk\'s reads and writes, in ms (0: none)'),
           ('weight', 'Share of the spare capacity, relative (> 0)'))


def _add_tier_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--description', metavar='<text>',
                        help='What the tier is for')
    for key, text in NUMBERS:
        parser.add_argument('--' + key.replace('_', '-'), dest=key,
                            metavar='<number>', type=float, help=text)
    public = parser.add_mutually_exclusive_group()
    public.add_argument('--public', dest='is_public', action='store_true',
                        default=None, help='Every project may use it')
    public.add_argument('--private', dest='is_public', action='store_false',
                        help='Only the projects given with --project')


#: What ``tier unset`` sends: the values of a tier created without them.
UNSET: dict[str, str | float] = {
    'description': '', 'min_iops': 0.0, 'min_bytes_sec': 0.0,
    'max_iops': 0.0, 'max_bytes_sec': 0.0, 'weight': 1.0,
    'min_iops_per_gb': 0.0, 'min_bytes_sec_per_gb': 0.0,
    'max_iops_per_gb': 0.0, 'max_bytes_sec_per_gb': 0.0,
    'burst_factor': 0.0, 'burst_seconds': 0.0, 'latency_p99_ms': 0.0}
#: Flags of ``tier unset`` that stand for several fields.
UNSET_GROUPS = (('floor', ('min_iops', 'min_bytes_sec', 'min_iops_per_gb',
                           'min_bytes_sec_per_gb'),
                 'Every floor, per GiB too (no guaranteed rate)'),
                ('ceiling', ('max_iops', 'max_bytes_sec', 'max_iops_per_gb',
                             'max_bytes_sec_per_gb'),
                 'Every ceiling, per GiB too (no limit)'),
                ('burst', ('burst_factor', 'burst_seconds'),
                 'The burst (--burst-factor and --burst-seconds)'))


def _projects(command: command.Command, args: argparse.Namespace) -> list[str]:
    """The --project values as Keystone project IDs (names looked up)."""
    return [common.project_id(command, project, args.project_domain)
            for project in args.projects]


def _fields(args: argparse.Namespace) -> dict[str, Any]:
    keys = ['description', 'is_public'] + [key for key, _ in NUMBERS]
    return {key: getattr(args, key) for key in keys
            if getattr(args, key) is not None}


class ListTier(command.Lister):
    """List the tiers your project may use (the admin sees all)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument('--long', action='store_true',
                            help='Also show description and projects')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> common.Listed:
        return common.listing(common.client(self).tier_list(),
                              LONG_COLUMNS if parsed_args.long else COLUMNS)


class ShowTier(command.ShowOne):
    """Show one tier."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument('name', metavar='<name>', help='Tier name')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> common.Shown:
        tier = common.client(self).tier_show(parsed_args.name)
        return common.show(tier, SHOW_COLUMNS)


class CreateTier(command.ShowOne):
    """Create a tier (admin)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument('name', metavar='<name>',
                            help='New tier name ([A-Za-z0-9._-])')
        _add_tier_options(parser)
        parser.add_argument('--project', metavar='<project>',
                            dest='projects', action='append',
                            help='A project that may use a private tier '
                                 '(name or ID; repeat for several)')
        common.add_project_domain_option(parser)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> common.Shown:
        fields = _fields(parsed_args)
        if parsed_args.projects:
            fields['projects'] = _projects(self, parsed_args)
        tier = common.client(self).tier_create(parsed_args.name, **fields)
        return common.show(tier, SHOW_COLUMNS)


class SetTier(command.Command):
    """Change a tier (admin); admission is not re-run for its disks."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument('name', metavar='<name>', help='Tier name')
        _add_tier_options(parser)
        projects = parser.add_mutually_exclusive_group()
        projects.add_argument('--project', metavar='<project>',
                              dest='projects', action='append',
                              help='Projects that may use the tier (name '
                                   'or ID): replaces the list (repeat for '
                                   'several)')
        projects.add_argument('--no-project', dest='projects',
                              action='store_const', const=[],
                              help='Clear the list of projects')
        common.add_project_domain_option(parser)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> None:
        fields = _fields(parsed_args)
        if parsed_args.projects is not None:
            fields['projects'] = _projects(self, parsed_args)
        if not fields:
            raise exceptions.CommandError('Nothing to set: give at least '
                                          'one option.')
        common.client(self).tier_update(parsed_args.name, **fields)


class UnsetTier(command.Command):
    """Unset a tier's fields (admin): back to what a new tier has."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument('name', metavar='<name>', help='Tier name')
        for flag, _keys, text in UNSET_GROUPS:
            parser.add_argument('--' + flag, action='store_true', help=text)
        for key, text in NUMBERS:
            parser.add_argument(
                '--' + key.replace('_', '-'), dest=key, action='store_true',
                help='%s, back to %g' % (text.split(' (')[0],
                                         float(UNSET[key])))
        parser.add_argument('--description', action='store_true',
                            help='The description (empty)')
        parser.add_argument('--project', metavar='<project>',
                            dest='projects', action='append',
                            help='A project that may no longer use the '
                                 'private tier (name or ID; repeat for '
                                 'several)')
        common.add_project_domain_option(parser)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> None:
        args, client = parsed_args, common.client(self)
        keys = {key for key in UNSET if getattr(args, key)}
        for flag, group, _text in UNSET_GROUPS:
            if getattr(args, flag):
                keys.update(group)
        fields: dict[str, Any] = {key: UNSET[key] for key in keys}
        if args.projects:
            gone = set(_projects(self, args))
            current = client.tier_show(args.name).get('projects', [])
            missing = gone - set(current)
            if missing:
                raise exceptions.CommandError(
                    'Tier %s is not granted to project(s) %s.' % (
                        args.name, ', '.join(sorted(missing))))
            fields['projects'] = [p for p in current if p not in gone]
        if not fields:
            raise exceptions.CommandError('Nothing to unset: give at least '
                                          'one option.')
        client.tier_update(args.name, **fields)


class DeleteTier(command.Command):
    """Delete tiers (admin); a tier in use cannot be deleted."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument('names', metavar='<name>', nargs='+',
                            help='Tier(s) to delete')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> None:
        failed = 0
        for name in parsed_args.names:
            try:
                common.client(self).tier_delete(name)
            except exceptions.CommandError as exc:
                LOG.error('Tier %s not deleted: %s', name, exc)
                failed += 1
        if failed:
            raise exceptions.CommandError(
                '%d of %d tiers not deleted.' % (failed,
                                                 len(parsed_args.names)))
