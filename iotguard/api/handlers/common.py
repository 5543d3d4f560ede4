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

"""What every handler needs: its state, the caller and authorisation."""

import dataclasses
import typing

from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_policy import policy
import webob

from iotguard.api import nova
from iotguard.db import api as db_api
from iotguard import exception


@dataclasses.dataclass
class State:
    """The application's collaborators, handed to every handler."""

    conf: cfg.ConfigOpts
    db: db_api.Connection
    enforcer: policy.Enforcer
    nova: nova.Metadata


def state(req: webob.Request) -> State:
    return typing.cast(State, req.environ['iotguard.state'])


def context(req: webob.Request) -> oslo_context.RequestContext:
    return typing.cast(oslo_context.RequestContext,
                       req.environ['iotguard.context'])


def allowed(req: webob.Request, rule: str,
            project_id: str | None = None) -> bool:
    """Whether the caller passes ``rule`` on ``project_id`` (or its own).

    A token of the wrong scope does not (some oslo.policy versions raise
    InvalidScope for it even when asked not to raise).
    """
    ctx = context(req)
    try:
        return state(req).enforcer.authorize(
            rule, {'project_id': project_id or ctx.project_id}, ctx)
    except policy.InvalidScope:
        return False


def authorize(req: webob.Request, rule: str,
              project_id: str | None = None) -> None:
    """Forbidden (403) unless the caller passes ``rule``."""
    if not allowed(req, rule, project_id):
        raise exception.Forbidden(action=rule)


def topology(req: webob.Request) -> bool:
    """Whether the caller may see disks' hosts and domains' real names."""
    return allowed(req, 'iotguard:disk:topology')


def visible_project(req: webob.Request, all_projects: str) -> str | None:
    """None (every project) if the caller passes ``all_projects``."""
    if allowed(req, all_projects):
        return None
    return context(req).project_id
