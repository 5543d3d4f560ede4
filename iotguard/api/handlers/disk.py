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

"""How the API shows one disk (instance and domain views share it)."""

import datetime
import hashlib
import math
from typing import Any

from oslo_config import cfg
from oslo_log import log
from oslo_utils import timeutils

from iotguard.policy import base
from iotguard.policy import costmodel
from iotguard.wire import rates as rates_mod

LOG = log.getLogger(__name__)


def domain_id(project_id: str, domain: str) -> str:
    """The domain as a project sees it: opaque, the same for its disks.

    As Nova's ``hostId``: sha224 of the project and the domain's name, so
    a project can tell whether two of its disks share a domain without
    learning the host or the storage back end (another project gets
    other ids for the same domain).
    """
    return hashlib.sha224((project_id + domain).encode()).hexdigest()


def placed(item: dict[str, Any], topology: bool,
           project_id: str | None = None) -> dict[str, Any]:
    """``item`` (a disk, a decision) with its ``domain_id`` added.

    ``project_id``: the project it is shown to, if ``item`` has none.

    Its ``host`` and ``domain`` are dropped unless ``topology``: the
    caller passes ``iotguard:disk:topology`` (the admin by default).
    """
    item['domain_id'] = domain_id(project_id or item['project_id'],
                                  item['domain'])
    if not topology:
        item.pop('host', None)
        item.pop('domain')
    return item


def bursts(db: Any, disks: list[dict[str, Any]]
           ) -> dict[str, list[float]]:
    """``[credits, seconds used]`` of the disks whose tier bursts.

    By disk id (``instance_uuid/dev``), from their domains' policy state
    (:meth:`iotguard.policy.guarantee.Memory.to_dict`: none there, none
    earned yet).
    """
    out: dict[str, list[float]] = {}
    for name in {d['domain'] for d in disks
                 if d['tier'] and d['tier'].burst_factor}:
        burst = (db.domain_policy_state(name) or {}).get('burst')
        if isinstance(burst, dict):
            out.update(burst)
    return out


def view(disk: dict[str, Any], topology: bool = True,
         credits: dict[str, list[float]] | None = None) -> dict[str, Any]:
    """One disk, placed (:func:`placed`) as ``topology`` says.

    ``credits``: :func:`bursts` (the disk's burst is shown when its tier
    has one).
    """
    tier = disk['tier']
    burst = None
    if tier and tier.burst_factor:
        held, used = (credits or {}).get(
            '%s/%s' % (disk['instance_uuid'], disk['dev']), (0.0, 0.0))
        burst = {'credits_s': float(held), 'used_s': float(used)}
    rates = None
    if disk['sampled_at'] is not None:
        rates = {k: disk[k] for k in rates_mod.DISK_FIELDS}
        rates['sampled_at'] = disk['sampled_at']
    return placed({
        'instance_uuid': disk['instance_uuid'], 'dev': disk['dev'],
        'host': disk['host'], 'domain': disk['domain'],
        'volume_id': disk['volume_id'], 'project_id': disk['project_id'],
        'tier': tier.name if tier else None,
        'tier_source': disk['tier_source'],
        'tier_refused': disk.get('tier_refused'),
        'size_gib': disk.get('size_gib'),
        'size_refused': disk.get('size_refused'),
        'floor': {'min_iops': tier.min_iops if tier else 0.0,
                  'min_bytes_sec': tier.min_bytes_sec if tier else 0.0},
        'ceiling': {'max_iops': tier.max_iops if tier else 0.0,
                    'max_bytes_sec': (tier.max_bytes_sec
                                      if tier else 0.0)},
        'burst': burst,
        'rates': rates,
        'cap': disk['cap'],
    }, topology)


def load(disks: list[dict[str, Any]], profile: base.Profile,
         conf: cfg.ConfigOpts) -> float | None:
    """The domain's load at its disks' latest rates that are not stale.

    :func:`iotguard.policy.costmodel.domain_load` of the rates written
    within ``[controller] rates_write_interval`` plus
    :data:`iotguard.wire.rates.STALE_INTERVALS` decision intervals (the
    controller stops writing stale rates; a gone disk's last ones stay).
    None (logged) if it is not finite (rates stored above
    :data:`iotguard.wire.caps.MAX_RATE`).
    """
    since = timeutils.utcnow() - datetime.timedelta(
        seconds=conf.controller.rates_write_interval
        + rates_mod.STALE_INTERVALS * conf.controller.decision_interval)
    iops = bytes_sec = 0.0
    for disk in disks:
        if disk['sampled_at'] is None or disk['sampled_at'] < since:
            continue
        iops += (disk['read_iops'] or 0.0) + (disk['write_iops'] or 0.0)
        bytes_sec += ((disk['read_bytes_sec'] or 0.0)
                      + (disk['write_bytes_sec'] or 0.0))
    total = costmodel.domain_load(iops, bytes_sec, profile)
    if not math.isfinite(total):
        LOG.warning('The load of domain %s overflows at its stored rates; '
                    'shown as unknown until the controller writes new ones',
                    disks[0]['domain'])
        return None
    return total
