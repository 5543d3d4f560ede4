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

"""Simulator scenarios: YAML data files, loaded by name or by path.

A scenario names one contention domain (the shared storage and its queue
model), the tiers, and the VMs with their fio-like jobs. The format is
documented in ``doc/source/reference/simulator.rst``; every error names the
field at fault (:class:`iotguard.exception.InvalidScenario`).
"""

import dataclasses
import importlib.resources
import math
import os
from typing import Any

import yaml

from iotguard import exception
from iotguard import policy
from iotguard.policy import base
from iotguard.wire import caps

PACKAGE = 'iotguard.sim.scenarios'
SUFFIX = '.yaml'
RW_MODES = {'read': 1.0, 'randread': 1.0, 'write': 0.0, 'randwrite': 0.0,
            'rw': None, 'randrw': None}


@dataclasses.dataclass(frozen=True)
class Domain:
    """The shared storage and its queue model.

    ``iops_4k``/``bytes_sec`` are the saturated capacity (what a calibration
    at a deep queue measures, the profile the policies see). At ``n``
    outstanding requests the array serves ``min(1, (n / sat_depth) **
    depth_exponent)`` of it; a disk with ``q`` of them gets a share in
    proportion to ``q ** share_exponent``. ``noise`` is the standard
    deviation of the per-tick log-normal speed factor. ``form`` is the
    cost model's form the storage follows (:data:`base.FORMS`):
    ``additive`` (seek + transfer) or ``max`` (a token bucket).
    """

    name: str
    iops_4k: float
    bytes_sec: float
    sat_depth: float = 1.0
    depth_exponent: float = 0.0
    share_exponent: float = 1.0
    noise: float = 0.0
    form: str = base.ADDITIVE

    @property
    def profile(self) -> base.Profile:
        """The true capacity, as the cost model takes it."""
        return base.Profile(self.iops_4k, self.bytes_sec, self.form)


@dataclasses.dataclass(frozen=True)
class Step:
    """From ``at`` seconds on, the job runs ``processes`` processes.

    ``rate_kbs`` (KiB/s, whole job) is fio's ``rate`` (``None``: as fast
    as the storage answers).
    """

    at: float
    processes: int
    rate_kbs: float | None = None


@dataclasses.dataclass(frozen=True)
class Job:
    """A fio-like job (:mod:`iotguard.sim.workload`).

    Its step's ``processes`` x ``iodepth`` requests are in flight;
    ``read_fraction`` of the requests are reads; ``think_ms`` is fio's
    ``thinktime``. ``steps`` change the load over time and repeat every
    ``period_s`` when that is set.
    """

    bs: int
    read_fraction: float
    iodepth: int
    steps: tuple[Step, ...]
    period_s: float | None = None
    think_ms: float = 0.0

    def state_at(self, t: float) -> Step:
        """The step in force at time ``t`` (processes 0 before the first)."""
        if self.period_s:
            t = t % self.period_s
        current = Step(at=0.0, processes=0)
        for step in self.steps:
            if step.at <= t + 1e-9:
                current = step
        return current

    def change_times(self, duration_s: float) -> list[float]:
        """Every time in ``[0, duration_s)`` at which the load changes."""
        times = [s.at for s in self.steps]
        if self.period_s:
            times = [k * self.period_s + t
                     for k in range(int(duration_s // self.period_s) + 1)
                     for t in times]
        return sorted({t for t in times if 0 <= t < duration_s})


@dataclasses.dataclass(frozen=True)
class Vm:
    name: str
    role: str
    host: str
    tier: str
    project_id: str
    dev: str
    volume_id: str | None
    limits: dict[str, int]
    jobs: tuple[Job, ...]
    #: GiB, what its tier's limits per GiB are priced at (None: unknown)
    size_gib: float | None = None
    #: ``(at, tier)``: from ``at`` seconds on, the disk is of that tier
    #: (its tenant chose another); before the first, of ``tier``
    tier_changes: tuple[tuple[float, str], ...] = ()

    def tier_at(self, t: float) -> str:
        """The tier of the disk at time ``t``."""
        current = self.tier
        for at, tier in self.tier_changes:
            if at <= t + 1e-9:
                current = tier
        return current


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    duration_s: float
    interval_s: float
    tick_s: float
    domain: Domain
    tiers: dict[str, base.Tier]
    vms: tuple[Vm, ...]
    policies: dict[str, dict[str, Any]] = dataclasses.field(
        default_factory=dict)

    def change_times(self) -> list[float]:
        """Every load and tier change (0, the start, included)."""
        times = {0.0}
        for vm in self.vms:
            for job in vm.jobs:
                times.update(job.change_times(self.duration_s))
            times.update(at for at, _tier in vm.tier_changes
                         if at < self.duration_s)
        return sorted(times)


def names() -> list[str]:
    """The scenarios shipped with iotguard."""
    files = importlib.resources.files(PACKAGE).iterdir()
    return sorted(f.name[:-len(SUFFIX)] for f in files
                  if f.name.endswith(SUFFIX))


def load(name_or_path: str) -> Scenario:
    """Load a shipped scenario by name, or any scenario file by path."""
    source = name_or_path
    if os.sep in name_or_path or name_or_path.endswith(SUFFIX):
        try:
            with open(name_or_path, encoding='utf-8') as f:
                text = f.read()
        except OSError as e:
            raise exception.InvalidScenario(source=source, field='file',
                                            reason=e.strerror or str(e))
    else:
        resource = importlib.resources.files(PACKAGE).joinpath(
            name_or_path + SUFFIX)
        if not resource.is_file():
            raise exception.InvalidScenario(
                source=source, field='name',
                reason='no such scenario; known: %s' % ', '.join(names()))
        text = resource.read_text(encoding='utf-8')
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise exception.InvalidScenario(source=source, field='file',
                                        reason='not valid YAML: %s' % e)
    return parse(data, source)


class _Reader:
    """Reads one mapping, naming each field by its path on error."""

    def __init__(self, data: Any, path: str, source: str) -> None:
        self.source = source
        self.path = path
        if not isinstance(data, dict):
            self.fail(path or 'scenario', 'must be a mapping')
        self.data: dict[str, Any] = data
        self.used: set[str] = set()

    def fail(self, field: str, reason: str) -> None:
        raise exception.InvalidScenario(source=self.source, field=field,
                                        reason=reason)

    def name(self, key: str) -> str:
        return '%s.%s' % (self.path, key) if self.path else key

    def sub(self, key: str, default: Any = ...) -> '_Reader':
        """A reader of the mapping at ``key``."""
        return _Reader(self.get(key, default), self.name(key), self.source)

    def each(self, key: str, values: list[Any]) -> list['_Reader']:
        """Readers of the mappings of the list at ``key`` (``values``)."""
        return [_Reader(v, '%s[%d]' % (self.name(key), i), self.source)
                for i, v in enumerate(values)]

    def get(self, key: str, default: Any = ...) -> Any:
        self.used.add(key)
        if key not in self.data:
            if default is ...:
                self.fail(self.name(key), 'missing')
            return default
        return self.data[key]

    def number(self, key: str, default: Any = ..., minimum: float = 0.0,
               strict: bool = False) -> Any:
        """A finite number >= (or >) ``minimum``; None only by default."""
        value = self.get(key, default)
        if value is None and default is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(self.name(key), 'must be a number, not %r' % (value,))
        if not math.isfinite(value) or value < minimum or (
                strict and value == minimum):
            self.fail(self.name(key), 'must be %s %s, not %r'
                      % ('>' if strict else '>=', minimum, value))
        return float(value)

    def integer(self, key: str, default: Any = ..., minimum: int = 0) -> int:
        value = self.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(self.name(key), 'must be an integer, not %r' % (value,))
        if value < minimum:
            self.fail(self.name(key), 'must be >= %d, not %r'
                      % (minimum, value))
        return int(value)

    def string(self, key: str, default: Any = ...) -> Any:
        value = self.get(key, default)
        if value is default:
            return value
        if not isinstance(value, str) or not value:
            self.fail(self.name(key), 'must be a non-empty string, not %r'
                      % (value,))
        return value

    def items(self, key: str) -> list[Any]:
        value = self.get(key)
        if not isinstance(value, list) or not value:
            self.fail(self.name(key), 'must be a non-empty list')
        return list(value)

    def done(self) -> None:
        unknown = sorted(set(self.data) - self.used)
        if unknown:
            self.fail(self.name(unknown[0]), 'unknown key')


def _domain(r: _Reader) -> Domain:
    domain = Domain(
        name=r.string('name'),
        iops_4k=r.number('iops_4k', strict=True),
        bytes_sec=r.number('bytes_sec', strict=True),
        sat_depth=r.number('sat_depth', 1.0, strict=True),
        depth_exponent=r.number('depth_exponent', 0.0),
        share_exponent=r.number('share_exponent', 1.0, strict=True),
        noise=r.number('noise', 0.0),
        form=r.string('form', base.ADDITIVE))
    if domain.form not in base.FORMS:
        r.fail(r.name('form'), 'must be one of %s, not %r'
               % (', '.join(base.FORMS), domain.form))
    r.done()
    return domain


def _tier(r: _Reader) -> base.Tier:
    values = {key: r.number(key, 0.0) for key in (
        'min_iops', 'min_bytes_sec', 'max_iops', 'max_bytes_sec',
        *base.PER_GB, *base.BURST, 'latency_p99_ms')}
    for low, high in (('min_iops', 'max_iops'),
                      ('min_bytes_sec', 'max_bytes_sec'),
                      ('min_iops_per_gb', 'max_iops_per_gb'),
                      ('min_bytes_sec_per_gb', 'max_bytes_sec_per_gb')):
        if values[high] and values[low] > values[high]:
            r.fail(r.name(low), 'is above %s' % high)
    name = r.string('name')
    try:
        weight = r.number('weight', 1.0, strict=True)
        tier = base.Tier(name=name, weight=weight, **values)
    except ValueError as e:
        r.fail(r.name('burst_factor'), str(e))
    r.done()
    return tier


def _step(r: _Reader) -> Step:
    step = Step(at=r.number('at'), processes=r.integer('processes'),
                rate_kbs=r.number('rate_kbs', None, strict=True))
    r.done()
    return step


def _job(r: _Reader) -> Job:
    rw = r.string('rw', 'randwrite')
    if rw not in RW_MODES:
        r.fail(r.name('rw'), 'must be one of %s, not %r'
               % (', '.join(sorted(RW_MODES)), rw))
    read_fraction = RW_MODES[rw]
    if read_fraction is None:
        read_fraction = r.number('rwmixread', 50.0) / 100.0
        if read_fraction > 1.0:
            r.fail(r.name('rwmixread'), 'must be <= 100')
    bs = r.integer('bs', minimum=512)
    iodepth = r.integer('iodepth', 1, minimum=1)
    rate = r.number('rate_kbs', None, strict=True)
    period = r.number('period_s', None, strict=True)
    think = r.number('think_ms', 0.0)
    if 'steps' in r.data:
        if 'processes' in r.data:
            r.fail(r.name('steps'), 'give processes or steps, not both')
        steps = [_step(s) for s in r.each('steps', r.items('steps'))]
    else:
        steps = [Step(at=0.0, processes=r.integer('processes', 1))]
    r.used.add('processes')
    steps = [dataclasses.replace(s, rate_kbs=rate) if s.rate_kbs is None
             else s for s in steps]
    ats = [s.at for s in steps]
    if ats != sorted(ats) or len(set(ats)) != len(ats):
        r.fail(r.name('steps'), 'the "at" times must be strictly increasing')
    if period is not None and ats[-1] >= period:
        r.fail(r.name('period_s'), 'must be after the last step')
    r.done()
    return Job(bs=bs, read_fraction=read_fraction, iodepth=iodepth,
               steps=tuple(steps), period_s=period, think_ms=think)


def _limits(r: _Reader) -> dict[str, int]:
    limits = dict.fromkeys(caps.IOTUNE_KEYS, 0)
    for key, value in r.data.items():
        if key not in caps.IOTUNE_KEYS:
            r.fail(r.name(key), 'unknown iotune key; known: %s'
                   % ', '.join(caps.IOTUNE_KEYS))
        limits[key] = r.integer(key)
    try:
        caps.check_limits(limits)
    except exception.InvalidCap as e:
        r.fail(r.path, e.kwargs['reason'])
    return limits


def _vms(r: _Reader, tiers: dict[str, base.Tier],
         scenario_name: str) -> list[Vm]:
    count = r.integer('count', 1, minimum=1)
    name = r.string('name')
    tier = r.string('tier')
    if tier not in tiers:
        r.fail(r.name('tier'), 'unknown tier %r; known: %s'
               % (tier, ', '.join(sorted(tiers))))
    jobs = tuple(_job(j) for j in r.each('jobs', r.get('jobs', [])))
    limits = _limits(r.sub('limits', {}))
    role = r.string('role', 'tenant')
    host = r.string('host', 'host1')
    project = r.string('project_id', 'project-' + scenario_name)
    dev = r.string('dev', 'vda')
    volume = r.string('volume_id', None)
    size = r.number('size_gib', None, strict=True)
    changes: list[tuple[float, str]] = []
    listed = r.get('tier_changes', [])
    if not isinstance(listed, list):
        r.fail(r.name('tier_changes'), 'must be a list')
    for c in r.each('tier_changes', listed):
        at, to = c.number('at'), c.string('tier')
        if to not in tiers:
            c.fail(c.name('tier'), 'unknown tier %r; known: %s'
                   % (to, ', '.join(sorted(tiers))))
        if changes and at <= changes[-1][0]:
            c.fail(c.name('at'), 'the "at" times must be strictly '
                   'increasing')
        c.done()
        changes.append((at, to))
    r.done()
    names = [name] if count == 1 else ['%s-%d' % (name, k + 1)
                                       for k in range(count)]
    return [Vm(name=n, role=role, host=host, tier=tier, project_id=project,
               dev=dev, volume_id=volume, limits=limits, jobs=jobs,
               size_gib=size, tier_changes=tuple(changes))
            for n in names]


def _policies(r: _Reader) -> dict[str, dict[str, Any]]:
    """Per-policy parameters for this scenario, checked by building each."""
    result: dict[str, dict[str, Any]] = {}
    for name, params in r.data.items():
        field = r.name(str(name))
        if name not in policy.names():
            r.fail(field, 'unknown policy; known: %s'
                   % ', '.join(policy.names()))
        if not isinstance(params, dict):
            r.fail(field, 'must be a mapping of parameters')
        try:
            policy.load(name, **params)
        except (TypeError, ValueError) as e:
            r.fail(field, 'bad parameters: %s' % e)
        result[name] = dict(params)
    return result


def parse(data: Any, source: str = '<data>') -> Scenario:
    """Validate a scenario's data (as YAML loads it) into a Scenario."""
    r = _Reader(data, '', source)
    name = r.string('name')
    description = r.string('description', '')
    duration = r.number('duration_s', strict=True)
    interval = r.number('interval_s', 5.0, strict=True)
    tick = r.number('tick_s', 0.02, strict=True)
    if tick > interval:
        r.fail('tick_s', 'must not exceed interval_s')
    if abs(interval / tick - round(interval / tick)) > 1e-6:
        r.fail('tick_s', 'must divide interval_s')
    domain = _domain(r.sub('domain'))
    tiers: dict[str, base.Tier] = {}
    for t in r.each('tiers', r.items('tiers')):
        tier = _tier(t)
        if tier.name in tiers:
            r.fail(t.name('name'), 'duplicate tier %r' % tier.name)
        tiers[tier.name] = tier
    vms: list[Vm] = []
    for v in r.each('vms', r.items('vms')):
        vms.extend(_vms(v, tiers, name))
    policies = _policies(r.sub('policies', {}))
    seen: set[str] = set()
    for vm in vms:
        if vm.name in seen:
            r.fail('vms', 'duplicate VM name %r' % vm.name)
        seen.add(vm.name)
    r.done()
    return Scenario(name=name, description=description, duration_s=duration,
                    interval_s=interval, tick_s=tick, domain=domain,
                    tiers=tiers, vms=tuple(vms), policies=policies)
