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

"""Per-project limits on committed floors: Keystone unified limits.

As Nova and Glance do, through oslo.limit (``[admission]
unified_limits``): a project's usage of :data:`LOCAL` (floors on
host-local domains) and :data:`SHARED` (on any other domain) is the floor
units (:func:`iotguard.controller.placement.units`, the units the flavors
ask Placement for) of the tiers its disks have now; a tier choice through
the API that raises them is enforced against the project's limits (its own
or the registered default of iotguard's service and region) in the choice's
transaction, under the locks of the project's domains, before admission,
and refused with 409 naming the limit. A choice that raises
nothing (the same or a lower tier) is never refused.

oslo.limit reads the process' global ``cfg.CONF`` (iotguard has none of
its own): :func:`configure` has it read the files iotguard's options came
from, whose ``[oslo_limit]`` section names the endpoint and credentials.
"""

import collections
from collections.abc import Collection
from typing import Any

from keystoneauth1 import exceptions as ksa_exc
from openstack import exceptions as sdk_exc
from oslo_config import cfg
from oslo_limit import exception as limit_exc
from oslo_limit import limit
from oslo_log import log as logging

from iotguard.controller import membership
from iotguard.controller import placement
from iotguard.db import disks as disks_db
from iotguard import exception
from iotguard.policy import base

LOG = logging.getLogger(__name__)

#: What oslo.limit raises when Keystone cannot answer: away, refusing
#: iotguard's credentials, or without the endpoint and limits configured
#: (``ValueError``, oslo.limit's own for those).
_AWAY = (limit_exc.SessionInitError, ksa_exc.ClientException,
         sdk_exc.SDKException, ValueError)

LOCAL = 'iotguard_floor_units_local'
SHARED = 'iotguard_floor_units_shared'


def resource(domain: str) -> str:
    """The limited resource a floor in ``domain`` counts against."""
    return LOCAL if domain.startswith(membership.LOCAL_PREFIX) else SHARED


def configure(conf: cfg.ConfigOpts) -> None:
    """Have the global ``cfg.CONF`` read ``conf``'s configuration files."""
    def given(name: str) -> list[str]:
        return list(conf[name] or []) if name in conf else []

    cfg.CONF([], project='iotguard', default_config_files=given(
        'config_file'), default_config_dirs=given('config_dir'))


def usage(disks: Collection[dict[str, Any]],
          ref: Any) -> collections.Counter[str]:
    """Floor units of ``disks`` (as ``Connection.disk_list`` gives them)."""
    out: collections.Counter[str] = collections.Counter(
        dict.fromkeys((LOCAL, SHARED), 0))
    for disk in disks:
        if disk['tier'] is not None:
            out[resource(disk['domain'])] += placement.units(disk['tier'],
                                                             ref)
    return out


def enforcer(conf: cfg.ConfigOpts) -> disks_db.Limit:
    """The check :meth:`db_api.Connection.instance_tier_set` runs.

    It runs in the tier choice's transaction, under the locks of the
    owner's domains (the Keystone call included): two choices of one
    project at once are checked one after the other, the second against
    the floors the first committed.
    """
    ref = placement.reference(conf.placement.unit_bytes_sec)

    def enforce(instance_uuid: str, owner: str, new: base.Tier,
                disks: list[dict[str, Any]]) -> None:
        mine = [d for d in disks if d['instance_uuid'] == instance_uuid]
        chosen = usage([dict(d, tier=new.at(d['size_gib'])) for d in mine],
                       ref)
        raised = chosen - usage(mine, ref)    # keeps the positive ones
        deltas = dict(raised)
        if not deltas:
            return
        now = usage(disks, ref)

        def used(project: str | None,
                 names: Collection[str]) -> dict[str, int]:
            return {name: now[name] for name in names}

        try:
            limit.Enforcer(used, cache=False).enforce(owner, deltas)
        except limit_exc.ProjectOverLimit as exc:
            raise exception.Conflict(reason='tier %s would take project %s '
                                     'beyond its limit: %s' % (
                                         new.name, owner, '; '.join(
                                             '%s: limit %d, committed %d, '
                                             'this choice %d more' % (
                                                 o.resource_name, o.limit,
                                                 o.current_usage, o.delta)
                                             for o in
                                             exc.over_limit_info_list)))
        except _AWAY as exc:
            LOG.error('Unified limits of project %s unreadable, tier choice '
                      'refused: %s', owner, exc)
            raise exception.Unavailable(
                service='The identity service (project limits)') from exc

    return enforce
