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

"""All of iotguard's options, registered on a ConfigOpts passed in.

There is no global ``CONF``: :func:`iotguard.service.prepare_service`
builds a fresh ``ConfigOpts`` and every constructor takes it.
"""

from oslo_config import cfg

from iotguard.conf import database
from iotguard.conf import opts


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Register every iotguard option group on ``conf``."""
    for group, options in opts.list_opts():
        conf.register_opts(options, group=group)
    database.register_opts(conf)
