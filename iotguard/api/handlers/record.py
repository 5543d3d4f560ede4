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

"""/v1/instances/{uuid}/disks/{dev}/record: a disk's record, for its tenant.

Only the disk's own numbers: no host, domain or other disk.
"""

import dataclasses
import datetime
from typing import Any

from oslo_utils import timeutils
import webob

from iotguard.api.handlers import common
from iotguard.api import schemas
from iotguard.api.schemas import common as common_schema
from iotguard.api import util
from iotguard.db import records
from iotguard import exception

#: The window shown when the query names none.
DEFAULT_WINDOW = datetime.timedelta(hours=1)


def _ratio(kept: float, due: float) -> float | None:
    return kept / due if due else None


def _minute(m: records.Minute) -> dict[str, Any]:
    view = dataclasses.asdict(m)
    del view['disk_id']
    view['floor_kept_ratio'] = _ratio(m.floor_kept_s, m.floor_due_s)
    return view


def show_record(req: webob.Request, uuid: str, dev: str) -> webob.Response:
    common.authorize(req, 'iotguard:instance:show')
    uuid = util.check_uuid(uuid)
    util.validate(dev, common_schema.NAME, 'dev')
    st = common.state(req)
    query = util.read_query(req, schemas.RECORD_QUERY)
    until = (util.utc_time(query['until'], 'until') if 'until' in query
             else timeutils.utcnow())
    since = (util.utc_time(query['since'], 'since') if 'since' in query
             else until - DEFAULT_WINDOW)
    keep = datetime.timedelta(hours=st.conf.controller.record_retention)
    if not since < until <= since + keep:
        raise exception.Invalid(
            reason='since must be before until, at most %d hours before '
                   '(the record is kept that long)'
                   % st.conf.controller.record_retention)
    minutes = st.db.disk_minutes(uuid, dev, since, until, project_id=(
        common.visible_project(req, 'iotguard:instance:all_projects')))
    due = sum(m.floor_due_s for m in minutes)
    return util.json_response({'record': {
        'instance_uuid': uuid, 'dev': dev, 'since': since, 'until': until,
        'floor_due_s': due,
        'floor_kept_ratio': _ratio(sum(m.floor_kept_s for m in minutes),
                                   due),
        'capped_s': sum(m.capped_s for m in minutes),
        'minutes': [_minute(m) for m in minutes]}})
