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

"""Hypervisor drivers, found by ``[agent] virt_driver`` through the
``iotguard.agent.virt_drivers`` entry points (``libvirt``, ``simulated``)
with stevedore.
"""

from collections.abc import Callable

from oslo_config import cfg
from stevedore import driver as sd_driver
from stevedore import exception
from stevedore import extension

from iotguard.agent.virt import base

GROUP = 'iotguard.agent.virt_drivers'


def load(name: str, conf: cfg.ConfigOpts) -> base.Driver:
    """Build the driver called ``name`` (no I/O until its ``start()``)."""
    factory: Callable[[cfg.ConfigOpts], base.Driver]
    try:
        factory = sd_driver.DriverManager(GROUP, name).driver
    except exception.NoMatches:
        known = sorted(extension.ExtensionManager(GROUP).names())
        raise ValueError('unknown virt driver %r; known: %s' % (
            name, ', '.join(known)))
    return factory(conf)
