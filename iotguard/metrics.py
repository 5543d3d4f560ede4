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

"""Prometheus metrics of the controller and the agent (``[prometheus]``).

Each service serves its own on ``/metrics`` (:func:`serve`), read from
what it keeps anyway when Prometheus scrapes: no work in the rounds
beyond :meth:`Rounds.add`. Series are per domain (bounded by the domains
a controller owns); per disk only with ``[prometheus] per_disk_series``
(labelled by the disk, ``<instance uuid>/<dev>``, bounded by the disks
of those domains; a disk that leaves a domain leaves its series at the
domain's next round).
The names, units and the alert rules that use them:
doc/source/admin/prometheus.rst.
"""

import collections
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
import dataclasses
import math
from typing import Any
from wsgiref import simple_server

from prometheus_client import exposition
from prometheus_client import metrics_core
from prometheus_client import registry

Family = metrics_core.Metric


def serve(host: str, port: int,
          collect: Callable[[], Iterable[Family]]
          ) -> simple_server.WSGIServer | None:
    """Serve what ``collect()`` gives on ``host:port`` (0: not at all).

    Returns the server (in a daemon thread; ``shutdown()`` stops it).
    """
    if not port:
        return None

    class Collector(registry.Collector):
        def collect(self) -> Iterable[Family]:
            return collect()

    scraped = registry.CollectorRegistry()
    scraped.register(Collector())
    server, _thread = exposition.start_http_server(port, addr=host,
                                                   registry=scraped)
    return server


def _family(kind: type[metrics_core.GaugeMetricFamily]
            | type[metrics_core.CounterMetricFamily], name: str, doc: str,
            values: Mapping[str, float] | float,
            label: str = 'domain') -> Family:
    if not isinstance(values, Mapping):
        return kind(name, doc, value=values)
    family = kind(name, doc, labels=[label])
    for key, value in sorted(values.items()):
        family.add_metric([key], value)
    return family


def gauge(name: str, doc: str, values: Mapping[str, float] | float,
          label: str = 'domain') -> Family:
    return _family(metrics_core.GaugeMetricFamily, name, doc, values, label)


def counter(name: str, doc: str, values: Mapping[str, float] | float,
            label: str = 'domain') -> Family:
    return _family(metrics_core.CounterMetricFamily, name, doc, values,
                   label)


@dataclasses.dataclass
class Passes:
    """What an agent's passes did, kept for the next scrape."""

    passes: int = 0
    failed: int = 0
    pass_s: float = math.nan
    disks: int = 0

    def add(self, seconds: float, disks: int) -> None:
        self.passes += 1
        self.pass_s, self.disks = seconds, disks

    def collect(self, caps: int, lapsed: int) -> list[Family]:
        """The families of a scrape; ``caps`` in force, leases ``lapsed``."""
        return [
            counter('iotguard_agent_passes', 'Passes (caps, then samples).',
                    self.passes),
            counter('iotguard_agent_pass_failures', 'Passes that failed.',
                    self.failed),
            gauge('iotguard_agent_pass_seconds',
                  'Duration of the last pass.', self.pass_s),
            gauge('iotguard_agent_disks', 'Disks of the last listing.',
                  self.disks),
            gauge('iotguard_agent_caps', 'Caps in force on this host.', caps),
            counter('iotguard_agent_leases_lapsed',
                    'Caps whose lease lapsed before a renewal (released '
                    'to the static limits).', lapsed),
        ]


@dataclasses.dataclass(frozen=True)
class DiskRound:
    """One disk in one round, for the per-disk series.

    ``disk``: ``<instance uuid>/<dev>``; None: stale (rates), no floor or
    no cap of that kind; the seconds its floor was due and kept in the
    round.
    """

    disk: str
    iops: float | None
    bytes_sec: float | None
    floor_iops: float | None
    floor_bytes_sec: float | None
    cap_iops: float | None
    cap_bytes_sec: float | None
    checked_s: float
    kept_s: float


@dataclasses.dataclass
class _Disk:
    """One disk: its last round and its running totals."""

    last: DiskRound
    checked_s: float = 0.0
    kept_s: float = 0.0


#: The per-disk gauges: (name, help, DiskRound field).
_DISK_GAUGES = (
    ('iotguard_disk_iops', 'Operations per second of the disk, last round.',
     'iops'),
    ('iotguard_disk_bytes_per_second', 'Bytes per second of the disk, last '
     'round.', 'bytes_sec'),
    ('iotguard_disk_floor_iops', "The disk's floor in operations per "
     'second (none: no such floor).', 'floor_iops'),
    ('iotguard_disk_floor_bytes_per_second', "The disk's floor in bytes "
     'per second (none: no such floor).', 'floor_bytes_sec'),
    ('iotguard_disk_cap_iops', 'The cap on the disk in operations per '
     'second after the last round (none: not capped so).', 'cap_iops'),
    ('iotguard_disk_cap_bytes_per_second', 'The cap on the disk in bytes '
     'per second after the last round (none: not capped so).',
     'cap_bytes_sec'),
)


@dataclasses.dataclass
class _Domain:
    """One domain: its last round's gauges and its running totals."""

    disks: int = 0
    stale: int = 0
    violations: int = 0
    load: float = math.nan
    committed: float = math.nan
    overcommitted: float = math.nan
    cap_changes: int = 0
    floor_s: float = 0.0
    missed_s: float = 0.0


class Rounds:
    """What a controller's rounds did, kept for the next scrape."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.rounds = 0
        self.round_s = math.nan
        self.domains: dict[str, _Domain] = collections.defaultdict(_Domain)
        #: by domain and disk (``[prometheus] per_disk_series``)
        self.disks: dict[str, dict[str, _Disk]] = {}

    def add(self, results: Iterable[Any], seconds: float) -> None:
        """One round: ``results`` are its ``effects.RoundResult``."""
        self.rounds += 1
        self.round_s = seconds
        for r in results:
            d = self.domains[r.domain]
            d.disks, d.stale, d.violations = r.disks, r.stale, r.violations
            d.cap_changes += r.applied + r.released
            d.floor_s += r.floored * self.interval_s
            d.missed_s += r.violations * self.interval_s
            if r.load is not None:
                d.load = r.load
            if r.committed is not None:
                d.committed = r.committed
                d.overcommitted = (math.nan if r.overcommitted is None
                                   else float(r.overcommitted))
            if r.per_disk is not None:
                self._add_disks(r.domain, r.per_disk)

    def urgent(self, results: Iterable[Any]) -> None:
        """Urgent decisions (between rounds): their cap changes.

        The gauges and the floors' seconds stay the rounds'.
        """
        for r in results:
            self.domains[r.domain].cap_changes += r.applied + r.released

    def _add_disks(self, domain: str, rows: Iterable[DiskRound]) -> None:
        """A domain's disks now: those gone from it are dropped."""
        before = self.disks.get(domain, {})
        now = {}
        for row in rows:
            disk = now[row.disk] = before.get(row.disk) or _Disk(row)
            disk.last = row
            disk.checked_s += row.checked_s
            disk.kept_s += row.kept_s
        self.disks[domain] = now

    def forget(self, keep: Iterable[str]) -> None:
        """Drop the domains this controller no longer owns."""
        for name in set(self.domains) - set(keep):
            del self.domains[name]
        for name in set(self.disks) - set(keep):
            del self.disks[name]

    def _disk_families(self) -> list[Family]:
        rows = [([domain, key], disk)
                for domain, disks in sorted(self.disks.items())
                for key, disk in sorted(disks.items())]
        labels = ['domain', 'disk']
        families: list[Family] = []
        for name, doc, field in _DISK_GAUGES:
            family = metrics_core.GaugeMetricFamily(name, doc, labels=labels)
            for key, disk in rows:
                value = getattr(disk.last, field)
                if value is not None:
                    family.add_metric(key, value)
            families.append(family)
        for name, doc, field in (
                ('iotguard_disk_floor_checked_seconds', 'Seconds the '
                 "disk's floor was due (fresh, with a floor).", 'checked_s'),
                ('iotguard_disk_floor_kept_seconds', "Of those, the seconds "
                 'its floor was kept (delivered, or its demand met).',
                 'kept_s')):
            counter_family = metrics_core.CounterMetricFamily(
                name, doc, labels=labels)
            for key, disk in rows:
                counter_family.add_metric(key, getattr(disk, field))
            families.append(counter_family)
        return families

    def collect(self, samples: Mapping[str, int], refused: int
                ) -> list[Family]:
        """The families of a scrape; ``samples``: the manager's counts."""
        per = {f.name: {n: getattr(d, f.name)
                        for n, d in self.domains.items()}
               for f in dataclasses.fields(_Domain)}
        return [
            counter('iotguard_controller_rounds', 'Decision rounds run.',
                    self.rounds),
            gauge('iotguard_controller_round_seconds',
                  'Duration of the last decision round.', self.round_s),
            gauge('iotguard_controller_decision_interval_seconds',
                  'The decision interval the rounds must keep.',
                  self.interval_s),
            gauge('iotguard_controller_domains', 'Domains owned.',
                  len(self.domains)),
            counter('iotguard_controller_samples',
                    'Disk samples received, by what became of them.',
                    {k: samples[k] for k in ('stored', 'dropped', 'foreign',
                                             'forwarded')}, 'result'),
            counter('iotguard_controller_samples_refused',
                    'Samples the store refused (out of order, malformed).',
                    refused),
            gauge('iotguard_domain_disks', 'Disks of the domain.',
                  per['disks']),
            gauge('iotguard_domain_stale_disks',
                  'Disks without a fresh sample in the last round.',
                  per['stale']),
            gauge('iotguard_domain_floor_violations',
                  'Disks below their floor with unmet demand, last round.',
                  per['violations']),
            counter('iotguard_domain_floor_checked_seconds',
                    'Disk-seconds a floor was due (fresh disks with a '
                    'floor).', per['floor_s']),
            counter('iotguard_domain_floor_missed_seconds',
                    'Disk-seconds a floor was missed (violations).',
                    per['missed_s']),
            counter('iotguard_domain_cap_changes',
                    'Caps set, changed or released.', per['cap_changes']),
            gauge('iotguard_domain_load_ratio',
                  "The domain's load, of its capacity (the profile in "
                  'use), last round.', per['load']),
            gauge('iotguard_domain_committed_ratio',
                  'Committed floors, of the capacity (the profile in use; '
                  'updated as the capacity is learned).',
                  per['committed']),
            gauge('iotguard_domain_overcommitted',
                  '1 when the committed floors exceed what the learned '
                  'fit serves beyond [admission] max_commit_ratio.',
                  per['overcommitted']),
        ] + (self._disk_families() if self.disks else [])
