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

"""/v1/tiers: read by every project, changed by the admin."""

import dataclasses
from typing import Any
import urllib.parse

import webob

from iotguard.api.handlers import common
from iotguard.api import schemas
from iotguard.api.schemas import common as common_schema
from iotguard.api import util
from iotguard.db import tiers
from iotguard import exception
from iotguard.policy import base

DEFAULTS = {'description': '', 'min_iops': 0.0, 'min_bytes_sec': 0.0,
            'max_iops': 0.0, 'max_bytes_sec': 0.0, 'weight': 1.0,
            'is_public': True, **dict.fromkeys(base.PER_GB, 0.0),
            **dict.fromkeys(base.BURST, 0.0), 'latency_p99_ms': 0.0}


def view(tier: tiers.Tier, show_projects: bool) -> dict[str, Any]:
    shown = dataclasses.asdict(tier)
    if not show_projects:
        del shown['projects']
    return shown


def _check(values: dict[str, Any]) -> None:
    """The numbers must make a Tier (floors below ceilings ...)."""
    try:
        base.Tier(**{f: values[f] for f in tiers.FIELDS if f not in (
            'description', 'is_public')})
    except ValueError as exc:
        raise exception.Invalid(reason=str(exc))
    values.update({f: float(values[f]) for f in tiers.FIELDS
                   if f.startswith(('min_', 'max_', 'burst_', 'latency_'))
                   or f == 'weight'})


def _synced(st: common.State) -> str:
    """Nova's flavors and Cinder's volume types in step with the tiers."""
    return st.nova.sync_tiers(st.db.tier_list())


def _name(name: str) -> str:
    util.validate(name, common_schema.NAME, 'tier name')
    return name


def list_tiers(req: webob.Request) -> webob.Response:
    common.authorize(req, 'iotguard:tier:list')
    project_id = common.visible_project(req, 'iotguard:tier:all_projects')
    return util.json_response({'tiers': [
        view(t, project_id is None)
        for t in common.state(req).db.tier_list(project_id)]})


def show_tier(req: webob.Request, name: str) -> webob.Response:
    common.authorize(req, 'iotguard:tier:show')
    project_id = common.visible_project(req, 'iotguard:tier:all_projects')
    tier = common.state(req).db.tier_get(_name(name), project_id)
    return util.json_response({'tier': view(tier, project_id is None)})


def create_tier(req: webob.Request) -> webob.Response:
    common.authorize(req, 'iotguard:tier:create')
    st = common.state(req)
    body = util.read_json(req, schemas.TIER_CREATE,
                          st.conf.api.max_request_body_bytes)
    projects = body.pop('projects', [])
    values = dict(DEFAULTS, **body)
    _check(values)
    tier = st.db.tier_create(values, projects)
    response = util.json_response({'tier': view(tier, True),
                                   'cloud_sync': _synced(st)}, status=201)
    response.location = '%s/v1/tiers/%s' % (
        req.application_url, urllib.parse.quote(tier.name, safe=''))
    return response


def update_tier(req: webob.Request, name: str) -> webob.Response:
    common.authorize(req, 'iotguard:tier:update')
    st = common.state(req)
    current = st.db.tier_get(_name(name))
    body = util.read_json(req, schemas.TIER_UPDATE,
                          st.conf.api.max_request_body_bytes)
    projects = body.pop('projects', None)
    values = {f: getattr(current, f) for f in tiers.FIELDS}
    values.update(body)
    _check(values)
    values.pop('name')
    tier = st.db.tier_update(name, values, projects)
    return util.json_response({'tier': view(tier, True),
                               'cloud_sync': _synced(st)})


def delete_tier(req: webob.Request, name: str) -> webob.Response:
    common.authorize(req, 'iotguard:tier:delete')
    st = common.state(req)
    st.db.tier_delete(_name(name))
    _synced(st)    # a failure is logged: the answer has no body
    return util.json_response(None, status=204)
