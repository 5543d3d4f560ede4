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

"""What the v1 commands share: the client, rows and columns."""

from osc_lib.cli import format_columns

FORMATTERS = {dict: format_columns.DictColumn,
              list: format_columns.ListColumn}


def client(command):
    """The iotguard client of ``command``'s ClientManager."""
    return command.app.client_manager.iotguard


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
