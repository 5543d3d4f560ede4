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

"""Ceilometer's samples from the message bus -> per-disk rates.

Ceilometer's ``notifier://`` publisher sends, with oslo.messaging's
``messagingv2`` driver and priority ``sample``, notifications whose event
type is the topic (``metering``) and whose payload is a list of meter
dicts (``counter_name, counter_volume, counter_unit, counter_type,
resource_id, timestamp, resource_metadata, project_id, ...``). A disk's
``resource_id`` is ``<instance uuid>-<dev>``; its metadata carries
``instance_id`` and ``disk_name``.

The disk meters are cumulative counters, one dict per meter and disk per
poll, possibly spread over several notifications. :class:`Assembler`
gathers the meters of one poll of one disk into one reading (requests,
bytes and, when Ceilometer polls them, latency in ns) and turns two
consecutive readings into rates with :mod:`iotguard.wire.rates`, the
agent's own math: a counter that went backwards (reboot, re-attach)
starts a new series and gives a gap, never a negative rate.

Malformed meters and notifications are logged and dropped: the endpoint
always answers ``HANDLED`` so nothing is requeued forever.
"""

from collections.abc import Callable
from collections.abc import Iterable
import dataclasses
import threading
import time
from typing import Any

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging

from iotguard.controller import sources
from iotguard import exception
from iotguard.wire import batch as batch_mod
from iotguard.wire import caps
from iotguard.wire import rates
from iotguard.wire import rpc

LOG = logging.getLogger(__name__)

#: Ceilometer meter -> the agent's counter name (libvirt's).
METERS = {
    'disk.device.read.requests': 'rd_reqs',
    'disk.device.read.bytes': 'rd_bytes',
    'disk.device.read.latency': 'rd_times',
    'disk.device.write.requests': 'wr_reqs',
    'disk.device.write.bytes': 'wr_bytes',
    'disk.device.write.latency': 'wr_times',
}
REQUIRED = frozenset(('rd_reqs', 'rd_bytes', 'wr_reqs', 'wr_bytes'))
LATENCY = frozenset(('rd_times', 'wr_times'))

Key = tuple[str, str]
Meter = tuple[Key, str, float, float, str | None]


@dataclasses.dataclass
class _Pending:
    """The meters of one disk's current poll, as they arrive."""

    at: float
    counters: dict[str, Any]
    project_id: str | None


def disk_of(meter: dict[str, Any]) -> Key:
    """``(instance_uuid, dev)`` of a disk meter, or raise Invalid."""
    metadata = meter.get('resource_metadata') or {}
    if not isinstance(metadata, dict):
        metadata = {}
    uuid, dev = metadata.get('instance_id'), metadata.get('disk_name')
    resource_id = meter.get('resource_id')
    if (not uuid or not dev) and isinstance(resource_id, str):
        # <36-character instance uuid>-<dev>
        uuid, dev = resource_id[:36], resource_id[37:]
    try:
        disk = caps.Disk.from_wire({'instance_uuid': uuid, 'dev': dev})
    except exception.Invalid:
        raise exception.Invalid(reason='no disk in resource %r' %
                                (resource_id,))
    return disk.instance_uuid, disk.dev


def _volume(meter: dict[str, Any]) -> float:
    volume = meter.get('counter_volume')
    if isinstance(volume, bool) or not isinstance(volume, (int, float)):
        raise exception.Invalid(reason='counter_volume %r is not a number'
                                % (volume,))
    if volume < 0:
        raise exception.Invalid(reason='counter_volume %r is negative'
                                % (volume,))
    return volume


class Assembler:
    """Meters in, per-disk samples (:class:`iotguard.wire.batch.Row`) out.

    Thread-safe. A poll of a disk is complete, and becomes a sample, when
    its four request and byte counters are in and, for a disk whose
    latency meters were ever seen, its two latency counters too. A meter
    that repeats one already in the pending poll, or that is more than
    half a polling interval away from it, starts the next poll; an
    incomplete poll is then dropped (a missing counter would read as a
    reset).
    """

    def __init__(self, polling_interval_s: float) -> None:
        self.window_s = polling_interval_s / 2.0
        self.max_gap_s = rates.STALE_INTERVALS * polling_interval_s
        self._series = rates.Series(max_gap_s=self.max_gap_s)
        self._pending: dict[Key, _Pending] = {}
        self._last: dict[Key, tuple[float, frozenset[str]]] = {}
        self._has_latency: set[Key] = set()
        self._lock = threading.Lock()

    def parse(self, meter: object) -> Meter | None:
        """The ``(disk, counter, at, volume, project_id)`` of a meter.

        None for a meter that is not a disk meter; raises Invalid when it
        is malformed.
        """
        if not isinstance(meter, dict):
            raise exception.Invalid(reason='meter %r is not a dict'
                                    % (meter,))
        counter = METERS.get(meter.get('counter_name', ''))
        if counter is None:
            return None
        return (disk_of(meter), counter,
                sources.unix_time(meter.get('timestamp')), _volume(meter),
                meter.get('project_id'))

    def add(self, meters: Iterable[object]
            ) -> tuple[list[batch_mod.Row], list[str]]:
        """Take a notification's meters; return ``(samples, errors)``.

        ``samples`` are those the meters complete; ``errors`` says why
        each malformed meter was dropped. Meters of other kinds are
        ignored. Latency meters anywhere in the batch count before any
        poll of the batch is judged complete.
        """
        parsed, errors = [], []
        for meter in meters:
            try:
                item = self.parse(meter)
            except exception.Invalid as e:
                errors.append(str(e))
                continue
            if item is not None:
                parsed.append(item)
        out = []
        with self._lock:
            self._has_latency.update(key for key, counter, *_ in parsed
                                     if counter in LATENCY)
            for item in parsed:
                out.extend(self._add(*item))
        return out, errors

    def _add(self, key: Key, counter: str, at: float, volume: float,
             project_id: str | None) -> list[batch_mod.Row]:
        out: list[batch_mod.Row] = []
        last = self._last.get(key)
        if (key not in self._pending and last is not None and
                abs(at - last[0]) <= self.window_s):
            # A straggler of the poll already turned into a sample.
            LOG.debug('Late %s of %s dropped', counter, key)
            return out
        pending = self._pending.get(key)
        if pending is not None and (counter in pending.counters or
                                    abs(at - pending.at) > self.window_s):
            out.extend(self._flush(key))
            pending = None
        if pending is None:
            pending = self._pending[key] = _Pending(at, {}, project_id)
        pending.at = min(pending.at, at)
        pending.counters[counter] = volume
        if self._complete(key, pending):
            out.extend(self._flush(key))
        return out

    def _complete(self, key: Key, pending: _Pending) -> bool:
        have = pending.counters.keys()
        return REQUIRED <= have and (key not in self._has_latency or
                                     LATENCY <= have)

    def _flush(self, key: Key) -> list[batch_mod.Row]:
        pending = self._pending.pop(key)
        have = frozenset(pending.counters)
        if not REQUIRED <= have:
            LOG.warning('Incomplete Ceilometer poll of %(disk)s at %(at)s '
                        'dropped: missing %(missing)s',
                        {'disk': '/'.join(key), 'at': pending.at,
                         'missing': ', '.join(sorted(REQUIRED - have))})
            return []
        last = self._last.get(key)
        result = self._series.update(key, rates.Reading(pending.at,
                                                        pending.counters))
        self._last[key] = (pending.at, have)
        latency = (LATENCY <= have and last is not None and
                   LATENCY <= last[1])
        return [sources.row(key, pending.at, result, latency,
                            pending.project_id)]

    def forget_older_than(self, when: float) -> int:
        """Drop the state of disks not heard of since ``when``.

        Deleted instances and detached volumes: memory does not grow.
        """
        with self._lock:
            old = [key for key, (at, _) in self._last.items() if at < when]
            old += [key for key, p in self._pending.items()
                    if p.at < when and key not in self._last]
            for key in old:
                self._last.pop(key, None)
                self._pending.pop(key, None)
                self._has_latency.discard(key)
            self._series.prune(self._last)
            return len(old)


class Endpoint:
    """The notification endpoint; ``sink(batch) -> int`` gets samples."""

    def __init__(self, sink: sources.Sink, polling_interval_s: float,
                 clock: Callable[[], float] = time.time) -> None:
        self.sink = sink
        self.assembler = Assembler(polling_interval_s)
        self._clock = clock
        self._forget_every_s = polling_interval_s
        self._forgotten_at = clock()

    def sample(self, ctxt: dict[str, Any], publisher_id: str,
               event_type: str, payload: object,
               metadata: dict[str, Any]) -> Any:
        """Ceilometer's publisher sends with priority ``sample``."""
        if not isinstance(payload, list):
            LOG.warning('Malformed %(type)s notification from %(pub)s '
                        'dropped: the payload is not a list of samples',
                        {'type': event_type, 'pub': publisher_id})
            return oslo_messaging.NotificationResult.HANDLED
        try:
            samples, errors = self.assembler.add(payload)
        except Exception:
            LOG.exception('Ceilometer notification from %s dropped',
                          publisher_id)
            return oslo_messaging.NotificationResult.HANDLED
        for error in errors:
            LOG.warning('Malformed Ceilometer sample from %(pub)s '
                        'dropped: %(err)s', {'pub': publisher_id,
                                             'err': error})
        sources.deliver(self.sink, samples)
        self._forget_stale()
        return oslo_messaging.NotificationResult.HANDLED

    def _forget_stale(self) -> None:
        now = self._clock()
        if now - self._forgotten_at >= self._forget_every_s:
            self._forgotten_at = now
            self.assembler.forget_older_than(now -
                                             self.assembler.max_gap_s)


def pool_name(conf: cfg.ConfigOpts) -> str:
    """The listener pool: ``[ceilometer] pool`` or one per controller."""
    return rpc.listener_pool(conf, 'ceilometer', conf.ceilometer.pool)


def get_listener(conf: cfg.ConfigOpts, transport: oslo_messaging.Transport,
                 sink: sources.Sink) -> oslo_messaging.MessageHandlingServer:
    """A (not started) listener on ``[ceilometer] exchange`` and ``topic``.

    ``transport``: a notification transport on the bus Ceilometer
    publishes to.
    """
    endpoint = Endpoint(sink, conf.ceilometer.polling_interval)
    return oslo_messaging.get_notification_listener(
        transport, [oslo_messaging.Target(topic=conf.ceilometer.topic,
                                          exchange=conf.ceilometer.exchange)],
        [endpoint], executor='threading', pool=pool_name(conf))
