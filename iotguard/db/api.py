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

The queries are plain functions of a session, one module per aggregate:
:mod:`~iotguard.db.tiers`, :mod:`~iotguard.db.domains`,
:mod:`~iotguard.db.disks` (with the tier choices, refusals and the
admission transaction; which tier a disk has is
:func:`iotguard.db.tiering.resolve`'s to say), :mod:`~iotguard.db.caps`,
:mod:`~iotguard.db.decisions` and :mod:`~iotguard.db.agents`. Each method
of :class:`Connection` runs one of them in a reader or writer transaction
of its own.
"""

import functools
import types

from oslo_db.sqlalchemy import enginefacade

from iotguard.db import agents
from iotguard.db import caps
from iotguard.db import decisions
from iotguard.db import disks
from iotguard.db import domains
from iotguard.db import tiers

#: enginefacade options that oslo.db's [database] group has but
#: configure() does not take.
_NOT_FOR_FACADE = ('backend', 'db_max_retries', 'db_inc_retry_interval',
                   'use_db_reconnect', 'db_retry_interval',
                   'db_max_retry_interval', 'mysql_enable_ndb',
                   'asyncio_connection', 'asyncio_slave_connection')


def _in(mode, query, default_tier=False):
    """A method running ``query(session, ...)`` in its own transaction.

    ``mode``: ``'_reader'`` or ``'_writer'``.

    ``default_tier``: also pass the ``[tiers] default_tier`` the
    connection was configured with (the queries that resolve tiers).
    """
    @functools.wraps(query)
    def method(self, *args, **kwargs):
        if default_tier:
            kwargs['default_tier'] = self._default_tier
        with getattr(self, mode)() as session:
            return query(session, *args, **kwargs)
    return method


def _read(query, default_tier=False):
    return _in('_reader', query, default_tier)


def _write(query, default_tier=False):
    return _in('_writer', query, default_tier)


class Connection:
    """iotguard's database: construct it with the config, no I/O."""

    def __init__(self, conf):
        self._default_tier = conf.tiers.default_tier
        settings = {k: v for k, v in conf.database.items()
                    if k not in _NOT_FOR_FACADE}
        settings['sqlite_fk'] = True
        self._tx = enginefacade.transaction_context()
        self._tx.configure(**settings)

    def _reader(self):
        return self._tx.reader.using(types.SimpleNamespace())

    def _writer(self):
        return self._tx.writer.using(types.SimpleNamespace())

    def get_engine(self):
        """The writer engine, for migrations."""
        return self._tx.writer.get_engine()

    def dispose(self):
        """Close every pooled connection (tests, process shutdown)."""
        self.get_engine().dispose()

    tier_create = _write(tiers.create)
    tier_get = _read(tiers.get)
    tier_list = _read(tiers.list_)
    tier_update = _write(tiers.update)

    def tier_delete(self, name):
        """Delete a tier that no disk uses, nor the default (Conflict)."""
        with self._writer() as session:
            tiers.delete(session, name, self._default_tier)

    domain_create = _write(domains.create)
    domain_get = _read(domains.get)
    domain_list = _read(domains.list_)
    domain_update = _write(domains.update)
    domain_learned = _write(domains.learned)
    domain_estimator_state = _read(domains.estimator_state)
    domain_merge = _write(domains.merge)

    disk_upsert = _write(disks.upsert, default_tier=True)
    disk_delete = _write(disks.delete)
    disk_list = _read(disks.list_, default_tier=True)
    disk_tier_set = _write(disks.tier_set)
    instance_tier_set = _write(disks.instance_tier_set, default_tier=True)
    instance_tier_unset = _write(disks.instance_tier_unset)
    tier_choice_unset = _write(disks.tier_choice_unset)
    tier_choices_forget = _write(disks.tier_choices_forget)
    tier_refusal_set = _write(disks.tier_refusal_set)
    tier_requests = _read(disks.tier_requests)
    domains_disks = _read(disks.of_domains, default_tier=True)
    disks_version = _read(disks.version)
    disk_rates_bulk_update = _write(disks.rates_update)
    disk_bulk_insert = _write(disks.bulk_insert)
    disk_index = _read(disks.index)

    def domain_disks(self, domain):
        """The disks of one domain (:meth:`domains_disks`)."""
        return self.domains_disks([domain])[domain]

    cap_delete_expired = _write(caps.delete_expired)
    caps_set = _write(caps.set_)
    caps_release = _write(caps.release)
    caps_renew = _write(caps.renew)
    domains_caps = _read(caps.of_domains)

    decisions_create = _write(decisions.create)
    decision_list = _read(decisions.list_)
    decision_get = _read(decisions.get)

    agent_heartbeat = _write(agents.heartbeat)
    agent_list = _read(agents.list_)
