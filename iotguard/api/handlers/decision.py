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

"""/v1/decisions: the audit trail, newest first, paginated; one by id."""

from typing import Any
import urllib.parse

import webob

from iotguard.api.handlers import common
from iotguard.api.handlers import disk
from iotguard.api.handlers import domain as domain_handler
from iotguard.api import schemas
from iotguard.api.schemas import common as common_schema
from iotguard.api import util
from iotguard import exception

DEFAULT_LIMIT = 100


def list_decisions(req: webob.Request) -> webob.Response:
    common.authorize(req, 'iotguard:decision:list')
    st = common.state(req)
    query = util.read_query(req, schemas.DECISION_QUERY)
    limit = min(int(query.get('limit', DEFAULT_LIMIT)),
                st.conf.api.max_limit)
    if limit < 1:
        raise exception.Invalid(reason='limit must be at least 1')
    domain = query.get('domain')
    if domain is not None:
        domain = domain_handler.resolve(req, domain)
        if domain is None:
            return util.json_response({'decisions': []})
    decisions = st.db.decision_list(
        limit, marker=int(query['marker']) if 'marker' in query else None,
        instance_uuid=(query['instance'].lower()
                       if 'instance' in query else None),
        domain=domain,
        since=(util.utc_time(query['since'], 'since') if 'since' in query
               else None),
        project_id=common.visible_project(
            req, 'iotguard:decision:all_projects'))
    topology = common.topology(req)
    body: dict[str, Any] = {'decisions': [disk.placed(d, topology)
                                          for d in decisions]}
    if len(decisions) == limit:
        following = dict(query, marker=str(decisions[-1]['id']))
        body['links'] = [{'rel': 'next', 'href': '%s?%s' % (
            req.path_url, urllib.parse.urlencode(sorted(following.items())))}]
    return util.json_response(body)


def show_decision(req: webob.Request, decision_id: str) -> webob.Response:
    common.authorize(req, 'iotguard:decision:show')
    util.validate(decision_id, common_schema.QUERY_INT, 'decision id')
    decision = common.state(req).db.decision_get(
        int(decision_id), project_id=common.visible_project(
            req, 'iotguard:decision:all_projects'))
    return util.json_response({'decision': disk.placed(
        decision, common.topology(req))})
