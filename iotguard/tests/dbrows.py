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

"""One row at a time, for the tests' fixtures.

The service writes caps, decisions and rates in batches
(:meth:`~iotguard.db.api.Connection.caps_set`, ``decisions_create``,
``disk_rates_bulk_update``); tests that set one row up call these, which
go through the same batched calls.
"""

from iotguard.db import records
from iotguard import exception


def cap_set(db, instance_uuid, dev, limits, lease_expires_at,
            decision_id=None):
    """Record the cap in force on one disk."""
    db.caps_set([{'instance_uuid': instance_uuid, 'dev': dev,
                  'limits': limits, 'lease_expires_at': lease_expires_at,
                  'decision_id': decision_id}])


def decision_create(db, domain, policy, instance_uuid, dev, project_id,
                    action, old_limits, new_limits, reason, numbers,
                    created_at=None):
    """Append one decision to the audit trail; its id."""
    return db.decisions_create([{
        'domain': domain, 'policy': policy, 'instance_uuid': instance_uuid,
        'dev': dev, 'project_id': project_id, 'action': action,
        'old_limits': old_limits, 'new_limits': new_limits,
        'reason': reason, 'numbers': numbers, 'created_at': created_at}])[0]


def disk_update_rates(db, instance_uuid, dev, sampled_at, **rates):
    """Store one disk's rates (the fields not given are NULL)."""
    found = [d for d in db.disk_list(instance_uuid=instance_uuid)
             if d['dev'] == dev]
    if not found:
        raise exception.NotFound(what='disk %s of instance %s'
                                 % (dev, instance_uuid))
    db.disk_rates_bulk_update([dict(rates, id=found[0]['id'],
                                    sampled_at=sampled_at)])


def minute(db, instance_uuid, dev, minute, seconds=60.0, floor_due_s=60.0,
           floor_kept_s=60.0, capped_s=0.0, iops=0.0, bytes_sec=0.0,
           cap_reason=None, **limits):
    """One minute of one disk's record (``limits``: its floor, cap)."""
    found = [d for d in db.disk_list(instance_uuid=instance_uuid)
             if d['dev'] == dev]
    if not found:
        raise exception.NotFound(what='disk %s of instance %s'
                                 % (dev, instance_uuid))
    return records.Minute(found[0]['id'], minute, seconds, floor_due_s,
                          floor_kept_s, capped_s, iops, bytes_sec,
                          cap_reason, **limits)


def minute_add(db, *args, **kwargs):
    """Store one :func:`minute`."""
    db.disk_minutes_add([minute(db, *args, **kwargs)])
