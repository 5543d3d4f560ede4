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

"""``openstack iotguard agent list``: the agents and whether each is alive."""

import argparse

from osc_lib.command import command

from iotguard.osc.v1 import common

COLUMNS = (('host', 'Host'), ('driver', 'Driver'), ('alive', 'Alive'),
           ('last_heartbeat', 'Last Heartbeat'), ('disks', 'Disks'),
           ('caps', 'Caps'), ('clock_offset_s', 'Clock Offset (s)'))
LONG_COLUMNS = COLUMNS + (('version', 'Version'),
                          ('interval_s', 'Interval (s)'),
                          ('created_at', 'Created At'))


class ListAgent(command.Lister):
    """List the iotguard agents and whether each is alive (admin)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument('--host', metavar='<host>',
                            help='Only the agent of this compute host')
        state = parser.add_mutually_exclusive_group()
        state.add_argument('--alive', dest='alive', action='store_const',
                           const=True,
                           help='Only the agents that are alive')
        state.add_argument('--dead', dest='alive', action='store_const',
                           const=False,
                           help='Only the agents that are not alive')
        parser.add_argument('--long', action='store_true',
                            help='Also show version, reporting interval '
                                 'and first heartbeat')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> common.Listed:
        agents = common.client(self).agent_list(host=parsed_args.host,
                                                alive=parsed_args.alive)
        return common.listing(agents,
                              LONG_COLUMNS if parsed_args.long else COLUMNS)
