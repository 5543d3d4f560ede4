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

"""Every query iotguard makes, behind one object.

``Connection(conf)`` owns its own enginefacade transaction context
(configured from ``[database]``; nothing global), opens no connection until
the first query, and returns plain dicts: no session or model object leaves
the db package. Duplicates raise :class:`iotguard.exception.Conflict`,
missing rows :class:`iotguard.exception.NotFound`.

The queries are plain functions of a session, one module per aggregate
(tier choices and the admission transaction are :mod:`~iotguard.db.disks`'s);
each method of :class:`Connection` runs one in a reader or writer
transaction of its own.
"""

from collections.abc import Callable
import functools
import types
import typing
from typing import Concatenate

from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
import sqlalchemy as sa
from sqlalchemy import orm

from iotguard.db import agents
from iotguard.db import caps
from iotguard.db import decisions
from iotguard.db import disks
from iotguard.db import domains
from iotguard.db import records
from iotguard.db import tiers

#: enginefacade options that oslo.db's [database] group has but
#: configure() does not take.
_NOT_FOR_FACADE = ('backend', 'db_max_retries', 'db_inc_retry_interval',
                   'use_db_reconnect', 'db_retry_interval',
                   'db_max_retry_interval', 'mysql_enable_ndb',
                   'asyncio_connection', 'asyncio_slave_connection')

P = typing.ParamSpec('P')
R = typing.TypeVar('R')
Mode = typing.Literal['reader', 'writer']
Method = Callable[Concatenate['Connection', P], R]


def _in(mode: Mode, query: Callable[Concatenate[orm.Session, P], R]
        ) -> Method[P, R]:
    """A method running ``query(session, ...)`` in its own transaction."""
    @functools.wraps(query)
    def method(self: 'Connection', /, *args: P.args, **kwargs: P.kwargs) -> R:
        with getattr(self._tx, mode).using(types.SimpleNamespace()) as session:
            return query(session, *args, **kwargs)
    return method


def _tiered(mode: Mode, query: Callable[Concatenate[orm.Session, str | None,
                                                    P], R]) -> Method[P, R]:
    """:func:`_in`, also passing the ``[tiers] default_tier`` (first)."""
    @functools.wraps(query)
    def method(self: 'Connection', /, *args: P.args, **kwargs: P.kwargs) -> R:
        with getattr(self._tx, mode).using(types.SimpleNamespace()) as session:
            return query(session, self._default_tier, *args, **kwargs)
    return method


class Connection:
    """iotguard's database: construct it with the config, no I/O."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self._default_tier: str | None = conf.tiers.default_tier
        settings = {k: v for k, v in conf.database.items()
                    if k not in _NOT_FOR_FACADE}
        settings['sqlite_fk'] = True
        self._tx = enginefacade.transaction_context()
        self._tx.configure(**settings)

    def get_engine(self) -> sa.Engine:
        """The writer engine, for migrations."""
        return typing.cast(sa.Engine, self._tx.writer.get_engine())

    def dispose(self) -> None:
        """Close every pooled connection (tests, process shutdown)."""
        self.get_engine().dispose()

    tier_create = _in('writer', tiers.create)
    tier_get = _in('reader', tiers.get)
    tier_list = _in('reader', tiers.list_)
    tier_update = _in('writer', tiers.update)
    tier_delete = _tiered('writer', tiers.delete)

    domain_create = _in('writer', domains.create)
    domain_get = _in('reader', domains.get)
    domain_list = _in('reader', domains.list_)
    domain_update = _in('writer', domains.update)
    domain_learned = _in('writer', domains.learned)
    domain_estimator_state = _in('reader', domains.estimator_state)
    domain_policy_state = _in('reader', domains.policy_state)
    domain_policy_states_update = _in('writer', domains.policy_states_update)
    domain_merge = _in('writer', domains.merge)

    disk_upsert = _in('writer', disks.upsert)
    disk_delete = _in('writer', disks.delete)
    disk_size_set = _tiered('writer', disks.size_set)
    disk_size_refusal_set = _in('writer', disks.size_refusal_set)
    disk_sizes = _in('reader', disks.sizes)
    disk_list = _tiered('reader', disks.list_)
    disk_tier_set = _in('writer', disks.tier_set)
    instance_tier_set = _tiered('writer', disks.instance_tier_set)
    instance_tier_unset = _in('writer', disks.instance_tier_unset)
    tier_choice_unset = _in('writer', disks.tier_choice_unset)
    tier_choices_forget = _in('writer', disks.tier_choices_forget)
    tier_refusal_set = _in('writer', disks.tier_refusal_set)
    tier_requests = _in('reader', disks.tier_requests)
    domains_disks = _tiered('reader', disks.of_domains)
    disks_version = _in('reader', disks.version)
    disk_rates_bulk_update = _in('writer', disks.rates_update)
    disk_bulk_insert = _in('writer', disks.bulk_insert)
    disk_index = _in('reader', disks.index)

    def domain_disks(self, domain: str) -> list[disks.Member]:
        """The disks of one domain (:meth:`domains_disks`)."""
        return self.domains_disks([domain])[domain]

    cap_delete_expired = _in('writer', caps.delete_expired)
    caps_set = _in('writer', caps.set_)
    caps_release = _in('writer', caps.release)
    caps_renew = _in('writer', caps.renew)
    domains_caps = _in('reader', caps.of_domains)

    _minutes_add = _in('writer', records.add)

    def disk_minutes_add(self, minutes: typing.Sequence[records.Minute]
                         ) -> None:
        """Store the disks' minutes (:func:`records.add`).

        Once more when another controller stored one of them between this
        one's read and its insert (a handover: both had a share of the
        minute): the second pass adds to its row.
        """
        try:
            self._minutes_add(minutes)
        except db_exc.DBDuplicateEntry:
            self._minutes_add(minutes)

    disk_minutes = _in('reader', records.list_)
    disk_minutes_purge = _in('writer', records.purge)

    decisions_create = _in('writer', decisions.create)
    decision_list = _in('reader', decisions.list_)
    decision_get = _in('reader', decisions.get)

    agent_heartbeat = _in('writer', agents.heartbeat)
    agent_list = _in('reader', agents.list_)


def unreachable(exc: BaseException) -> str | None:
    """What ``exc`` says in one line if the database is away, else None.

    oslo.db translates the errors of open connections
    (``DBConnectionError``); an engine's first connect fails with
    SQLAlchemy's own ``OperationalError``. Either is an outage, not a bug:
    a service says so in one line, without a traceback.
    """
    if isinstance(exc, (db_exc.DBConnectionError, sa.exc.OperationalError)):
        return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return None
