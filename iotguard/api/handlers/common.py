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
from oslo_policy import policy
import webob

from iotguard.api import rbac
from iotguard import context as iotguard_context
from iotguard.db import api as db_api

#: ``set_nova_tier(context, instance_uuid, tier) -> str`` (outcome).
SetTier = typing.Callable[[iotguard_context.RequestContext, str, str], str]
#: ``unset_nova_tier(context, instance_uuid) -> str`` (outcome).
UnsetTier = typing.Callable[[iotguard_context.RequestContext, str], str]


@dataclasses.dataclass
class State:
    """The application's collaborators, handed to every handler."""

    conf: cfg.ConfigOpts
    db: db_api.Connection
    enforcer: policy.Enforcer
    set_nova_tier: SetTier
    unset_nova_tier: UnsetTier


def state(req: webob.Request) -> State:
    return typing.cast(State, req.environ['iotguard.state'])


def context(req: webob.Request) -> iotguard_context.RequestContext:
    return typing.cast(iotguard_context.RequestContext,
                       req.environ['iotguard.context'])


def authorize(req: webob.Request, rule: str,
              project_id: str | None = None) -> None:
    """Raise Forbidden unless the caller may ``rule`` on ``project_id``.

    ``project_id`` defaults to the caller's own project.
    """
    ctx = context(req)
    rbac.authorize(state(req).enforcer, ctx, rule,
                   {'project_id': project_id or ctx.project_id})


def allowed(req: webob.Request, rule: str) -> bool:
    """Whether the caller passes ``rule`` (for the :all_projects rules)."""
    ctx = context(req)
    return rbac.authorize(state(req).enforcer, ctx, rule,
                          {'project_id': ctx.project_id}, do_raise=False)
