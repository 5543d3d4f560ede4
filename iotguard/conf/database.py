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

"""The [database] group: oslo.db's own options, with iotguard's default.

The options themselves belong to oslo.db (namespace oslo.db in the
config generator); iotguard only sets the default connection, an embedded
SQLite file, so an all-in-one needs no database server, and iotguard-api's
default ``max_retries`` (:func:`set_api_defaults`).
"""

from oslo_config import cfg
from oslo_db import options

GROUP = 'database'

DEFAULT_CONNECTION = 'sqlite:////var/lib/iotguard/iotguard.sqlite'

#: iotguard-api's ``[database] max_retries``: no connection attempts when
#: its engine starts. The API starts its engine inside the first request
#: that needs the database; oslo.db's 10 attempts 10 s apart would hold
#: that request for 100 s before its 503, and, the engine not being
#: started, every following one as long as the database stays away.
API_MAX_RETRIES = 0


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Register oslo.db's options on ``conf`` with iotguard's defaults."""
    options.set_defaults(conf, connection=DEFAULT_CONNECTION)


def set_api_defaults(conf: cfg.ConfigOpts) -> None:
    """iotguard-api's defaults; a value in its configuration still wins."""
    conf.set_default('max_retries', API_MAX_RETRIES, group=GROUP)
