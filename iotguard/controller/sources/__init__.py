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

"""Metric sources other than the agents: Ceilometer, Gnocchi, Prometheus.

Each source turns what it reads into rows (:class:`iotguard.wire.batch.Row`,
one disk's sample each) and :func:`deliver` hands them to a
``sink(batch) -> int`` (the controller's
:meth:`~iotguard.controller.manager.ControllerManager.add_batch`) as one
:class:`iotguard.wire.batch.Batch`, checked as an agent's is by
:func:`iotguard.wire.batch.decode` (a malformed row is logged and
dropped, the others go on). No source sees the static ceilings: a
disk of theirs has none.
"""

from collections.abc import Callable
from collections.abc import Sequence
import datetime

from oslo_log import log as logging
from oslo_utils import timeutils

from iotguard import exception
from iotguard.wire import batch as batch_mod
from iotguard.wire import rates

LOG = logging.getLogger(__name__)

Sink = Callable[[batch_mod.Batch], int]


def unix_time(when: object) -> float:
    """An ISO 8601 string or a datetime (naive: UTC) as UNIX time.

    Raises Invalid for anything else.
    """
    if isinstance(when, str):
        try:
            when = timeutils.parse_isotime(when)
        except ValueError as e:
            raise exception.Invalid(reason='timestamp %r: %s' % (when, e))
    if not isinstance(when, datetime.datetime):
        raise exception.Invalid(reason='timestamp %r is not a string'
                                % (when,))
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return when.timestamp()


def row(disk: tuple[str, str], at: float, result: rates.Rates | rates.Gap,
        latency: bool, project_id: str | None) -> batch_mod.Row:
    """The sample of ``disk`` at ``at`` from two readings' ``result``.

    ``latency``: both readings carried both latency counters; without,
    the latencies are none (a missing counter reads as 0 and would give
    the whole since-boot total).
    """
    uuid, dev = disk
    if isinstance(result, rates.Gap):
        return batch_mod.Row(uuid, dev, at, result.interval_s,
                             gap=result.reason, project_id=project_id)
    values: dict[str, float | None] = {**result.as_dict()}
    if not latency:
        values.update(read_latency_ms=None, write_latency_ms=None)
    return batch_mod.Row(uuid, dev, at, result.interval_s, rates=values,
                         project_id=project_id)


def _checked(rows: Sequence[batch_mod.Row]) -> batch_mod.Batch:
    batch = batch_mod.Batch.of_rows(rows)
    return batch_mod.decode(batch.to_wire()) if rows else batch


def checked(rows: Sequence[batch_mod.Row]) -> batch_mod.Batch:
    """The :class:`iotguard.wire.batch.Batch` of ``rows``, checked.

    A malformed row is logged and left out.
    """
    try:
        return _checked(rows)
    except Exception:
        pass
    good = []
    for row in rows:
        try:
            _checked([row])
        except Exception as e:
            LOG.warning('Dropped a sample of %.64r/%.64r: %s',
                        row.instance_uuid, row.dev, e)
        else:
            good.append(row)
    return _checked(good)


def deliver(sink: Sink, rows: Sequence[batch_mod.Row]) -> int:
    """Hand ``rows`` to ``sink`` as one checked batch; how many it stored.

    A sink that raises is logged, never raised further.
    """
    batch = checked(rows)
    if not len(batch):
        return 0
    try:
        return sink(batch)
    except Exception:
        LOG.exception('Sample store refused %d samples', len(batch))
        return 0
