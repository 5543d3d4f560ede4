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
SQLite file, so an all-in-one needs no database server.
"""

from oslo_db import options

GROUP = 'database'

DEFAULT_CONNECTION = 'sqlite:////var/lib/iotguard/iotguard.sqlite'


def register_opts(conf):
    """Register oslo.db's options on ``conf`` with iotguard's defaults."""
    options.set_defaults(conf, connection=DEFAULT_CONNECTION)
