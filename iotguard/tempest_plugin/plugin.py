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

"""The tempest plugin of iotguard (entry point tempest.test_plugins).

It lives in the iotguard tree but imports nothing from the rest of
iotguard, so it can move to its own repository unchanged.
"""

import os
from typing import Any

from oslo_config import cfg
from tempest import config
from tempest.test_discover import plugins

from iotguard.tempest_plugin import config as iotguard_config


_GROUPS: list[tuple[cfg.OptGroup, list[cfg.Opt]]] = [
    (iotguard_config.iotguard_group, iotguard_config.IotguardGroup),
    (iotguard_config.iotguard_feature_group,
     iotguard_config.IotguardFeatureGroup),
    (config.service_available_group, [iotguard_config.service_option])]


class IotguardTempestPlugin(plugins.TempestPlugin):

    def load_tests(self) -> tuple[str, str]:
        here = os.path.dirname(os.path.abspath(__file__))
        top = os.path.dirname(os.path.dirname(here))
        return os.path.join(here, 'tests'), top

    def register_opts(self, conf: cfg.ConfigOpts) -> None:
        for group, options in _GROUPS:
            config.register_opt_group(conf, group, options)

    def get_opt_lists(self) -> list[tuple[str, list[cfg.Opt]]]:
        return [(group.name, options) for group, options in _GROUPS]

    def get_service_clients(self) -> list[dict[str, Any]]:
        params = config.service_client_config('iotguard')
        params.update(
            name='iotguard_v1', service_version='iotguard.v1',
            module_path='iotguard.tempest_plugin.services.v1.iotguard_client',
            client_names=['IotguardClient'])
        return [params]
