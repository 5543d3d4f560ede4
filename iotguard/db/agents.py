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

FIELDS = ('host', 'driver', 'version', 'last_heartbeat', 'interval_s',
          'disks', 'caps', 'created_at')


def heartbeat(session: orm.Session, host: str, driver: str,
              now: datetime.datetime | None = None, version: str | None = None,
              interval_s: float | None = None, disks: int | None = None,
              caps: int | None = None) -> None:
    """Record that the agent on ``host`` is alive, and what it said."""
    now = now or models.utcnow()
    agent = models.find_or_add(session, models.Agent, now, host=host)
    agent.driver, agent.last_heartbeat = driver, now
    agent.version, agent.interval_s = version, interval_s
    agent.disks, agent.caps = disks, caps


def list_(session: orm.Session, host: str | None = None
          ) -> list[dict[str, Any]]:
    """Every agent (or the one on ``host``), by host."""
    query = sa.select(models.Agent).order_by(models.Agent.host)
    if host is not None:
        query = query.where(models.Agent.host == host)
    return [models.row(a, FIELDS)
            for a in session.scalars(query).all()]
