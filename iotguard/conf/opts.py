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

"""The explicit list of option groups, for oslo-config-generator."""

from oslo_config import cfg

from iotguard.conf import admission
from iotguard.conf import agent
from iotguard.conf import api
from iotguard.conf import ceilometer
from iotguard.conf import controller
from iotguard.conf import coordination
from iotguard.conf import default
from iotguard.conf import gnocchi
from iotguard.conf import membership
from iotguard.conf import placement
from iotguard.conf import prometheus
from iotguard.conf import prometheus_source
from iotguard.conf import service_credentials
from iotguard.conf import tiers


_MODULES = (default, agent, controller, coordination, api, admission, tiers,
            ceilometer, gnocchi, prometheus_source, membership, placement,
            service_credentials, prometheus)


def list_opts() -> list[tuple[str | None, list[cfg.Opt]]]:
    """Return ``[(group, [options])]`` for every iotguard group."""
    return [(module.GROUP, module.OPTS) for module in _MODULES]
