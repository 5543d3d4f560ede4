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

"""iotguard-api: a single-threaded development server, never production.

Production runs ``iotguard.wsgi.api:application`` under uWSGI or
mod_wsgi. This serves the same application with wsgiref on
``[api] dev_server_host``:``dev_server_port``.
"""

import sys
from wsgiref import simple_server

from oslo_log import log

from iotguard.api import app

LOG = log.getLogger(__name__)


def main(argv: list[str] | None = None) -> None:
    conf = app.prepare_conf(sys.argv[1:] if argv is None else argv)
    server = simple_server.make_server(
        conf.api.dev_server_host, conf.api.dev_server_port,
        app.deploy(conf))
    LOG.warning('iotguard-api development server on http://%s:%s/ '
                '(single-threaded wsgiref: not for production)',
                conf.api.dev_server_host, conf.api.dev_server_port)
    server.serve_forever()
