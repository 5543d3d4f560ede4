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

"""Adds "Change I/O tier" to the row actions of Horizon's instances table.

Horizon has no plugin hook for another panel's table actions: a
deployment's ``HORIZON_CONFIG['customization_module']``, which Horizon
imports once its dashboards are loaded, is where they are changed. Name
this module there, or import it from the deployment's own customization
module (doc/source/install/dashboard.rst). Importing it again adds
nothing more.
"""

from openstack_dashboard.dashboards.project.instances import (
    tables as instances)

from iotguard_dashboard.content.project.iotguard_disks import tables


def add_row_action(table, action, after=None):
    """``action`` among ``table``'s row actions, after ``after`` if there.

    Horizon instantiates a table's actions when it defines the class; the
    new one is instantiated as those were.
    """
    actions = list(table._meta.row_actions)
    if action in actions:
        return
    at = actions.index(after) + 1 if after in actions else len(actions)
    actions.insert(at, action)
    table._meta.row_actions = tuple(actions)
    table.base_actions[action.name] = action()


# Beside "Resize Instance", the other choice of what a server gets.
add_row_action(instances.InstancesTable, tables.ChangeServerTier,
               after=instances.ResizeLink)
