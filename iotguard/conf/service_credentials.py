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

"""[service_credentials]: how iotguard authenticates to other services.

The keystoneauth auth plugin (auth_type and its options) and session
options (cafile, timeout, ...) are registered from keystoneauth itself, as
every OpenStack service does, plus the region and interface to pick
endpoints from the catalog.
"""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

GROUP = 'service_credentials'

# The options of the plugin ``auth_type`` names (``password``: auth_url,
# username, ...) are registered by keystoneauth when it loads the plugin;
# registering them up front would make ``auth_url`` required even where no
# credentials are needed.
OPTS: list[cfg.Opt] = [
    cfg.StrOpt('region_name',
               help='Region of the Nova, Cinder and Gnocchi endpoints.'),
    cfg.StrOpt('interface',
               default='internal',
               choices=('public', 'internal', 'admin'),
               help='Catalog interface of those endpoints.'),
] + (ks_loading.get_session_conf_options() +
     ks_loading.get_auth_common_conf_options())
