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

"""Per-disk rates from a Prometheus server that scrapes Ceilometer.

**What Ceilometer exports.** With ``[polling] enable_prometheus_exporter``
each polling agent serves every sample it polls as a Prometheus *gauge*
named ``ceilometer_`` + the meter with dots as underscores, set to the
sample's volume: for a disk, libvirt's cumulative counters
``ceilometer_disk_device_{read,write}_{requests,bytes,latency}`` (latency:
ns spent). Their labels include ``resource`` (``<instance uuid>-<dev>``,
the disk), ``project``, ``user``, ``counter`` (the meter), ``unit``,
``type``, ``disk`` (``read``/``write``), ``resource_name`` and
``vm_instance`` (Nova's ``hostId``, a hash, not the instance). A gauge
has no timestamp: Prometheus stamps a value with the time of its scrape,
and the value moves only when Ceilometer polls again, every
``[prometheus_source] polling_interval``; before setting a meter again
the agent unregisters it, so a scrape may miss some meters.

**Counters into rates.** One instant query per metric,
``<metric>{<matchers>}[<3 intervals>]``, gives the values scraped for all
the disks. The series of one disk from one scrape target (``job``,
``instance``) are joined on their scrape times (a scrape stamps all the
series of a target alike); a scrape that lacks one of the request and
byte counters is skipped. A *run* is a stretch of scrapes that saw the
same counters: it starts where a new poll of Ceilometer became visible.
A run seen by one scrape only is the start of the next (its poll was
half exported when scraped). Then, for a disk:

* its newest run lasted 1.5 polling intervals or more: Ceilometer polled
  in it and read the same counters, the disk was idle (zero rates over
  the last 1.5 intervals of the run);
* otherwise the rates are the change from the previous run to the newest,
  over the time between their starts (one poll interval, measured within
  a scrape interval) by the agent's math
  (:func:`iotguard.wire.rates.compute`): a counter that went back (guest
  reboot, re-attach) is a reset gap, never a negative rate. When the
  runs' starts are 1.5 intervals apart or more (the first poll after an
  idle spell, a hole in the scrapes), the poll before the newest is not
  known: a gap too.

PromQL's ``irate()`` of a gauge that steps once per poll is mostly zero
with spikes; its ``rate()`` over n intervals counts one step more or less
whenever a step falls between the window's edge and the scrape next to
it (a rate 1/n off, zero when n is 1), and takes a counter that went back
for one restarted from zero, not for a gap. Hence the raw values.

A disk Prometheus has not scraped for a polling interval (agent down,
disk gone) gives no sample; a sample already delivered is not delivered
again. An agent that hangs but still serves its last values looks like
idle disks: nothing in the format tells them apart. Prometheus down or
answering nonsense: logged, no samples, nothing raised.
"""

from collections.abc import Callable
import math
import time
from typing import Any

from oslo_config import cfg
from oslo_log import log as logging
import requests

from iotguard.controller import sources
from iotguard.controller.sources import ceilometer
from iotguard import exception
from iotguard.wire import batch as batch_mod
from iotguard.wire import rates

LOG = logging.getLogger(__name__)

#: Prometheus metric of Ceilometer's exporter -> the agent's counter name.
METRICS = {'ceilometer_' + meter.replace('.', '_'): counter
           for meter, counter in ceilometer.METERS.items()}
#: A run at least this many polling intervals long is an idle disk.
IDLE_INTERVALS = 1.5
#: How far back a query reads, in polling intervals: the newest run
#: starts within 1.5 intervals, the run before it 1.5 earlier at most.
WINDOW_INTERVALS = 2 * IDLE_INTERVALS

Key = tuple[str, str]
#: A disk as one scrape target exports it: (uuid, dev, job, instance).
Target = tuple[str, str, str | None, str | None]
#: One scrape of a disk: (time, {counter: value}).
Scrape = tuple[float, dict[str, int]]


def selector(metric: str, matchers: str, window_s: float) -> str:
    """The PromQL of one metric's raw values over ``window_s``."""
    return '%s{%s}[%ds]' % (metric, matchers, math.ceil(window_s))


def _required(counters: dict[str, int]) -> list[int]:
    return [counters[name] for name in sorted(ceilometer.REQUIRED)]


def runs(scrapes: list[Scrape]) -> list[list[Scrape]]:
    """The scrapes, oldest first, in runs of equal request/byte counters."""
    out: list[list[Scrape]] = []
    for scrape in scrapes:
        if out and _required(out[-1][-1][1]) == _required(scrape[1]):
            out[-1].append(scrape)
        else:
            out.append([scrape])
    return out


def polls(scrapes: list[Scrape]
          ) -> list[tuple[float | None, list[Scrape]]]:
    """The polls of Ceilometer that the scrapes saw, oldest first.

    Each as ``(when it began to show, the scrapes that saw all of it)``,
    the time None when it showed from the first scrape (it may be older).
    A poll is a run of two scrapes or more, after any runs of one scrape
    (the same poll half exported when scraped).
    """
    every = runs(scrapes)
    out: list[tuple[float | None, list[Scrape]]] = []
    began = 0
    for i, run in enumerate(every):
        if len(run) > 1:
            out.append((every[began][0][0] if began else None, run))
            began = i + 1
    return out


def measure(scrapes: list[Scrape], polling_interval: float
            ) -> tuple[rates.Reading, rates.Reading,
                       rates.Rates | rates.Gap] | None:
    """A disk's newest rates (module doc) and the readings they are between.

    None while there are not enough scrapes for them.
    """
    seen = polls(scrapes)
    if not seen:
        return None
    began, run = seen[-1]
    end = rates.Reading(*run[-1])
    idle = [s for s in run
            if s[0] <= end.at - IDLE_INTERVALS * polling_interval]
    if idle:
        prev = rates.Reading(*idle[-1])
        return prev, end, rates.compute(prev, end)
    if began is None or seen[-2][0] is None:
        return None     # the poll before is not known
    prev = rates.Reading(seen[-2][0], seen[-2][1][0][1])
    cur = rates.Reading(began, run[0][1])
    return prev, cur, rates.compute(prev, cur,
                                    IDLE_INTERVALS * polling_interval)


def _counter(value: object) -> int:
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number) or number < 0:
        raise ValueError('%r is not a counter' % (value,))
    return int(number)


class PrometheusSource:
    """Reads disk rates from Prometheus; ``session``: a requests Session."""

    def __init__(self, conf: cfg.ConfigOpts, session: Any = None,
                 clock: Callable[[], float] = time.time) -> None:
        group = conf.prometheus_source
        if not group.url:
            raise ValueError('[prometheus_source] url is required')
        self.url = group.url.rstrip('/') + '/api/v1/query'
        self.polling_interval = group.polling_interval
        self.window_s = WINDOW_INTERVALS * group.polling_interval
        self.matchers = group.matchers
        self.timeout = group.timeout
        if session is None:
            session = requests.Session()
            session.verify = (not group.insecure) and (group.cafile or True)
            if group.username:
                session.auth = (group.username, group.password or '')
        self._session = session
        self._clock = clock
        self._delivered: dict[Key, float] = {}

    def latest(self) -> list[batch_mod.Row]:
        """The newest sample of each disk; ``[]`` when Prometheus fails."""
        now = self._clock()
        try:
            scraped, projects = self._read(now)
        except Exception as e:
            LOG.warning('Prometheus unavailable, no samples from it this '
                        'time: %s', e)
            return []
        newest: dict[Key, Target] = {}
        for target, by_time in scraped.items():
            key = target[:2]
            other = newest.get(key)
            if other is None or max(by_time) > max(scraped[other]):
                newest[key] = target     # a migrated disk: its new host
        out = []
        for key, target in newest.items():
            scrapes = sorted((at, counters)
                             for at, counters in scraped[target].items()
                             if ceilometer.REQUIRED <= counters.keys())
            if not scrapes or now - scrapes[-1][0] > self.polling_interval:
                continue     # stale: not scraped for a polling interval
            measured = measure(scrapes, self.polling_interval)
            if measured is None:
                continue
            prev, cur, result = measured
            latency = (ceilometer.LATENCY <= prev.counters.keys() and
                       ceilometer.LATENCY <= cur.counters.keys())
            out.append(sources.row(key, cur.at, result, latency,
                                   projects.get(target)))
        return out

    def poll(self, sink: sources.Sink) -> int:
        """Hand the samples not delivered yet to ``sink``; how many stored."""
        rows = self.latest()
        fresh = [row for row in rows if row.timestamp > self._delivered.get(
            (row.instance_uuid, row.dev), -math.inf)]
        # A round that failed or missed a disk forgets nothing; a sample
        # older than the window cannot come again.
        oldest = self._clock() - self.window_s
        self._delivered = {key: at for key, at in self._delivered.items()
                           if at >= oldest}
        self._delivered.update(((row.instance_uuid, row.dev), row.timestamp)
                               for row in fresh)
        return sources.deliver(sink, fresh)

    def _read(self, now: float) -> tuple[
            dict[Target, dict[float, dict[str, int]]],
            dict[Target, str | None]]:
        """The values of every disk metric, by target and scrape time.

        ``({target: {scrape time: {counter: value}}}, {target: project})``
        """
        scraped: dict[Target, dict[float, dict[str, int]]] = {}
        projects: dict[Target, str | None] = {}
        for metric, counter in METRICS.items():
            dropped = 0
            for series in self._query(metric, now):
                try:
                    labels = series['metric']
                    disk = ceilometer.disk_of(
                        {'resource_id': labels.get('resource')})
                    target = disk + (labels.get('job'),
                                     labels.get('instance'))
                    points = [(float(at), _counter(value))
                              for at, value in series['values']]
                except (exception.Invalid, KeyError, TypeError,
                        ValueError, AttributeError):
                    dropped += 1
                    continue
                by_time = scraped.setdefault(target, {})
                for at, value in points:
                    by_time.setdefault(at, {})[counter] = value
                projects[target] = labels.get('project')
            if dropped:
                LOG.warning('Prometheus: %(n)d series of %(metric)s without '
                            'a disk in their "resource" label or with '
                            'values that are no counters, left out',
                            {'n': dropped, 'metric': metric})
        return scraped, projects

    def _query(self, metric: str, now: float) -> list[Any]:
        expr = selector(metric, self.matchers, self.window_s)
        resp = self._session.get(self.url, timeout=self.timeout,
                                 params={'query': expr, 'time': '%.3f' % now})
        try:
            answer = resp.json()
        except ValueError:
            answer = None
        if not isinstance(answer, dict) or answer.get('status') != 'success':
            error = answer.get('error') if isinstance(answer, dict) else None
            raise exception.Invalid(reason='%s: HTTP %s, %s' % (
                expr, resp.status_code, error or resp.text[:200]))
        data = answer.get('data')
        if (not isinstance(data, dict) or data.get('resultType') != 'matrix'
                or not isinstance(data.get('result'), list)):
            raise exception.Invalid(reason='%s: no matrix in the answer'
                                    % expr)
        result: list[Any] = data['result']
        return result
