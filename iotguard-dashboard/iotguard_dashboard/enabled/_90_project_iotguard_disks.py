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

# Project > Compute > Disk I/O: the project's disks, their tiers, floors,
# rates and caps, and the choice of tier. Copy this file into Horizon's
# openstack_dashboard/local/enabled/ (with _89_iotguard_dashboard.py) to
# enable the panel.

PANEL = 'iotguard_disks'
PANEL_DASHBOARD = 'project'
PANEL_GROUP = 'compute'
ADD_PANEL = 'iotguard_dashboard.content.project.iotguard_disks.panel.DiskIO'
# The same disks as a tab of the instance details, with Change I/O tier.
EXTRA_TABS = {
    'openstack_dashboard.dashboards.project.instances.tabs.'
    'InstanceDetailTabs': (
        (100, 'iotguard_dashboard.content.project.iotguard_disks.tabs.'
              'DiskIOTab'),
    ),
}
