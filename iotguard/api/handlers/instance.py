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

"""/v1/instances: a project's disks, and its tier choice."""

import functools
import itertools
from typing import Any

from oslo_log import log
from oslo_utils import strutils
import webob

from iotguard.api.handlers import common
from iotguard.api.handlers import disk
from iotguard.api import limits
from iotguard.api import schemas
from iotguard.api import util
from iotguard import exception
from iotguard.policy import admission

LOG = log.getLogger(__name__)


def _owner_filter(req: webob.Request) -> str | None:
    return common.visible_project(req, 'iotguard:instance:all_projects')


def _view(req: webob.Request, uuid: str,
          disks: list[dict[str, Any]]) -> dict[str, Any]:
    """An instance: its project and its disks (sorted by dev)."""
    topology = common.topology(req)
    credits = disk.bursts(common.state(req).db, disks)
    return {'uuid': uuid, 'project_id': disks[0]['project_id'],
            'disks': [disk.view(d, topology, credits) for d in disks]}


def _listed_project(req: webob.Request, query: dict[str, str]) -> str | None:
    """The project whose instances GET /v1/instances lists (None: all).

    The caller's own, unless ``all_projects`` or ``project_id`` asks for
    more, which needs ``iotguard:instance:all_projects``.
    """
    everyone = strutils.bool_from_string(query.get('all_projects', 'false'),
                                         strict=True)
    own = common.context(req).project_id
    wanted = query.get('project_id', None if everyone else own)
    if wanted != own:
        common.authorize(req, 'iotguard:instance:all_projects')
    return wanted


def list_instances(req: webob.Request) -> webob.Response:
    common.authorize(req, 'iotguard:instance:list')
    query = util.read_query(req, schemas.INSTANCE_QUERY)
    disks = common.state(req).db.disk_list(
        project_id=_listed_project(req, query))
    return util.json_response({'instances': [
        _view(req, uuid, list(group)) for uuid, group in itertools.groupby(
            disks, key=lambda d: d['instance_uuid'])]})


def show_instance(req: webob.Request, uuid: str) -> webob.Response:
    uuid = util.check_uuid(uuid)
    disks = common.state(req).db.disk_list(instance_uuid=uuid,
                                           project_id=_owner_filter(req))
    if not disks:
        raise exception.NotFound(what='instance %s' % uuid)
    common.authorize(req, 'iotguard:instance:show', disks[0]['project_id'])
    return util.json_response({'instance': _view(req, uuid, disks)})


def set_instance_tier(req: webob.Request, uuid: str) -> webob.Response:
    uuid = util.check_uuid(uuid)
    common.authorize(req, 'iotguard:instance:tier:update')
    st = common.state(req)
    body = util.read_json(req, schemas.SET_TIER,
                          st.conf.api.max_request_body_bytes)
    admit = functools.partial(
        admission.check, max_ratio=st.conf.admission.max_commit_ratio)
    # The numbers behind a verdict add up every project's floors in the
    # domain: an admin's to see, not a member's.
    numbers = common.allowed(req, 'iotguard:domain:all_projects')
    topology = common.topology(req)
    limit = (limits.enforcer(st.conf) if st.conf.admission.unified_limits
             else None)
    try:
        result = st.db.instance_tier_set(uuid, body['tier'], admit,
                                         project_id=_owner_filter(req),
                                         limit=limit)
    except exception.AdmissionRejected as exc:
        if numbers:
            raise
        reason = exc.for_member()
        if not topology:
            # The refusal names the domain as the member sees it.
            domain = exc.kwargs['domain']
            reason = reason.replace(domain, disk.domain_id(
                common.context(req).project_id or '', domain))
        raise exception.Conflict(reason=reason)
    verdicts = [disk.placed(dict(n) if numbers else {
        'domain': n['domain'], 'tier': n['tier']}, topology,
        result['project_id']) for n in result['admission']]
    nova = st.nova.set_tier(uuid, body['tier'])
    LOG.info('Instance %(uuid)s of project %(project)s now has tier '
             '%(tier)s (Nova metadata: %(nova)s)',
             {'uuid': uuid, 'project': result['project_id'],
              'tier': body['tier'], 'nova': nova})
    return util.json_response({'instance': {
        'uuid': uuid, 'project_id': result['project_id'],
        'tier': body['tier'], 'admission': verdicts,
        'nova_metadata': nova}})


def unset_instance_tier(req: webob.Request, uuid: str) -> webob.Response:
    """Drop the API's tier choice; the disks fall back to the others."""
    uuid = util.check_uuid(uuid)
    common.authorize(req, 'iotguard:instance:tier:delete')
    st = common.state(req)
    project_id = st.db.instance_tier_unset(uuid,
                                           project_id=_owner_filter(req))
    nova = st.nova.unset_tier(uuid)
    LOG.info('Instance %(uuid)s of project %(project)s has no tier chosen '
             'through the API any more (Nova metadata: %(nova)s)',
             {'uuid': uuid, 'project': project_id, 'nova': nova})
    return util.json_response(None, status=204)
