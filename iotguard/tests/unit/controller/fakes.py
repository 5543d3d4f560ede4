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

"""Fakes for the controller's unit tests: samples, DB, agents, notifier."""

import uuid

from iotguard.controller import effects
from iotguard.db import caps as db_caps
from iotguard.db import disks as db_disks
from iotguard.policy import base
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


def tier(name='gold', **kw):
    values = {'name': name, 'description': '', 'min_iops': 0.0,
              'min_bytes_sec': 0.0, 'max_iops': 0.0, 'max_bytes_sec': 0.0,
              'weight': 1.0, 'is_public': True}
    values.update(kw)
    return values


class FakeDB:
    """The part of db.api.Connection the controller uses, in memory."""

    def __init__(self):
        self.domains = {}
        self.disks = {}       # (uuid, dev) -> view dict (without cap)
        self.caps = {}        # (uuid, dev) -> cap dict
        self.decisions = []   # dicts, id = index + 1
        self.agents = {}
        self.reports = {}
        self.fail_domains = set()
        self.renewals = []
        self.rates_written = []

    def add_domain(self, name, iops_4k=300.0, bytes_sec=3.4e6, policy=None,
                   params=None, kind='local'):
        self.domains[name] = {'id': len(self.domains) + 1, 'name': name,
                              'kind': kind, 'iops_4k': iops_4k,
                              'bytes_sec': bytes_sec, 'policy': policy,
                              'params': params or {}}
        return self.domains[name]

    def add_disk(self, domain, host='cn1', tier_=None, instance_uuid=None,
                 dev='vda', project_id='p1', volume_id=None):
        uid = instance_uuid or str(uuid.uuid4())
        self.disks[(uid, dev)] = {
            'id': len(self.disks) + 1, 'instance_uuid': uid, 'dev': dev,
            'host': host, 'volume_id': volume_id, 'project_id': project_id,
            'domain': domain, 'tier': tier_}
        return self.disks[(uid, dev)]

    # -- db.api ------------------------------------------------------------
    def domain_list(self):
        return [dict(d) for d in self.domains.values()]

    def domain_get(self, name):
        if name not in self.domains:
            from iotguard import exception
            raise exception.NotFound(what=name)
        return dict(self.domains[name])

    def domain_estimator_state(self, name):
        return self.domain_get(name).get('estimator_state')

    def domain_learned(self, name, fit, state):
        domain = self.domains[name]
        domain['estimator_state'] = state
        if fit is not None:
            domain.update({'learned_' + k: v for k, v in fit.items()})

    def domain_create(self, name, kind, iops_4k=None, bytes_sec=None,
                      policy=None, params=None):
        return self.add_domain(name, iops_4k, bytes_sec, policy, params,
                               kind)

    def disk_upsert(self, instance_uuid, dev, host, domain, project_id,
                    volume_id=None):
        self.domain_get(domain)
        disk = self.disks.get((instance_uuid, dev))
        if disk is None:
            return self.add_disk(domain, host, None, instance_uuid, dev,
                                 project_id, volume_id)
        disk.update(host=host, domain=domain, project_id=project_id,
                    volume_id=volume_id)
        return disk

    def disk_delete(self, instance_uuid, dev):
        if self.disks.pop((instance_uuid, dev), None) is None:
            from iotguard import exception
            raise exception.NotFound(what='%s/%s' % (instance_uuid, dev))
        self.caps.pop((instance_uuid, dev), None)

    def disk_list(self, instance_uuid=None, domain=None, project_id=None):
        if domain in self.fail_domains:
            raise RuntimeError('database on fire for %s' % domain)
        out = []
        for key, disk in self.disks.items():
            if domain is not None and disk['domain'] != domain:
                continue
            if instance_uuid is not None and key[0] != instance_uuid:
                continue
            view = dict(disk)
            cap = self.caps.get(key)
            view['cap'] = dict(cap) if cap else None
            out.append(view)
        return out

    def domain_disks(self, domain):
        if domain not in self.domains:
            from iotguard import exception
            raise exception.NotFound(what=domain)
        return [db_disks.Member(
            d['id'], d['instance_uuid'], d['dev'], d['host'],
            d['project_id'], d['volume_id'], d['domain'],
            d['tier'] and base.Tier(**{k: d['tier'][k] for k in (
                'name', 'min_iops', 'min_bytes_sec', 'max_iops',
                'max_bytes_sec', 'weight')}),
            'default' if d['tier'] else None)
            for d in self.disk_list(domain=domain)]

    def domains_disks(self, domains):
        self.bulk_reads = getattr(self, 'bulk_reads', 0) + 1
        return {name: self.domain_disks(name) for name in domains}

    def disks_version(self):
        return repr(sorted(self.disks.items()))

    def domains_caps(self, domains):
        self.caps_reads = getattr(self, 'caps_reads', 0) + 1
        out = {}
        for d in self.disk_list():
            cap = d['cap']
            if d['domain'] in domains and cap is not None:
                decision_id = cap['decision_id']
                set_at = (self.decisions[decision_id - 1]['created_at']
                          if decision_id else None)
                out[d['id']] = db_caps.InForce(
                    cap['limits'],
                    effects.to_timestamp(cap['lease_expires_at']),
                    decision_id, set_at and effects.to_timestamp(set_at))
        return out

    def decision_create(self, domain, policy, instance_uuid, dev,
                        project_id, action, old_limits, new_limits, reason,
                        numbers, created_at=None):
        self.decisions.append({
            'id': len(self.decisions) + 1, 'domain': domain,
            'policy': policy, 'instance_uuid': instance_uuid, 'dev': dev,
            'project_id': project_id, 'action': action,
            'old_limits': old_limits, 'new_limits': new_limits,
            'reason': reason, 'numbers': numbers, 'created_at': created_at})
        return len(self.decisions)

    def decisions_create(self, rows):
        return [self.decision_create(**row) for row in rows]

    def caps_set(self, caps):
        for cap in caps:
            self.cap_set(cap['instance_uuid'], cap['dev'], cap['limits'],
                         cap['lease_expires_at'], cap['decision_id'])
        return len(caps)

    def caps_release(self, disks):
        return sum(self.cap_release(u, d) for u, d in disks)

    def cap_set(self, instance_uuid, dev, limits, lease_expires_at,
                decision_id=None):
        self.caps[(instance_uuid, dev)] = {
            'limits': limits, 'lease_expires_at': lease_expires_at,
            'decision_id': decision_id, 'reason': None}

    def cap_release(self, instance_uuid, dev):
        return self.caps.pop((instance_uuid, dev), None) is not None

    def cap_delete_expired(self, now):
        gone = [k for k, c in self.caps.items()
                if c['lease_expires_at'] < now]
        for key in gone:
            del self.caps[key]
        return len(gone)

    def caps_renew(self, disk_ids, lease_expires_at):
        self.renewals.append(sorted(disk_ids))
        n = 0
        for key, disk in self.disks.items():
            if disk['id'] in disk_ids and key in self.caps:
                self.caps[key]['lease_expires_at'] = lease_expires_at
                n += 1
        return n

    def disk_rates_bulk_update(self, rates):
        self.rates_written.append(list(rates))
        return len(rates)

    def agent_heartbeat(self, host, driver, now=None, **report):
        self.agents[host] = (driver, now)
        self.reports[host] = report


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


class ScriptedPolicy:
    """A policy that answers what the test tells it, and records."""

    name = 'scripted'

    def __init__(self, **params):
        self.params = params
        self.answer = []
        self.seen = []

    def decide(self, snapshot, now):
        self.seen.append((snapshot, now))
        return list(self.answer)
