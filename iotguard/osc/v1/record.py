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

"""``openstack iotguard disk record``: a disk's floor kept, minute by minute.
"""

import argparse

from osc_lib.command import command

from iotguard.osc.v1 import common

COLUMNS = (('minute', 'Minute'), ('floor_kept_ratio', 'Floor Kept'),
           ('capped_s', 'Capped (s)'), ('iops', 'IOPS'),
           ('bytes_sec', 'Bytes/s'), ('floor_iops', 'Floor IOPS'),
           ('floor_bytes_sec', 'Floor Bytes/s'), ('cap_iops', 'Cap IOPS'),
           ('cap_bytes_sec', 'Cap Bytes/s'), ('cap_reason', 'Why Capped'))


class ShowDiskRecord(command.Lister):
    """A disk's record: its floor kept, its floor and caps, by the minute.

    The summary of the window (the share of seconds the floor was kept,
    the seconds capped) is logged before the table.
    """

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument('server', metavar='<server>',
                            help='Server (name or ID)')
        parser.add_argument('dev', metavar='<disk>',
                            help="The disk's device name (vda, vdb, ...)")
        parser.add_argument('--since', metavar='<time>',
                            help='From this ISO 8601 time (UTC unless an '
                                 'offset is given; default an hour before '
                                 '--until)')
        parser.add_argument('--until', metavar='<time>',
                            help='Up to this ISO 8601 time (default now)')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> common.Listed:
        args = parsed_args
        record = common.client(self).disk_record(
            common.server_id(self, args.server), args.dev, since=args.since,
            until=args.until)
        kept = record['floor_kept_ratio']
        self.app.stdout.write(
            'Floor kept %s of %g s due; capped %g s (%s to %s)\n' % (
                'n/a' if kept is None else '%.1f %%' % (100 * kept),
                record['floor_due_s'], record['capped_s'], record['since'],
                record['until']))
        return common.listing(record['minutes'], COLUMNS)
