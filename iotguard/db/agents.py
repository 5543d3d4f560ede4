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

"""The agents' heartbeats."""

import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from iotguard.db import models
from iotguard.wire import rates

FIELDS = ('host', 'driver', 'version', 'last_heartbeat', 'interval_s',
          'disks', 'caps', 'clock_offset_s', 'created_at')


def heartbeat(session: orm.Session, host: str, driver: str,
              now: datetime.datetime | None = None, version: str | None = None,
              interval_s: float | None = None, disks: int | None = None,
              caps: int | None = None,
              clock_offset_s: float | None = None) -> None:
    """Record that the agent on ``host`` is alive, and what it said.

    ``clock_offset_s``: its host's clock offset as the recording
    controller learned it (:attr:`models.Agent.clock_offset_s`).
    """
    now = now or models.utcnow()
    agent = models.find_or_add(session, models.Agent, now, host=host)
    agent.driver, agent.last_heartbeat = driver, now
    agent.version, agent.interval_s = version, interval_s
    agent.disks, agent.caps = disks, caps
    agent.clock_offset_s = clock_offset_s


def alive(agent: dict[str, Any], now: datetime.datetime,
          default_interval_s: float) -> bool:
    """Whether an agent of :func:`list_` was heard of recently enough.

    Its last heartbeat at most ``STALE_INTERVALS`` of its sampling
    intervals (``default_interval_s`` when it did not say) before ``now``.
    """
    interval = agent['interval_s'] or default_interval_s
    return bool((now - agent['last_heartbeat']).total_seconds()
                <= rates.STALE_INTERVALS * interval)


def list_(session: orm.Session, host: str | None = None
          ) -> list[dict[str, Any]]:
    """Every agent (or the one on ``host``), by host."""
    query = sa.select(models.Agent).order_by(models.Agent.host)
    if host is not None:
        query = query.where(models.Agent.host == host)
    return [models.row(a, FIELDS)
            for a in session.scalars(query).all()]
