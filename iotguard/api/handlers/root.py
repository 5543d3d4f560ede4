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

"""What anyone may read: versions at ``/``, OpenAPI at ``/openapi.json``."""

from typing import Any

import webob

from iotguard.api import openapi
from iotguard.api import util

VERSION = {'id': 'v1', 'status': 'CURRENT', 'min_version': '1.0',
           'max_version': '1.0'}


def _version(req: webob.Request) -> dict[str, Any]:
    return dict(VERSION, links=[{'rel': 'self',
                                 'href': req.application_url + '/v1'}])


def list_versions(req: webob.Request) -> webob.Response:
    return util.json_response({'versions': [_version(req)]})


def show_version(req: webob.Request) -> webob.Response:
    return util.json_response({'version': _version(req)})


def show_openapi(req: webob.Request) -> webob.Response:
    return util.json_response(openapi.document(req.application_url))
