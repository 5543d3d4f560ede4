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

"""The request context: oslo.context's, built per request, no thread-locals."""

from typing import Any

from oslo_context import context


class RequestContext(context.RequestContext):
    """Who is asking: user, project, roles (from keystone or noauth)."""


def from_environ(environ: dict[str, Any]) -> RequestContext:
    """The context of a WSGI request (after auth_token or noauth)."""
    return RequestContext.from_environ(environ)
