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

"""The controller's in-memory sample store: the latest sample per disk.

Every source (agents' ``report_samples``, Ceilometer, Gnocchi) feeds the
same store. A per-disk sample arrives in the shape of
:data:`iotguard.caps.SAMPLE_SCHEMA`, its ``timestamp`` the source's own
time of measurement (UNIX seconds), and is checked **once**, by
:func:`decode`, into a typed :class:`Sample` record; a malformed one
(schema, or a NaN or infinite number) is refused there, logged by the
caller (a rate above :data:`iotguard.caps.MAX_RATE` is malformed too).
The store keeps, per disk ``(instance_uuid, dev)``, only the
newest sample, and refuses (logs and returns ``False``):

* one from the future, more than ``max_skew_s`` after its arrival;
* one already stale on arrival (see below);
* a duplicate, or one not newer than the sample it would replace.

**Columnar.** The store holds no dict per sample: each disk has one row
in NumPy columns (timestamp, the rates, the static ceilings already
reduced to the total IOPS and bytes/s the decision uses, ...), grown by
doubling, and the decision loop reads a domain's rows at once with
:meth:`SampleStore.gather`. :meth:`SampleStore.latest` rebuilds one
sample's dict for the API-free callers (tests, the all-in-one).

**Staleness.** A sample is stale when it is older than
:data:`iotguard.rates.STALE_INTERVALS` (3) intervals, the interval being
the larger of the controller's decision interval and the sample's own
``interval_s`` (a Ceilometer sample that covers 300 s stays usable
longer than an agent's 5 s one). A policy must never tighten a cap on
stale data; the decision loop flags such disks in the snapshot. A sample
with a ``gap`` (first reading, counter reset after a reboot, ...) has no
rates: it is stored, so it replaces older rates that no longer describe
the disk, and :func:`has_rates` (or ``gather``'s ``stale``) tells the
loop it says nothing about the load.

Thread-safe: the RPC server's threads add while the loop reads.
"""

import math
import re
import threading
import time
import typing

import numpy as np
from oslo_log import log as logging

from iotguard import caps
from iotguard import exception
from iotguard import rates

LOG = logging.getLogger(__name__)

#: Default tolerated clock skew between a source and the controller.
MAX_SKEW_S = 2.0

RATES = ('read_iops', 'write_iops', 'read_bytes_sec', 'write_bytes_sec',
         'read_latency_ms', 'write_latency_ms', 'flush_ops')


class Sample(typing.NamedTuple):
    """One disk's sample, checked (:func:`decode`); wire form: the dict.

    Rates are ``None`` when the interval has none (``gap`` says why).
    """

    instance_uuid: str
    dev: str
    timestamp: float
    interval_s: float | None
    gap: str | None
    read_iops: float | None
    write_iops: float | None
    read_bytes_sec: float | None
    write_bytes_sec: float | None
    read_latency_ms: float | None
    write_latency_ms: float | None
    flush_ops: float | None
    static: dict[str, int]
    cap: dict[str, int] | None
    volume_id: str | None = None
    project_id: str | None = None
    lease_expires_at: float | None = None
    decision_id: str | None = None
    source: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return self.instance_uuid, self.dev

    def to_wire(self) -> dict[str, typing.Any]:
        """The dict form (:data:`iotguard.caps.SAMPLE_SCHEMA`)."""
        wire = self._asdict()
        if wire['source'] is None:
            del wire['source']
        return wire


_UUID = re.compile(caps.DISK_SCHEMA['properties']['instance_uuid']['pattern'])
_DEV = re.compile(caps.DISK_SCHEMA['properties']['dev']['pattern'])
_MAX_LIMIT = caps.LIMITS_SCHEMA['properties']['total_iops_sec']['maximum']
_MAX_RATE = caps.MAX_RATE
_KEYS = frozenset(caps.IOTUNE_KEYS)
_NUMBER = (int, float)
_isfinite = math.isfinite


def _limits(value):
    return type(value) is dict and all(
        k in _KEYS and type(v) is int and 0 <= v <= _MAX_LIMIT
        for k, v in value.items())


def _fast(obj):
    """The record when ``obj`` is plainly valid and finite, else None.

    A few microseconds per sample (jsonschema takes about 150 us, too much
    for 50,000 disks every 5 s). It accepts nothing the schema refuses
    (a property test holds it to that); what it does not accept goes to
    the schema, which says why or accepts a rarer form (``1.0`` as an
    integer limit).
    """
    if type(obj) is not dict:
        return None
    get = obj.get
    uuid, dev, stamp = get('instance_uuid'), get('dev'), get('timestamp')
    if not (type(uuid) is str and _UUID.match(uuid) and type(dev) is str
            and _DEV.match(dev) and type(stamp) in _NUMBER
            and _isfinite(stamp) and 'gap' in obj):
        return None
    rates = []
    for key in RATES:
        value = get(key, obj)
        if value is None:
            rates.append(None)
        elif type(value) in _NUMBER and 0 <= value <= _MAX_RATE:
            rates.append(value)
        else:
            return None   # missing (obj itself), negative, NaN, ...
    gap, interval = obj['gap'], get('interval_s', obj)
    if interval is obj:
        interval = None
    elif not (type(interval) in _NUMBER and _isfinite(interval)):
        return None
    lease = get('lease_expires_at')
    if lease is not None and not (type(lease) in _NUMBER
                                  and _isfinite(lease)):
        return None
    strings = (gap, get('volume_id'), get('project_id'),
               get('decision_id'), get('source'))
    for value in strings:
        if value is not None and type(value) is not str:
            return None
    static, cap = get('static', obj), get('cap', obj)
    if not (_limits(static) and (cap is None or _limits(cap))):
        return None
    return Sample(uuid, dev, stamp, interval, gap, *rates, static, cap,
                  strings[1], strings[2], lease, strings[3], strings[4])


def _number(value):
    return None if value is None else float(value)


def decode(obj):
    """The :class:`Sample` of a wire sample, or raise Invalid (the reason).

    The one check of an incoming sample: :data:`iotguard.caps.
    SAMPLE_SCHEMA` and finite numbers.
    """
    record = _fast(obj)
    if record is not None:
        return record
    caps.validate_sample(obj)
    bad = [k for k in ('timestamp', 'interval_s', 'lease_expires_at')
           + RATES if obj.get(k) is not None and not _isfinite(obj[k])]
    if bad:
        raise exception.Invalid(reason='sample: not a finite number: %s'
                                % ', '.join(bad))
    return Sample(
        obj['instance_uuid'], obj['dev'], float(obj['timestamp']),
        _number(obj.get('interval_s')), obj['gap'],
        *(_number(obj[k]) for k in RATES),
        {k: int(v) for k, v in obj['static'].items()},
        None if obj['cap'] is None else {
            k: int(v) for k, v in obj['cap'].items()},
        obj.get('volume_id'), obj.get('project_id'),
        _number(obj.get('lease_expires_at')), obj.get('decision_id'),
        obj.get('source') if isinstance(obj.get('source'), str) else None)


def has_rates(sample):
    """Whether ``sample`` (a dict or None) carries rates (no ``gap``)."""
    return sample is not None and sample.get('gap') is None and \
        sample.get('read_iops') is not None


def ceiling(static, kind):
    """A disk's static total ceiling of ``kind`` (``inf`` when none).

    ``static`` holds iotune keys; ``kind`` is ``iops_sec`` or
    ``bytes_sec``. Read and write ceilings add up when both are set.
    """
    total = static.get('total_' + kind, 0)
    if total:
        return float(total)
    read, write = static.get('read_' + kind, 0), static.get('write_' + kind, 0)
    return float(read + write) if read and write else math.inf


class Columns(typing.NamedTuple):
    """What the decision loop reads of some disks' samples, by position.

    Rates as sent (``nan`` where none, or no sample); ``static_*`` the
    static total ceilings (``inf`` when none); ``stale``: no sample, a
    sample without rates (gap) or a stale one.
    """

    timestamp: np.ndarray
    read_iops: np.ndarray
    write_iops: np.ndarray
    read_bytes_sec: np.ndarray
    write_bytes_sec: np.ndarray
    read_latency_ms: np.ndarray
    write_latency_ms: np.ndarray
    static_iops: np.ndarray
    static_bytes_sec: np.ndarray
    stale: np.ndarray


#: The float columns of the store, in row order of a record's values.
_FLOAT_COLUMNS = ('timestamp', 'interval_s') + RATES + (
    'static_iops', 'static_bytes_sec', 'rated')
_NAN = math.nan


class SampleStore:
    """The newest sample of every disk, one row per ``(instance_uuid, dev)``.

    Float columns (``nan`` for "none"), plus per row the few strings and
    dicts a sample carries, kept as one tuple.
    """

    def __init__(self, interval_s, clock=time.time, max_skew_s=MAX_SKEW_S,
                 capacity=1024):
        if not interval_s > 0:
            raise ValueError('interval_s must be > 0, not %r' % interval_s)
        self.interval_s = float(interval_s)
        self.max_skew_s = float(max_skew_s)
        self._clock = clock
        self._lock = threading.Lock()
        self._rows = {}        # (instance_uuid, dev) -> row
        self._free = []        # rows of forgotten disks
        self._meta = []        # row -> (gap, static, cap, volume_id, ...)
        self._cols = np.full((len(_FLOAT_COLUMNS), max(1, capacity)), _NAN)
        self.rejected = 0

    # -- staleness ----------------------------------------------------------

    def stale_after_s(self, sample):
        """Age in seconds beyond which ``sample`` (a dict) is stale."""
        own = sample.get('interval_s') or 0.0
        return rates.STALE_INTERVALS * max(self.interval_s, float(own))

    def is_stale(self, sample, now):
        """True when ``sample`` (a dict) is older than 3 intervals."""
        if sample is None:
            return True
        return now - sample['timestamp'] > self.stale_after_s(sample)

    def _limit_s(self, own_interval):
        return rates.STALE_INTERVALS * max(self.interval_s,
                                           own_interval or 0.0)

    # -- adding -------------------------------------------------------------

    def _refuse(self, key, why, *args):
        self.rejected += 1
        LOG.warning('Sample of %s/%s refused: ' + why, key[0], key[1],
                    *args)
        return False

    def add(self, sample, received_at=None):
        """Store one sample (a wire dict or a :class:`Sample`).

        True when stored; False (logged) when malformed, from the future,
        stale on arrival, or not newer than the one held.
        """
        if type(sample) is not Sample:
            try:
                sample = decode(sample)
            except exception.Invalid as e:
                disk = sample if isinstance(sample, dict) else {}
                return self._refuse((disk.get('instance_uuid'),
                                     disk.get('dev')), '%s', e)
        return self.add_many([sample], received_at) == 1

    def add_many(self, records, received_at=None):
        """Store :class:`Sample` records (checked); how many were stored."""
        now = self._clock() if received_at is None else received_at
        accepted = []
        for record in records:
            stamp = record.timestamp
            if stamp > now + self.max_skew_s:
                self._refuse(record.key, 'timestamp %.3f is %.1f s in the '
                             'future', stamp, stamp - now)
            elif now - stamp > self._limit_s(record.interval_s):
                self._refuse(record.key, 'timestamp %.3f is %.1f s old, '
                             'stale', stamp, now - stamp)
            else:
                accepted.append(record)
        if not accepted:
            return 0
        stored = 0
        with self._lock:
            rows, values, batch = self._rows, {}, {}   # by row; row -> stamp
            for record in accepted:
                key = record.key
                row = rows.get(key)
                if row is None:
                    row = rows[key] = self._new_row()
                    batch[row] = record.timestamp
                else:
                    latest = batch.get(row)
                    if latest is None:
                        latest = self._cols[0, row]
                    if record.timestamp <= latest:
                        self._refuse(key, '%s (timestamp %.3f, latest %.3f)',
                                     'duplicate' if record.timestamp == latest
                                     else 'older than the latest',
                                     record.timestamp, latest)
                        continue
                    batch[row] = record.timestamp
                static = record.static
                values[row] = (row, record[2], record[3], *record[5:12],
                               ceiling(static, 'iops_sec') if static
                               else math.inf,
                               ceiling(static, 'bytes_sec') if static
                               else math.inf,
                               record.gap is None
                               and record.read_iops is not None)
                self._meta[row] = (record.gap, static, record.cap,
                                   record.volume_id, record.project_id,
                                   record.lease_expires_at,
                                   record.decision_id, record.source)
                stored += 1
            if values:
                # None -> nan; a row twice in a batch: its newest values
                table = np.array(list(values.values()), dtype=np.float64)
                self._cols[:, table[:, 0].astype(np.intp)] = table[:, 1:].T
        return stored

    def _new_row(self):
        if self._free:
            return self._free.pop()
        row = len(self._meta)
        if row >= self._cols.shape[1]:
            grown = np.full((len(_FLOAT_COLUMNS), 2 * self._cols.shape[1]),
                            _NAN)
            grown[:, :row] = self._cols
            self._cols = grown
        self._meta.append(None)
        return row

    # -- reading ------------------------------------------------------------

    def latest(self, instance_uuid, dev):
        """The newest sample of a disk as a wire dict (a copy), or None."""
        with self._lock:
            row = self._rows.get((instance_uuid, dev))
            if row is None:
                return None
            values = self._cols[:, row].tolist()
            meta = self._meta[row]
        floats = dict(zip(_FLOAT_COLUMNS, values))
        gap, static, cap, volume_id, project_id, lease, decision_id, \
            source = meta
        sample = {'instance_uuid': instance_uuid, 'dev': dev,
                  'timestamp': floats['timestamp'],
                  'interval_s': (None if math.isnan(floats['interval_s'])
                                 else floats['interval_s']),
                  'gap': gap, 'static': dict(static),
                  'cap': None if cap is None else dict(cap),
                  'volume_id': volume_id, 'project_id': project_id,
                  'lease_expires_at': lease, 'decision_id': decision_id}
        for key in RATES:
            sample[key] = None if math.isnan(floats[key]) else floats[key]
        if source is not None:
            sample['source'] = source
        return sample

    def gather(self, keys, now):
        """The :class:`Columns` of ``keys`` (``(instance_uuid, dev)``)."""
        n = len(keys)
        with self._lock:
            get = self._rows.get
            rows = np.fromiter((get(key, -1) for key in keys), np.intp, n)
            known = rows >= 0
            cols = self._cols[:, np.where(known, rows, 0)]
        cols[:, ~known] = _NAN
        (stamp, interval, r_iops, w_iops, r_bytes, w_bytes, r_lat, w_lat,
         _flush, s_iops, s_bytes, rated) = cols
        limit = rates.STALE_INTERVALS * np.fmax(self.interval_s, interval)
        with np.errstate(invalid='ignore'):
            stale = ~known | (rated != 1.0) | (now - stamp > limit)
        return Columns(
            timestamp=stamp, read_iops=r_iops, write_iops=w_iops,
            read_bytes_sec=r_bytes, write_bytes_sec=w_bytes,
            read_latency_ms=r_lat, write_latency_ms=w_lat,
            static_iops=np.where(known, s_iops, math.inf),
            static_bytes_sec=np.where(known, s_bytes, math.inf),
            stale=stale)

    # -- forgetting ---------------------------------------------------------

    def _drop(self, key):
        row = self._rows.pop(key, None)
        if row is not None:
            self._cols[:, row] = _NAN
            self._meta[row] = None
            self._free.append(row)

    def forget(self, instance_uuid, dev):
        """Drop what is known of a disk (deleted, moved away)."""
        with self._lock:
            self._drop((instance_uuid, dev))

    def prune(self, now):
        """Drop every stale sample; returns how many (bounds memory)."""
        with self._lock:
            if not self._rows:
                return 0
            keys = list(self._rows)
            rows = np.fromiter(self._rows.values(), np.intp, len(keys))
            stamp, interval = self._cols[0, rows], self._cols[1, rows]
            limit = rates.STALE_INTERVALS * np.fmax(self.interval_s, interval)
            old = np.flatnonzero(now - stamp > limit)
            for i in old:
                self._drop(keys[i])
            return len(old)

    def __len__(self):
        with self._lock:
            return len(self._rows)
