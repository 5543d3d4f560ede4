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

"""``openstack iotguard decision list|show``: the audit trail, newest first."""

import argparse

from osc_lib.command import command

from iotguard.osc.v1 import common

# A tenant gets domain_id, the admin also the domain's name.
COLUMNS = (('id', 'ID'), ('created_at', 'Time'), ('domain', 'Domain'),
           ('domain_id', 'Domain ID'),
           ('instance_uuid', 'Instance'), ('dev', 'Dev'),
           ('action', 'Action'), ('new_limits', 'New Limits'),
           ('reason', 'Reason'))
LONG_COLUMNS = COLUMNS + (('policy', 'Policy'), ('project_id', 'Project'),
                          ('old_limits', 'Old Limits'),
                          ('numbers', 'Numbers'))


class ListDecision(command.Lister):
    """List the decisions iotguard took, and why."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument('--instance', metavar='<server>',
                            help='Only the decisions on this instance '
                                 '(server name or ID)')
        parser.add_argument('--domain', metavar='<domain>',
                            help='Only the decisions in this domain')
        parser.add_argument('--since', metavar='<time>',
                            help='Only decisions at or after this ISO 8601 '
                                 'time (UTC unless an offset is given)')
        parser.add_argument('--limit', metavar='<n>', type=int,
                            help='At most n decisions (one page); '
                                 'without it every page is fetched')
        parser.add_argument('--marker', metavar='<id>',
                            help='Start after this decision id (the last '
                                 'one of the previous page)')
        parser.add_argument('--long', action='store_true',
                            help='Also show policy, project, old limits '
                                 'and the numbers the policy saw')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> common.Listed:
        args = parsed_args
        filters = {'instance': args.instance and common.server_id(
            self, args.instance), 'domain': args.domain, 'since': args.since}
        client = common.client(self)
        decisions, marker = client.decision_list(
            limit=args.limit, marker=args.marker, **filters)
        while args.limit is None and marker is not None:  # every page
            page, marker = client.decision_list(marker=marker, **filters)
            decisions.extend(page)
        return common.listing(decisions,
                              LONG_COLUMNS if args.long else COLUMNS)


class ShowDecision(command.ShowOne):
    """Show one decision: the limits before and after, and why."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument('id', metavar='<id>', type=int,
                            help='Decision ID')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> common.Shown:
        decision = common.client(self).decision_show(parsed_args.id)
        return common.show(decision, LONG_COLUMNS)
