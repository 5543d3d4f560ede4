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

"""Helpers of the controller's unit tests: samples, database, fakes."""

import itertools
import uuid

import fixtures

from iotguard import exception
from iotguard.tests.fixtures import database
from iotguard.wire import batch as batch_mod


def sample(instance_uuid=None, dev='vda', timestamp=1000.0, iops=10.0,
           bytes_sec=40960.0, latency_ms=1.0, gap=None, **extra):
    """A disk's sample (:class:`iotguard.wire.batch.Row`), split read/write.

    ``extra``: a rate by name, or another field of the row.
    """
    measured = None if gap else {
        'read_iops': iops / 2, 'write_iops': iops / 2,
        'read_bytes_sec': bytes_sec / 2, 'write_bytes_sec': bytes_sec / 2,
        'read_latency_ms': latency_ms, 'write_latency_ms': latency_ms}
    for name in batch_mod.RATES:
        if name in extra:
            measured = dict(measured or {}, **{name: extra.pop(name)})
    fields = dict(volume_id=None, project_id='p1', interval_s=5.0)
    fields.update(extra)
    return batch_mod.Row(instance_uuid or str(uuid.uuid4()), dev, timestamp,
                         gap=gap, rates=measured, **fields)


def batch(*rows):
    """The :class:`iotguard.wire.batch.Batch` of some rows (:func:`sample`)."""
    return batch_mod.Batch.of_rows(rows)


def wire(*rows):
    """The wire form of some rows, as an agent casts it."""
    return batch(*rows).to_wire()


def add(store, *rows, received_at=None):
    """Store some rows (:func:`sample`) at once; how many were stored."""
    return store.add_batch(batch(*rows), received_at)


tier = database.tier_values


_DISKS = itertools.count(1)


def real_db(test):
    """A :class:`iotguard.db.api.Connection` on a fresh SQLite file."""
    return test.useFixture(database.Database('sqlite', test.conf)).db


def add_domain(db, name, iops_4k=300.0, bytes_sec=3.4e6, policy=None,
               params=None, kind='local', form='additive'):
    return db.domain_create(name, kind, iops_4k, bytes_sec, policy, params,
                            form)


def add_disk(db, domain, host='cn1', tier_=None, instance_uuid=None,
             dev='vda', project_id='p1', volume_id=None):
    """A disk (its :func:`disks` view), with the tier ``tier_`` if given.

    The instances made here sort in the order they are made (as the
    database lists the disks).
    """
    uid = instance_uuid or '%08x-1111-4111-8111-111111111111' % next(_DISKS)
    db.disk_upsert(uid, dev, host, domain, project_id, volume_id=volume_id)
    if tier_ is not None:
        try:
            db.tier_create(tier_)
        except exception.Conflict:
            db.tier_update(tier_['name'], tier_)
        db.disk_tier_set(uid, dev, tier_['name'],
                         'volume_type' if volume_id else 'flavor',
                         project_id)
    return disks(db)[(uid, dev)]


def disks(db):
    """Every disk: ``{(instance_uuid, dev): view}`` (``db.disk_list``)."""
    return {(d['instance_uuid'], d['dev']): d for d in db.disk_list()}


def cap_of(db, disk):
    """The cap in force on a disk (a :func:`disks` view), or None."""
    return disks(db)[(disk['instance_uuid'], disk['dev'])]['cap']


def cap_set(db, disk, limits, lease_expires_at, decision_id=None):
    db.caps_set([{'instance_uuid': disk['instance_uuid'],
                  'dev': disk['dev'], 'limits': limits,
                  'lease_expires_at': lease_expires_at,
                  'decision_id': decision_id}])


def decisions(db):
    """The audit trail, oldest first (the first id is 1)."""
    return db.decision_list(10000)[::-1]


def spy(test, db, method):
    """A mock recording the calls of ``db.<method>``, which still runs."""
    return test.useFixture(fixtures.MockPatchObject(
        db, method, wraps=getattr(db, method))).mock


class FakeAgentAPI:
    """Records the casts; hosts in ``failing`` raise like a dead broker."""

    def __init__(self):
        self.casts = []
        self.failing = set()

    def _cast(self, method, host, items):
        if host in self.failing:
            raise RuntimeError('broker unreachable')
        self.casts.append((method, host, items))

    def apply_caps(self, ctxt, host, caps):
        self._cast('apply_caps', host, caps)

    def release_caps(self, ctxt, host, disks):
        self._cast('release_caps', host, disks)


class FakeNotifier:

    def __init__(self):
        self.sent = []

    def cap_apply(self, payload):
        self.sent.append(('iotguard.cap.apply', payload))

    def cap_release(self, payload):
        self.sent.append(('iotguard.cap.release', payload))

    def guarantee_violation(self, payload):
        self.sent.append(('iotguard.guarantee.violation', payload))

    def domain_overcommitted(self, payload):
        self.sent.append(('iotguard.domain.overcommitted', payload))

    def domain_overcommit_cleared(self, payload):
        self.sent.append(('iotguard.domain.overcommit_cleared', payload))


class Counted:
    """A policy state: how many decisions came before."""

    def __init__(self, count):
        self.count = count

    def to_dict(self):
        return {'count': self.count}


class ScriptedPolicy:
    """A policy that answers what the test tells it, and records.

    Its state (:class:`Counted`) counts its decisions; ``states`` holds
    the one each call was given.
    """

    name = 'scripted'

    def __init__(self, **params):
        self.params = params
        self.answer = []
        self.seen = []
        self.states = []

    def restore(self, data):
        return Counted(data['count']) if data else None

    def decide(self, snapshot, state, now):
        self.seen.append((snapshot, now))
        self.states.append(state and state.count)
        return list(self.answer), Counted((state and state.count or 0) + 1)
