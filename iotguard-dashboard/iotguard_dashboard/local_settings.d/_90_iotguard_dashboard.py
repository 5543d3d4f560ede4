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

# A settings snippet for openstack_dashboard/local/local_settings.d/:
# Horizon runs those with its settings in scope (HORIZON_CONFIG). It adds
# "Change I/O tier" to the row actions of Project > Compute > Instances
# (iotguard_dashboard.customization). A deployment that already names a
# customization module keeps it: import iotguard_dashboard.customization
# from that one instead.
HORIZON_CONFIG.setdefault(  # noqa: F821
    'customization_module', 'iotguard_dashboard.customization')
