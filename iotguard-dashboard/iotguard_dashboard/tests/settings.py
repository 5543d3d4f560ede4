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

"""Django settings of the plugin's tests: Horizon's test settings with the
plugin's panels enabled (as its enabled/ files would in a deployment)."""

import collections

import openstack_dashboard.enabled
from openstack_dashboard.test.settings import *  # noqa: F401,F403
from openstack_dashboard.test.settings import HORIZON_CONFIG
from openstack_dashboard.test.settings import INSTALLED_APPS
from openstack_dashboard.utils import settings as settings_utils

import iotguard_dashboard.enabled

# update_dashboards sets them again; left in, they would be warned about.
HORIZON_CONFIG.pop('dashboards', None)
HORIZON_CONFIG.pop('default_dashboard', None)
INSTALLED_APPS = list(INSTALLED_APPS)
settings_utils.update_dashboards(
    [openstack_dashboard.enabled, iotguard_dashboard.enabled],
    HORIZON_CONFIG, INSTALLED_APPS)
# Horizon's own applications were added once already by its settings.
INSTALLED_APPS = list(collections.OrderedDict.fromkeys(INSTALLED_APPS))
# "Change I/O tier" in Horizon's instances table, as doc/source/install/
# dashboard.rst has an operator add it.
HORIZON_CONFIG['customization_module'] = 'iotguard_dashboard.customization'
