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

from cliff import columns as cliff_columns
from keystoneauth1 import exceptions as ksa_exc
from openstack import exceptions as sdk_exc
from osc_lib.cli import format_columns
from osc_lib import exceptions
from oslo_utils import uuidutils

from iotguard.osc import plugin

FORMATTERS = {dict: format_columns.DictColumn,
              list: format_columns.ListColumn}


def client(command):
    """The iotguard client of ``command``'s ClientManager."""
    return command.app.client_manager.iotguard


def _noauth(command):
    return plugin.noauth(command.app.client_manager.get_configuration())


def _sdk(command):
    return command.app.client_manager.sdk_connection


def server_id(command, name_or_id):
    """The UUID of a Nova server given by name or ID.

    A UUID is used as it is (iotguard knows instances by UUID, also when
    Nova is not reachable or the server is gone); a name is looked up in
    Nova through openstacksdk.
    """
    if uuidutils.is_uuid_like(name_or_id):
        return name_or_id
    if _noauth(command):
        raise exceptions.CommandError(
            'With --os-auth-type none there is no Nova to look server %r '
            'up in: give its UUID.' % name_or_id)
    try:
        return _sdk(command).compute.find_server(name_or_id,
                                                 ignore_missing=False).id
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


def project_id(command, name_or_id, domain=None):
    """The ID of a Keystone project given by name or ID.

    ``domain`` (name or ID) tells same-named projects apart. With
    ``--os-auth-type none`` (no Keystone), or when Keystone does not let
    the caller read projects, the value is taken as an ID.
    """
    if _noauth(command):
        return name_or_id
    identity = _sdk(command).identity
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


def add_project_domain_option(parser):
    parser.add_argument('--project-domain', metavar='<project-domain>',
                        help='Domain the project belongs to (name or ID), '
                             'when project names collide')


class LinesColumn(cliff_columns.FormattableColumn):
    """One line per item in tables (``line(item)``); the items in JSON."""

    def line(self, item):
        raise NotImplementedError()

    def human_readable(self):
        return '\n'.join(self.line(item) for item in self._value)

    def machine_readable(self):
        return self._value


def cell(value):
    """Dicts and lists as osc columns (readable in tables, raw in JSON)."""
    if isinstance(value, list) and value and all(
            isinstance(v, dict) for v in value):
        return format_columns.ListDictColumn(value)
    formatter = FORMATTERS.get(type(value))
    return formatter(value) if formatter else value


def row(item, fields):
    """The values of ``fields`` (API keys) of ``item``, in order."""
    return tuple(cell(item.get(key)) for key in fields)


def show(item, columns):
    """A ShowOne answer for ``columns``, ``[(API key, header), ...]``.

    Keys the API did not send (a tenant's view is smaller) are left out.
    """
    present = [(key, header) for key, header in columns if key in item]
    return (tuple(header for _, header in present),
            row(item, [key for key, _ in present]))


def listing(items, columns):
    """A Lister answer for ``columns``; keys no item has are left out."""
    present = [(key, header) for key, header in columns
               if any(key in item for item in items)] or columns
    return (tuple(header for _, header in present),
            (row(item, [key for key, _ in present]) for item in items))
