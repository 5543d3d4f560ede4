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

"""``openstack iotguard domain list|show|set``: storage contention domains."""

import argparse

from osc_lib.cli import parseractions
from osc_lib.command import command
from osc_lib import exceptions

from iotguard.osc import client as osc_client
from iotguard.osc.v1 import common

LIST_COLUMNS = (('name', 'Name'), ('domain_id', 'Domain ID'),
                ('kind', 'Kind'), ('policy', 'Policy'), ('profile', 'Profile'))
SHOW_COLUMNS = (('name', 'Name'), ('domain_id', 'Domain ID'),
                ('kind', 'Kind'), ('policy', 'Policy'),
                ('params', 'Params'), ('profile', 'Profile'),
                ('capacity', 'Capacity'), ('committed', 'Committed'),
                ('committed_learned', 'Committed Learned'),
                ('max_commit_ratio', 'Max Commit Ratio'),
                ('overcommitted', 'Overcommitted'),
                ('beyond_capacity', 'Beyond Capacity'),
                ('utilisation', 'Utilisation'), ('disks', 'Disks'),
                ('created_at', 'Created At'), ('updated_at', 'Updated At'))


class DisksColumn(common.LinesColumn):
    """``<instance>/<dev> (<tier>)`` per disk; the full views in JSON."""

    def line(self, disk: osc_client.Body) -> str:
        return '%s/%s (%s)' % (disk['instance_uuid'], disk['dev'],
                               disk['tier'] or 'no tier')


def param_value(text: str) -> bool | int | float | str:
    """A policy parameter from the command line: number, boolean or text."""
    if text.lower() in ('true', 'false'):
        return text.lower() == 'true'
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


class ListDomain(command.Lister):
    """List domains (a project sees those holding its disks)."""

    def take_action(self, parsed_args: argparse.Namespace) -> common.Listed:
        domains = common.client(self).domain_list()
        return common.listing(domains, LIST_COLUMNS)


class ShowDomain(command.ShowOne):
    """Show a domain: profile, committed floors, utilisation, disks."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument(
            'name', metavar='<name>',
            help='Domain name (a project: the Domain ID its disks show)')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> common.Shown:
        domain = common.client(self).domain_show(parsed_args.name)
        return common.show(domain, SHOW_COLUMNS, DisksColumn)


class SetDomain(command.Command):
    """Change a domain's capacity profile or decision policy (admin)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument(
            'name', metavar='<name>',
            help='Domain name (a project: the Domain ID its disks show)')
        parser.add_argument('--iops-4k', metavar='<iops>', type=float,
                            help='Capacity: 4 KiB operations per second')
        parser.add_argument('--bytes-sec', metavar='<bytes>', type=float,
                            help='Capacity: bytes per second')
        parser.add_argument('--form', choices=('additive', 'max'),
                            help='How the two combine: additive (disks, '
                                 'arrays) or max (a token bucket)')
        parser.add_argument('--profile-source',
                            choices=('manual', 'learned'),
                            help='Use the profile set here (manual) or the '
                                 'one learned from the storage (learned)')
        parser.add_argument('--policy', metavar='<policy>',
                            help='Decision policy (none, static, ntt, '
                                 'guarantee)')
        parser.add_argument('--param', metavar='<key=value>',
                            dest='params', action=parseractions.KeyValueAction,
                            help='A policy parameter (repeat for several); '
                                 'the given ones replace all parameters')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> None:
        fields = {key: getattr(parsed_args, key)
                  for key in ('iops_4k', 'bytes_sec', 'form',
                              'profile_source', 'policy')
                  if getattr(parsed_args, key) is not None}
        if parsed_args.params:
            fields['params'] = {key: param_value(value) for key, value
                                in parsed_args.params.items()}
        if not fields:
            raise exceptions.CommandError('Nothing to set: give at least '
                                          'one option.')
        common.client(self).domain_update(parsed_args.name, **fields)
