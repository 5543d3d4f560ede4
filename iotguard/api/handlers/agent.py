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

"""/v1/agents: the agents and whether each is alive (admin).

An agent is alive while its last heartbeat is at most
:data:`iotguard.wire.rates.STALE_INTERVALS` of its own reporting intervals
old (``[agent] sample_interval`` for one that did not say): past that, the
samples it sent are stale too.
"""

import datetime
from typing import Any

from oslo_utils import strutils
from oslo_utils import timeutils
import webob

from iotguard.api.handlers import common
from iotguard.api import schemas
from iotguard.api import util
from iotguard.db import agents


def _view(agent: dict[str, Any], now: datetime.datetime,
          default_interval_s: float) -> dict[str, Any]:
    return dict(agent, alive=agents.alive(agent, now, default_interval_s))


def list_agents(req: webob.Request) -> webob.Response:
    common.authorize(req, 'iotguard:agent:list')
    st = common.state(req)
    query = util.read_query(req, schemas.AGENT_QUERY)
    now = timeutils.utcnow()
    agents = [_view(a, now, st.conf.agent.sample_interval)
              for a in st.db.agent_list(host=query.get('host'))]
    if 'alive' in query:
        alive = strutils.bool_from_string(query['alive'], strict=True)
        agents = [a for a in agents if a['alive'] == alive]
    return util.json_response({'agents': agents})
