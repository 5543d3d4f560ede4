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

"""``openstack iotguard instance list|show|set|unset``: disks and tiers.

Servers are given by name or ID (:func:`common.server_id`).
"""

import argparse
import logging

from osc_lib.command import command
from osc_lib import exceptions

from iotguard.osc import client as osc_client
from iotguard.osc.v1 import common

LOG = logging.getLogger(__name__)

LIST_COLUMNS = (('instance_uuid', 'Instance'), ('dev', 'Disk'),
                ('tier', 'Tier'), ('tier_source', 'Source'),
                ('floor', 'Floor'), ('cap', 'Cap'))
LONG_COLUMNS = LIST_COLUMNS + (('domain_id', 'Domain ID'),
                               ('domain', 'Domain'), ('host', 'Host'),
                               ('ceiling', 'Ceiling'),
                               ('reason', 'Cap Reason'),
                               ('latency_p99_ms', 'Latency p99 (ms)'))
PROJECT_COLUMN = ('project_id', 'Project')
SHOW_COLUMNS = (('uuid', 'UUID'), ('project_id', 'Project'),
                ('disks', 'Disks'))


def disk_row(disk: osc_client.Body) -> osc_client.Body:
    """One disk of the API's view, its cap and p99 flattened into columns."""
    cap = disk.get('cap') or {}
    return dict(disk, cap=cap.get('limits'), reason=cap.get('reason'),
                latency_p99_ms=_p99(disk))


def _p99(disk: osc_client.Body) -> float | None:
    """The disk's measured p99 latency (ms); None: not measured."""
    p99: float | None = (disk.get('rates') or {}).get('latency_p99_ms')
    return p99


def _numbers(values: dict[str, float]) -> str:
    return ', '.join('%s=%g' % (key, values[key]) for key in sorted(values))


class DisksColumn(common.LinesColumn):
    """One line per disk: tier, floor, p99, cap; the API's views in JSON."""

    def line(self, disk: osc_client.Body) -> str:
        text = '%s: %s' % (disk['dev'], disk['tier'] or 'no tier')
        if disk['tier']:
            text += ' (%s), floor %s' % (disk['tier_source'],
                                         _numbers(disk['floor']))
        if disk.get('size_gib'):
            text += ' at %d GiB' % disk['size_gib']
        burst = disk.get('burst')
        if burst:
            text += '; burst credits %gs, used %gs' % (burst['credits_s'],
                                                       burst['used_s'])
        p99 = _p99(disk)
        if p99 is not None:
            text += '; latency p99 %g ms' % p99
        grown = disk.get('size_refused')
        if grown:
            text += '; %d GiB refused: %s' % (grown['size_gib'],
                                              grown['reason'])
        refused = disk.get('tier_refused')
        if refused:
            text += '; %s refused (from %s): %s' % (
                refused['tier'], refused['source'], refused['reason'])
        # The domain's name for the admin, its opaque id for a tenant.
        text += '; domain %s' % disk.get('domain', disk['domain_id'])
        cap = disk.get('cap')
        if cap:
            text += '; cap %s until %s, decision %s: %s' % (
                _numbers(cap['limits']), cap['lease_expires_at'],
                cap['decision_id'], cap['reason'])
        return text


def _add_server(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('server', metavar='<server>',
                        help='Server (name or ID)')


class ListInstance(command.Lister):
    """List your project's instances: each disk's tier, floor and cap."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument('--all-projects', action='store_true',
                            help='Every project\'s instances (admin)')
        parser.add_argument('--project', metavar='<project>',
                            help='This project\'s instances (name or ID; '
                                 'admin)')
        common.add_project_domain_option(parser)
        parser.add_argument('--long', action='store_true',
                            help='Also show domain, host, ceiling and why '
                                 'the cap')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> common.Listed:
        args = parsed_args
        project = (common.project_id(self, args.project, args.project_domain)
                   if args.project else None)
        instances = common.client(self).instance_list(
            all_projects=args.all_projects, project_id=project)
        columns: common.Columns = LONG_COLUMNS if args.long else LIST_COLUMNS
        if args.all_projects or project:
            columns = columns[:1] + (PROJECT_COLUMN,) + columns[1:]
        return common.listing([disk_row(d) for i in instances
                               for d in i['disks']], columns)


class ShowInstance(command.ShowOne):
    """Show an instance: its disks' tier, floor and the cap in force."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        _add_server(parser)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> common.Shown:
        instance = common.client(self).instance_show(
            common.server_id(self, parsed_args.server))
        return common.show(instance, SHOW_COLUMNS, DisksColumn)


class SetInstance(command.Command):
    """Choose the tier of every disk of an instance (admission applies)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        _add_server(parser)
        parser.add_argument('--tier', metavar='<tier>', required=True,
                            help='Tier for all the disks of the instance')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> None:
        result = common.client(self).instance_set_tier(
            common.server_id(self, parsed_args.server), parsed_args.tier)
        LOG.debug('Tier %(tier)s admitted for %(uuid)s: %(admission)s, '
                  'Nova metadata %(nova_metadata)s', result)


class UnsetInstance(command.Command):
    """Drop the tier chosen for an instance: back to flavor or default."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        _add_server(parser)
        parser.add_argument('--tier', action='store_true',
                            help='Drop the tier chosen with "instance set '
                                 '--tier": the disks get their flavor\'s, '
                                 'volume type\'s or the default tier')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> None:
        if not parsed_args.tier:
            raise exceptions.CommandError('Nothing to unset: give --tier.')
        common.client(self).instance_unset_tier(
            common.server_id(self, parsed_args.server))
