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

"""What the API checks request bodies and query strings against.

Every query value is a string. The schemas forbid unknown properties;
:mod:`iotguard.api.openapi` publishes them as they are.
"""

from iotguard.api.schemas import common
from iotguard import policy
from iotguard.policy import admission
from iotguard.policy import base

_TIER_PROPERTIES = {
    'description': {'type': 'string', 'maxLength': 255},
    'min_iops': common.RATE,
    'min_bytes_sec': common.RATE,
    'max_iops': common.RATE,
    'max_bytes_sec': common.RATE,
    **dict.fromkeys(base.PER_GB, common.RATE),
    # 0: no burst; else above 1 with burst_seconds (base.Tier checks)
    'burst_factor': {'type': 'number', 'minimum': 0, 'maximum': 1000},
    'burst_seconds': {'type': 'number', 'minimum': 0, 'maximum': 604800},
    # 0: no objective; else the p99 in ms, at most a minute
    'latency_p99_ms': {'type': 'number', 'minimum': 0, 'maximum': 60000},
    'weight': {'type': 'number', 'exclusiveMinimum': 0, 'maximum': 1e6},
    'is_public': {'type': 'boolean'},
    'projects': {'type': 'array', 'items': common.PROJECT_ID,
                 'uniqueItems': True, 'maxItems': 1000},
}

TIER_CREATE = common.closed(dict(_TIER_PROPERTIES, name=common.NAME),
                            required=['name'])
TIER_UPDATE = common.closed(_TIER_PROPERTIES, minProperties=1)
SET_TIER = common.closed({'tier': common.NAME}, required=['tier'])
INSTANCE_QUERY = common.closed({'all_projects': common.QUERY_BOOL,
                                'project_id': common.PROJECT_ID})

_PARAM = {'type': ['number', 'string', 'boolean'], 'maxLength': 255,
          'minimum': -1e15, 'maximum': 1e15}


def _policy_params(name: str) -> dict[str, object] | None:
    """A body naming policy ``name`` gives it the parameters it declares."""
    params = policy.params_of(name)
    return None if params is None else {
        'if': {'required': ['policy'],
               'properties': {'policy': {'const': name}}},
        'then': {'properties': {'params': policy.params_schema(params)}}}


def _profile_value(key: str) -> dict[str, object]:
    low, high = admission.PROFILE_RANGES[key]
    return {'type': 'number', 'minimum': low, 'maximum': high}


DOMAIN_UPDATE = common.closed({
    'iops_4k': _profile_value('iops_4k'),
    'bytes_sec': _profile_value('bytes_sec'),
    'form': {'enum': list(base.FORMS)},
    'profile_source': {'enum': list(admission.SOURCES)},
    'policy': common.NAME,
    'params': {'type': 'object', 'maxProperties': 64,
               'propertyNames': common.NAME,
               'additionalProperties': _PARAM},
}, minProperties=1, allOf=[
    rule for rule in map(_policy_params, policy.names()) if rule])

DECISION_QUERY = common.closed({
    'instance': common.UUID,
    'domain': common.DOMAIN_NAME,
    'since': common.QUERY_TIME,
    'limit': common.QUERY_INT,
    'marker': common.QUERY_INT,
})
RECORD_QUERY = common.closed({'since': common.QUERY_TIME,
                              'until': common.QUERY_TIME})

AGENT_QUERY = common.closed({'host': common.HOST,
                             'alive': common.QUERY_BOOL})
