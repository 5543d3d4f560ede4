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

"""What the v1 commands share: the client, lookups, rows and columns."""

import argparse
import collections.abc
from typing import Any
from typing import cast

from cliff import columns as cliff_columns
from keystoneauth1 import exceptions as ksa_exc
from openstack import connection
from openstack import exceptions as sdk_exc
from openstack.identity.v3 import _proxy as identity_v3
from osc_lib.cli import format_columns
from osc_lib.command import command as osc_command
from osc_lib import exceptions
from oslo_utils import uuidutils

from iotguard.osc import client as osc_client
from iotguard.osc import plugin

Row = tuple[object, ...]
Columns = tuple[tuple[str, str], ...]
Shown = tuple[tuple[str, ...], Row]
Listed = tuple[tuple[str, ...], collections.abc.Iterable[Row]]
FORMATTERS: dict[type, type[cliff_columns.FormattableColumn[Any]]] = {
    dict: format_columns.DictColumn, list: format_columns.ListColumn}


def client(command: osc_command.Command) -> osc_client.Client:
    """The iotguard client of ``command``'s ClientManager."""
    iotguard: osc_client.Client = getattr(command.app.client_manager,
                                          plugin.API_NAME)
    return iotguard


def server_id(command: osc_command.Command, name_or_id: str) -> str:
    """The UUID of a Nova server given by name or ID.

    A UUID is used as it is (iotguard knows instances by UUID, also when
    Nova is not reachable or the server is gone); a name is looked up in
    Nova through openstacksdk.
    """
    if uuidutils.is_uuid_like(name_or_id):
        return name_or_id
    manager = command.app.client_manager
    if plugin.noauth(manager.get_configuration()):
        raise exceptions.CommandError(
            'With --os-auth-type none there is no Nova to look server %r '
            'up in: give its UUID.' % name_or_id)
    sdk: connection.Connection = manager.sdk_connection
    try:
        return sdk.compute.find_server(name_or_id, ignore_missing=False).id
    except sdk_exc.NotFoundException:
        raise exceptions.CommandError(
            'No server with a name or ID of %r exists.' % name_or_id)
    except sdk_exc.DuplicateResource:
        raise exceptions.CommandError(
            'More than one server is named %r: give its ID.' % name_or_id)
    except (sdk_exc.SDKException, ksa_exc.ClientException) as exc:
        raise exceptions.CommandError(
            'Could not look server %r up in Nova (%s): give its UUID.'
            % (name_or_id, exc))


def project_id(command: osc_command.Command, name_or_id: str,
               domain: str | None = None) -> str:
    """The ID of a Keystone project given by name or ID.

    ``domain`` (name or ID) tells same-named projects apart. With
    ``--os-auth-type none`` (no Keystone), or when Keystone does not let
    the caller read projects, the value is taken as an ID.
    """
    manager = command.app.client_manager
    if plugin.noauth(manager.get_configuration()):
        return name_or_id
    identity = cast(identity_v3.Proxy, manager.sdk_connection.identity)
    try:
        where = {}
        if domain:
            where['domain_id'] = identity.find_domain(
                domain, ignore_missing=False).id
        return identity.find_project(name_or_id, ignore_missing=False,
                                     **where).id
    except sdk_exc.ForbiddenException:
        return name_or_id
    except sdk_exc.NotFoundException:
        raise exceptions.CommandError(
            'No project with a name or ID of %r exists%s.' % (
                name_or_id, ' in domain %r' % domain if domain else ''))
    except sdk_exc.DuplicateResource:
        raise exceptions.CommandError(
            'More than one project is named %r: give its ID or '
            '--project-domain.' % name_or_id)


def add_project_domain_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--project-domain', metavar='<project-domain>',
                        help='Domain the project belongs to (name or ID), '
                             'when project names collide')


class LinesColumn(cliff_columns.FormattableColumn[list[osc_client.Body]]):
    """One line per item in tables (``line(item)``); the items in JSON."""

    def line(self, item: osc_client.Body) -> str:
        raise NotImplementedError()

    def human_readable(self) -> str:
        return '\n'.join(self.line(item) for item in self._value)


def cell(value: object) -> object:
    """Dicts and lists as osc columns (readable in tables, raw in JSON)."""
    if isinstance(value, list) and value and all(
            isinstance(v, dict) for v in value):
        return format_columns.ListDictColumn(value)
    formatter = FORMATTERS.get(type(value))
    return formatter(value) if formatter else value


def show(item: osc_client.Body, columns: Columns,
         disks: type[LinesColumn] | None = None) -> Shown:
    """A ShowOne answer for ``columns``, ``[(API key, header), ...]``.

    Keys the API did not send (a tenant's view is smaller) are left out;
    ``disks`` formats the ``disks`` key.
    """
    present = [(key, header) for key, header in columns if key in item]
    return (tuple(header for _, header in present),
            tuple(disks(item[key]) if disks and key == 'disks'
                  else cell(item[key]) for key, _ in present))


def table(items: collections.abc.Iterable[osc_client.Body],
          columns: Columns) -> Listed:
    """A Lister answer: every column of ``columns`` for every item."""
    return (tuple(header for _, header in columns),
            (tuple(cell(item.get(key)) for key, _ in columns)
             for item in items))


def listing(items: list[osc_client.Body], columns: Columns) -> Listed:
    """:func:`table` without the columns no item has."""
    return table(items, tuple(
        (key, header) for key, header in columns
        if any(key in item for item in items)) or columns)
