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

"""``openstack iotguard instance show|set``: an instance's disks, its tier."""

from osc_lib.command import command

from iotguard.osc.v1 import common

DISK_COLUMNS = (('dev', 'Dev'), ('domain', 'Domain'), ('host', 'Host'),
                ('volume_id', 'Volume'), ('tier', 'Tier'),
                ('tier_source', 'Tier Source'),
                ('tier_refused', 'Tier Refused'), ('floor', 'Floor'),
                ('ceiling', 'Ceiling'), ('rates', 'Rates'),
                ('cap', 'Cap'), ('reason', 'Cap Reason'),
                ('lease_expires_at', 'Cap Lease Until'),
                ('decision_id', 'Decision'))
SET_COLUMNS = (('uuid', 'UUID'), ('project_id', 'Project'),
               ('tier', 'Tier'), ('admission', 'Admission'),
               ('nova_metadata', 'Nova Metadata'))


def disk_row(disk):
    """One disk of the API's view, its cap flattened into columns."""
    cap = disk.get('cap') or {}
    refused = disk.get('tier_refused')
    if refused:
        refused = '%s (from %s): %s' % (refused['tier'], refused['source'],
                                        refused['reason'])
    return dict(disk, tier_refused=refused, cap=cap.get('limits'),
                reason=cap.get('reason'),
                lease_expires_at=cap.get('lease_expires_at'),
                decision_id=cap.get('decision_id'))


class ShowInstance(command.Lister):
    """Show an instance's disks: tier, floor, rates and the cap in force."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<instance-uuid>',
                            help='Nova instance UUID')
        return parser

    def take_action(self, parsed_args):
        instance = common.client(self).instance_show(parsed_args.uuid)
        disks = [disk_row(d) for d in instance['disks']]
        return (tuple(header for _, header in DISK_COLUMNS),
                (common.row(d, [key for key, _ in DISK_COLUMNS])
                 for d in disks))


class SetInstance(command.ShowOne):
    """Choose the tier of every disk of an instance (admission applies)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<instance-uuid>',
                            help='Nova instance UUID')
        parser.add_argument('--tier', metavar='<tier>', required=True,
                            help='Tier for all the disks of the instance')
        return parser

    def take_action(self, parsed_args):
        result = common.client(self).instance_set_tier(parsed_args.uuid,
                                                       parsed_args.tier)
        return common.show(result, SET_COLUMNS)
