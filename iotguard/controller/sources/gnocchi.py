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

"""Per-disk rates from Gnocchi, for agentless domains and for history.

Ceilometer's Gnocchi publisher stores each disk as an ``instance_disk``
resource (attributes ``instance_id`` and ``name``, the target dev) whose
metrics are the cumulative ``disk.device.*`` counters. Gnocchi derives
the resource ids from the creator, so disks are found by search on
``instance_id``, never by id, with one ``POST /v1/aggregates`` per batch
of instances (``details=true`` returns the resources with the measures).

A counter becomes a per-second rate in one of two ways
(``[gnocchi] rate_method``):

* ``rateofchangesec`` (default): ``(rateofchangesec (metric (m mean)))``,
  the per-second change between consecutive bucket means; any archive
  policy with ``mean`` works.
* ``rate:mean``: the archive policy's ``rate:mean`` is the change between
  consecutive *measures*, averaged per bucket, not per second; divided by
  the granularity it is a per-second rate only when there is one measure
  per bucket (granularity = Ceilometer's polling interval).

Only complete buckets count (the newest, still filling, is skipped). A
negative change (counter reset after a reboot or re-attach) is a gap,
never a negative rate. Gnocchi down or answering nonsense: logged, no
samples, nothing raised; the controller goes on with its other sources.
"""

from collections.abc import Callable
from collections.abc import Iterable
import datetime
import time
from typing import Any

from gnocchiclient import auth as gnocchi_auth
from gnocchiclient.v1 import client as gnocchi_client
from keystoneauth1 import session as ks_session
from oslo_config import cfg
from oslo_log import log as logging

from iotguard import clients
from iotguard.controller import sources
from iotguard.wire import batch as batch_mod
from iotguard.wire import rates

LOG = logging.getLogger(__name__)

RESOURCE_TYPE = 'instance_disk'

#: sample field -> Gnocchi metric (Ceilometer's meter names).
RATE_METRICS = {
    'read_iops': 'disk.device.read.requests',
    'write_iops': 'disk.device.write.requests',
    'read_bytes_sec': 'disk.device.read.bytes',
    'write_bytes_sec': 'disk.device.write.bytes',
}
#: latency field -> (latency metric in ns, the requests metric it divides)
LATENCY_METRICS = {
    'read_latency_ms': ('disk.device.read.latency',
                        'disk.device.read.requests'),
    'write_latency_ms': ('disk.device.write.latency',
                         'disk.device.write.requests'),
}
METRICS = tuple(RATE_METRICS.values()) + tuple(
    m for m, _ in LATENCY_METRICS.values())

#: Instances per aggregates request (the search goes in the body).
BATCH = 100

#: ``{metric: {bucket start (unix): value}}``
Series = dict[str, dict[float, float | None]]


def operations(method: str) -> str:
    """The aggregates ``operations`` for every disk metric."""
    if method == 'rate:mean':
        return '(metric %s)' % ' '.join('(%s rate:mean)' % m
                                        for m in METRICS)
    return '(rateofchangesec (metric %s))' % ' '.join('(%s mean)' % m
                                                      for m in METRICS)


def get_client(conf: cfg.ConfigOpts) -> Any:
    """A gnocchiclient on a keystoneauth session, per ``[gnocchi]``."""
    group = conf.gnocchi
    adapter = {'interface': conf.service_credentials.interface,
               'region_name': conf.service_credentials.region_name}
    if group.auth_mode == 'keystone':
        session = clients.get_session(conf)
        if group.endpoint:
            adapter['endpoint_override'] = group.endpoint
    else:
        if not group.endpoint:
            raise ValueError('[gnocchi] endpoint is required with auth_mode'
                             ' %s' % group.auth_mode)
        if group.auth_mode == 'basic':
            plugin = gnocchi_auth.GnocchiBasicPlugin(
                user=group.user, endpoint=group.endpoint)
        else:
            plugin = gnocchi_auth.GnocchiNoAuthPlugin(
                user_id=group.user, project_id=group.user,
                roles='admin', endpoint=group.endpoint)
        session = ks_session.Session(auth=plugin, timeout=group.timeout)
    return gnocchi_client.Client(session=session, adapter_options=adapter)


def _series(by_aggregation: dict[str, Any]) -> dict[float, float | None]:
    """``{bucket start (unix): value}`` of one metric's only aggregation."""
    points = {}
    for series in by_aggregation.values():
        for when, _granularity, value in series:
            points[sources.unix_time(when)] = value
    return points


class GnocchiSource:
    """Reads disk rates from Gnocchi; ``client`` is built when needed."""

    def __init__(self, conf: cfg.ConfigOpts, client: Any = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.granularity = conf.gnocchi.granularity
        self.method = conf.gnocchi.rate_method
        self.lookback_buckets = conf.gnocchi.lookback_buckets
        self._conf = conf
        self._client = client
        self._clock = clock
        self._operations = operations(self.method)

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = get_client(self._conf)
        return self._client

    def fetch(self, instance_uuids: Iterable[str] | None = None,
              start: float | None = None, stop: float | None = None
              ) -> list[batch_mod.Row]:
        """Every complete bucket of every disk, oldest first: one Row each.

        ``instance_uuids``: only these instances' disks (None: every
        ``instance_disk``); ``start``/``stop``: UNIX times. Returns ``[]``
        when Gnocchi cannot be read.
        """
        batches: list[list[str] | None] = [None]
        if instance_uuids is not None:
            uuids = sorted(set(instance_uuids))
            batches = [uuids[i:i + BATCH] for i in range(0, len(uuids),
                                                         BATCH)]
        now = self._clock()
        samples = []
        for batch in batches:
            try:
                answer = self._aggregates(batch, start, stop)
                samples.extend(self._samples(answer, now))
            except Exception as e:
                LOG.warning('Gnocchi unavailable, no samples from it this '
                            'time: %s', e)
                return []
        samples.sort(key=lambda s: s.timestamp)
        return samples

    def latest(self, instance_uuids: Iterable[str] | None = None
               ) -> list[batch_mod.Row]:
        """The newest complete bucket of each disk (within the look-back)."""
        start = self._clock() - (self.lookback_buckets + 1) * \
            self.granularity
        newest = {}
        for sample in self.fetch(instance_uuids, start=start):
            newest[(sample.instance_uuid, sample.dev)] = sample
        return list(newest.values())

    def poll(self, sink: sources.Sink,
             instance_uuids: Iterable[str] | None = None) -> int:
        """Hand the latest samples to ``sink`` (one batch); how many stored."""
        return sources.deliver(sink, self.latest(instance_uuids))

    def _aggregates(self, uuids: list[str] | None, start: float | None,
                    stop: float | None) -> Any:
        search = {} if uuids is None else {'in': {'instance_id': uuids}}
        return self.client.aggregates.fetch(
            self._operations, search=search, resource_type=RESOURCE_TYPE,
            start=_iso(start), stop=_iso(stop),
            granularity=self.granularity, details=True)

    def _samples(self, answer: dict[str, Any], now: float
                 ) -> list[batch_mod.Row]:
        resources = {r['id']: r for r in answer.get('references', ())}
        out = []
        for rid, metrics in answer['measures'].items():
            resource = resources.get(rid)
            if resource is None:
                LOG.warning('Gnocchi returned measures of unknown resource '
                            '%s', rid)
                continue
            series = {name: _series(aggs) for name, aggs in metrics.items()}
            out.extend(self._disk_samples(resource, series, now))
        return out

    def _disk_samples(self, resource: dict[str, Any], series: Series,
                      now: float) -> list[batch_mod.Row]:
        divide = self.granularity if self.method == 'rate:mean' else 1.0
        required = [series.get(m, {}) for m in RATE_METRICS.values()]
        buckets = set(required[0]).intersection(*required[1:])
        out = []
        for bucket in sorted(buckets):
            end = bucket + self.granularity
            if end > now:
                continue
            measured = {field: v / divide
                        for field, metric in RATE_METRICS.items()
                        if (v := series[metric][bucket]) is not None}
            if len(measured) < len(RATE_METRICS):
                continue
            values = {**measured, **self._latency(series, bucket)}
            gap = rates.GAP_RESET if any(
                v is not None and v < 0 for v in values.values()) else None
            out.append(batch_mod.Row(
                str(resource['instance_id']), resource['name'], end,
                float(self.granularity), gap=gap,
                rates=None if gap else values,
                project_id=resource.get('project_id')))
        return out

    @staticmethod
    def _latency(series: Series, bucket: float) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for field, (latency, requests) in LATENCY_METRICS.items():
            ns = series.get(latency, {}).get(bucket)
            reqs = series[requests][bucket]
            if ns is None:
                out[field] = None
            else:
                # Both are changes over the same bucket, so any divisor
                # cancels out; per op, in ms.
                out[field] = float(rates.latency_ms(ns, reqs))
        return out


def _iso(when: float | None) -> str | None:
    if when is None:
        return None
    return datetime.datetime.fromtimestamp(
        when, tz=datetime.timezone.utc).isoformat()
