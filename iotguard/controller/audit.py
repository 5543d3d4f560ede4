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

"""The record step: the audit trail and the notifications of a decision.

Every cap and release a policy decides is one row of the ``decisions``
table (who: domain, policy, disk, project; why: the policy's reason; the
numbers it saw and computed; the limits before and after), written before
anything is sent; once sent, the caps in force are written and the
notifications sent. One transaction per step and domain round, not per
disk. A violated guarantee
(a disk below its floor with unmet demand) is notified when it starts.
"""

from collections.abc import Iterable
from collections.abc import Mapping
import datetime
from typing import Any

from oslo_log import log as logging

from iotguard.controller import notifications
from iotguard.db import api as db_api
from iotguard.db import disks
from iotguard.engine import plan
from iotguard.policy import base
from iotguard.wire import caps

LOG = logging.getLogger(__name__)

#: A decision sent: ``(disk, decision, decision id, old limits)``.
Record = tuple[disks.Member, base.Decision, int, Mapping[str, int]]


def to_datetime(timestamp: float) -> datetime.datetime:
    """UNIX seconds -> the naive UTC datetime the DB columns hold."""
    return datetime.datetime.fromtimestamp(
        timestamp, datetime.timezone.utc).replace(tzinfo=None)


def to_timestamp(value: datetime.datetime) -> float:
    """A naive UTC datetime from the DB -> UNIX seconds."""
    return value.replace(tzinfo=datetime.timezone.utc).timestamp()


class Audit:
    """Writes decisions and caps to the DB and sends the notifications."""

    def __init__(self, db: db_api.Connection,
                 notifier: notifications.Notifier) -> None:
        self.db = db
        self.notifier = notifier

    def decisions(self, domain: str, policy: str,
                  entries: Iterable[tuple[disks.Member, plan.Change,
                                          Mapping[str, int]]],
                  now: float) -> list[int]:
        """Append the plan's ``[(disk, change, old_limits)]`` to the trail.

        One transaction for the round; returns the ids, in order.
        """
        rows = []
        for disk, change, old_limits in entries:
            decision = change.decision
            rows.append({
                'domain': domain, 'policy': policy,
                'instance_uuid': disk.instance_uuid, 'dev': disk.dev,
                'project_id': disk.project_id, 'action': decision.action,
                'old_limits': old_limits,
                'new_limits': change.limits or {},
                'reason': decision.reason, 'numbers': decision.numbers,
                'created_at': to_datetime(now)})
        return self.db.decisions_create(rows)

    def _payload(self, domain: str, policy: str, record: Record
                 ) -> dict[str, Any]:
        disk, decision, decision_id, old_limits = record
        return {'domain': domain, 'policy': policy,
                'instance_uuid': disk.instance_uuid, 'dev': disk.dev,
                'host': disk.host, 'project_id': disk.project_id,
                'decision_id': decision_id, 'reason': decision.reason,
                'old_limits': old_limits, 'numbers': decision.numbers}

    def caps_applied(self, domain: str, policy: str,
                     sent: list[tuple[caps.Cap, Record]]) -> None:
        """Caps were sent: write them as in force (one transaction), notify."""
        self.db.caps_set([{
            'instance_uuid': cap.instance_uuid, 'dev': cap.dev,
            'limits': cap.limits, 'decision_id': decision_id,
            'lease_expires_at': to_datetime(cap.lease_expires_at)}
            for cap, (_d, _dec, decision_id, _old) in sent])
        for cap, record in sent:
            payload = self._payload(domain, policy, record)
            payload.update(limits=dict(cap.limits),
                           lease_expires_at=cap.lease_expires_at)
            self.notifier.cap_apply(payload)

    def caps_released(self, domain: str, policy: str,
                      sent: list[Record]) -> None:
        """Releases were sent: forget those caps, notify."""
        self.db.caps_release([(disk.instance_uuid, disk.dev)
                              for disk, _d, _i, _o in sent])
        for record in sent:
            self.notifier.cap_release(self._payload(domain, policy, record))

    def overcommitted(self, domain: str, numbers: dict[str, Any]) -> None:
        """Floors admitted exceed what the storage was learned to serve."""
        LOG.warning('Domain %s is overcommitted: its floors cost %.3f of '
                    'the learned capacity (max_commit_ratio %.2f; %.3f with '
                    'the profile in use, confidence %.2f); nothing is '
                    'changed, the admin decides', domain,
                    numbers['committed_learned'],
                    numbers['max_commit_ratio'], numbers['committed'] or 0.0,
                    numbers['confidence'])
        self.notifier.domain_overcommitted(dict(numbers, domain=domain))

    def overcommit_cleared(self, domain: str,
                           numbers: dict[str, Any]) -> None:
        """A domain overcommitted before no longer is."""
        LOG.info('Domain %s is no longer overcommitted: its floors cost '
                 '%.3f of the learned capacity', domain,
                 numbers['committed_learned'])
        self.notifier.domain_overcommit_cleared(dict(numbers, domain=domain))

    def violation(self, domain: str, disk: disks.Member,
                  numbers: dict[str, float], now: float) -> None:
        """A disk's guarantee is not met; tell the operators."""
        LOG.warning('Guarantee violated on %s/%s in domain %s: %s',
                    disk.instance_uuid, disk.dev, domain, numbers)
        self.notifier.guarantee_violation({
            'domain': domain, 'instance_uuid': disk.instance_uuid,
            'dev': disk.dev, 'host': disk.host,
            'project_id': disk.project_id,
            'tier': disk.tier.name if disk.tier else None,
            'since': now, 'numbers': numbers})
