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

"""Storage domains: their profile, policy, learned fit and merges."""

from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import math
from typing import Any

from oslo_db import exception as db_exc
import sqlalchemy as sa
from sqlalchemy import orm

from iotguard.db import models
from iotguard import exception
from iotguard.policy import admission
from iotguard.policy import estimator

#: The estimator's fit, as the ``learned_*`` columns of a domain.
LEARNED_FIELDS = tuple(f.name for f in dataclasses.fields(estimator.Fit))
#: Columns the record takes as they are.
FIELDS = ('name', 'kind', 'iops_4k', 'bytes_sec', 'form', 'profile_source',
          'policy', 'params', 'learned_at', 'created_at', 'updated_at')


def record(domain: models.Domain) -> admission.Domain:
    """A domain row as an :class:`iotguard.policy.admission.Domain`."""
    fit = None
    if domain.learned_form is not None:
        learned = {f: getattr(domain, 'learned_' + f) for f in LEARNED_FIELDS}
        learned['identified'] = tuple(filter(None, (
            domain.learned_identified or '').split(',')))
        fit = estimator.Fit(**learned)
    return admission.Domain(fit=fit, **models.row(domain, FIELDS))


def domain_row(session: orm.Session, name: str, for_update: bool = False
               ) -> models.Domain:
    query = sa.select(models.Domain).where(models.Domain.name == name)
    if for_update:
        query = query.with_for_update()
    domain = session.scalars(query).first()
    if domain is None:
        raise exception.NotFound(what='domain %s' % name)
    return domain


def create(session: orm.Session, name: str, kind: str,
           iops_4k: float | None = None, bytes_sec: float | None = None,
           policy: str | None = None, params: dict[str, Any] | None = None,
           form: str = 'additive') -> admission.Domain:
    try:
        domain = models.Domain(
            name=name, kind=kind, iops_4k=iops_4k, bytes_sec=bytes_sec,
            policy=policy, form=form, params=params or {},
            created_at=models.utcnow())
        session.add(domain)
        session.flush()
        return record(domain)
    except db_exc.DBDuplicateEntry:
        raise exception.Conflict(reason='domain %s already exists' % name)


def get(session: orm.Session, name: str) -> admission.Domain:
    return record(domain_row(session, name))


def list_(session: orm.Session) -> list[admission.Domain]:
    return [record(d) for d in session.scalars(
        sa.select(models.Domain).order_by(models.Domain.name)).all()]


def update(session: orm.Session, name: str, values: Mapping[str, Any]
           ) -> admission.Domain:
    """Change a domain's profile, policy or parameters."""
    domain = domain_row(session, name)
    for key, value in values.items():
        setattr(domain, key, value)
    domain.updated_at = models.utcnow()
    session.flush()
    return record(domain)


def learned(session: orm.Session, name: str,
            fit: estimator.Fit | None, state: dict[str, Any]) -> None:
    """Write the estimator's ``state`` and its ``fit``.

    A ``fit`` of None leaves the last one in place.
    """
    domain = domain_row(session, name)
    if fit is not None:
        for field in LEARNED_FIELDS:
            setattr(domain, 'learned_' + field, getattr(fit, field))
        domain.learned_identified = ','.join(fit.identified)
        domain.learned_at = models.utcnow()
    domain.estimator_state = state


def estimator_state(session: orm.Session, name: str
                    ) -> dict[str, Any] | None:
    """The estimator's state of a domain (a dict, None if none)."""
    return domain_row(session, name).estimator_state


def policy_state(session: orm.Session, name: str) -> dict[str, Any] | None:
    """What the domain's policy remembers (a dict, None if nothing)."""
    row = session.execute(sa.select(models.Domain.policy_state).where(
        models.Domain.name == name)).first()
    if row is None:
        raise exception.NotFound(what='domain %s' % name)
    return row[0] or None


def service_ratio(session: orm.Session, name: str) -> float | None:
    """The service time the domain's policy learned (its ``service``).

    Per device-second of cost (the ``guarantee`` policy's
    :func:`~iotguard.policy.guarantee.learn_service`); None when it has
    learned none, or another policy runs.
    """
    stored = policy_state(session, name) or {}
    # the controller's {'policy': ..., 'state': ...}, or a state alone
    state = stored.get('state', stored)
    value = state.get('service') if isinstance(state, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and (
            math.isfinite(value) and value >= 1.0):
        return float(value)
    return None


def policy_states_update(session: orm.Session,
                         states: Mapping[str, dict[str, Any]]) -> None:
    """Write what the policies of many domains remember, by name.

    One statement (an executemany) for all of them; an unknown name is
    skipped.
    """
    if not states:
        return
    table = models.Base.metadata.tables['domains']
    session.execute(
        table.update().where(table.c.name == sa.bindparam('b_name'))
        .values(policy_state=sa.bindparam('b_state')),
        [{'b_name': name, 'b_state': state}
         for name, state in states.items()])


def merge(session: orm.Session, into: str, sources: Sequence[str], kind: str
          ) -> tuple[admission.Domain, int]:
    """Move the disks of ``sources`` into ``into``; delete ``sources``.

    For storage that was several domains and is one (a Ceph cluster
    once split into Nova's pool and Cinder's). ``into`` is created
    (``kind``) when missing. It keeps its manual profile, policy and
    parameters; what it lacks it takes from the first source that has
    it. Learned fits stay with ``into`` (a source's fit saw part of
    the load only). One transaction: nothing is written when a source
    does not exist. Returns ``(domain, disks moved)``.
    """
    if into in sources or not sources or len(set(sources)) < len(
            sources):
        raise exception.Invalid(
            reason='merge distinct domains other than %s into it'
            % into)
    merged = [domain_row(session, name, for_update=True)
              for name in sources]
    try:
        target = domain_row(session, into, for_update=True)
    except exception.NotFound:
        target = models.Domain(name=into, kind=kind, params={},
                               form='additive',
                               profile_source='manual',
                               created_at=models.utcnow())
        session.add(target)
        session.flush()
    profiled = next((s for s in merged if s.iops_4k is not None
                     or s.bytes_sec is not None), None)
    if profiled and target.iops_4k is None and target.bytes_sec is None:
        target.iops_4k, target.bytes_sec, target.form = (
            profiled.iops_4k, profiled.bytes_sec, profiled.form)
    target.policy = target.policy or next(
        (s.policy for s in merged if s.policy), None)
    target.params = target.params or next(
        (s.params for s in merged if s.params), {})
    moved = models.rowcount(session, sa.update(models.Disk).where(
        models.Disk.domain_id.in_([s.id for s in merged])).values(
            domain_id=target.id, updated_at=models.utcnow())
        .execution_options(synchronize_session=False))
    for source in merged:
        session.delete(source)
    target.updated_at = models.utcnow()
    return record(target), moved
