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
:func:`decode`, into a typed :class:`iotguard.caps.Sample` record; a
malformed one (schema, or a NaN or infinite number) is refused there,
logged by the caller (a rate above :data:`iotguard.caps.MAX_RATE` is
malformed too).
The store keeps, per disk ``(instance_uuid, dev)``, only the
newest sample, and refuses (logs and returns ``False``):

* one from the future, more than ``max_skew_s`` after its arrival;
* one already stale on arrival (see below);
* a duplicate, or one not newer than the sample it would replace.

**Columnar.** The store holds no dict per sample: each disk has one row
in NumPy columns (timestamp, the rates, the static ceilings already
reduced to the total IOPS and bytes/s the decision uses, the iotune
values of the static limits and of the cap, the few strings), grown by
doubling. Its one way in is :meth:`SampleStore.add_batch`, a checked
:class:`iotguard.batch.Batch` (an agent's batch in columns, decoded at
once); :class:`iotguard.caps.Sample` records of the other forms go
through :func:`to_batch`. The decision loop reads a domain's rows at
once with :meth:`SampleStore.gather`; :meth:`SampleStore.latest` rebuilds one
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

import numpy as np
from oslo_log import log as logging

from iotguard import batch as batch_mod
from iotguard import caps
from iotguard import exception
from iotguard.policy import base
from iotguard import rates

LOG = logging.getLogger(__name__)

#: Default tolerated clock skew between a source and the controller.
MAX_SKEW_S = 2.0

RATES = batch_mod.RATES


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
    return caps.Sample(uuid, dev, stamp, interval, gap, *rates, static, cap,
                       strings[1], strings[2], lease, strings[3],
                       strings[4])


def _number(value):
    return None if value is None else float(value)


def decode(obj):
    """The :class:`iotguard.caps.Sample` of a wire sample, or raise Invalid.

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
    return caps.Sample(
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


#: The float columns of the store, by row of ``SampleStore._cols``.
_FLOAT_COLUMNS = ('timestamp', 'interval_s') + RATES + (
    'static_iops', 'static_bytes_sec', 'rated', 'capped',
    'lease_expires_at')
#: The string columns (``SampleStore._strings``).
_STRING_COLUMNS = ('gap', 'volume_id', 'project_id', 'decision_id',
                   'source')
_NAN = math.nan


def _ceilings(static, kind):
    """:func:`iotguard.caps.ceiling` of every disk (a Batch's int rows)."""
    total, read, write = (static[batch_mod.KEY_ROW['%s_%s' % (d, kind)]]
                          for d in ('total', 'read', 'write'))
    both = np.where((read > 0) & (write > 0), read + write, 0)
    out = np.where(total > 0, total, both).astype(np.float64)
    out[out == 0] = math.inf
    return out


def _matrix(rows, width, n, dtype):
    """``rows`` (n tuples of ``width`` values) as a ``width x n`` array."""
    return np.array(rows, dtype=dtype).reshape(n, width).T


def to_batch(records):
    """The :class:`iotguard.batch.Batch` of :class:`iotguard.caps.Sample` s."""
    n = len(records)
    return batch_mod.Batch(
        [r.instance_uuid for r in records], [r.dev for r in records],
        np.array([r.timestamp for r in records], dtype=np.float64),
        np.array([r.interval_s for r in records], dtype=np.float64),
        [r.gap for r in records],
        _matrix([r.rates for r in records], len(RATES), n, np.float64),
        batch_mod.limit_matrix([r.static for r in records]),
        batch_mod.limit_matrix([r.cap for r in records]),
        np.array([r.cap is not None for r in records], dtype=bool),
        np.array([r.lease_expires_at for r in records], dtype=np.float64),
        [r.decision_id for r in records], [r.volume_id for r in records],
        [r.project_id for r in records], [r.source for r in records])


def _objects(values):
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


class SampleStore:
    """The newest sample of every disk, one row per ``(instance_uuid, dev)``.

    Columns only: floats (``nan`` for "none"), the static ceilings and
    the cap as iotune integers, and the few strings a sample carries.
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
        self._size = 0         # rows in use or free
        capacity = max(1, capacity)
        self._cols = np.full((len(_FLOAT_COLUMNS), capacity), _NAN)
        self._limits = np.zeros((2 * len(caps.IOTUNE_KEYS), capacity),
                                dtype=np.int64)    # static, then cap
        self._strings = np.full((len(_STRING_COLUMNS), capacity), None,
                                dtype=object)
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
        """Staleness limits of an array of intervals (``nan``: none)."""
        return rates.STALE_INTERVALS * np.fmax(self.interval_s, own_interval)

    # -- adding -------------------------------------------------------------

    def _refuse(self, key, why, *args):
        self.rejected += 1
        LOG.warning('Sample of %s/%s refused: ' + why, key[0], key[1],
                    *args)
        return False

    def add(self, sample, received_at=None):
        """Store one sample (a wire dict or a :class:`~iotguard.caps.Sample`).

        True when stored; False (logged) when malformed, from the future,
        stale on arrival, or not newer than the one held.
        """
        if type(sample) is not caps.Sample:
            try:
                sample = decode(sample)
            except exception.Invalid as e:
                disk = sample if isinstance(sample, dict) else {}
                return self._refuse((disk.get('instance_uuid'),
                                     disk.get('dev')), '%s', e)
        return self.add_many([sample], received_at) == 1

    def add_many(self, records, received_at=None):
        """Store checked :class:`iotguard.caps.Sample` s; how many stored."""
        return self.add_batch(to_batch(records), received_at)

    def add_batch(self, batch, received_at=None):
        """Store a checked :class:`iotguard.batch.Batch`; how many stored.

        Refused (each logged): a sample from the future, one stale on
        arrival, one not newer than the disk's latest (also when a disk
        comes twice in the batch: in order, as if sent one by one).
        """
        now = self._clock() if received_at is None else received_at
        stamp = batch.timestamp
        with np.errstate(invalid='ignore'):
            future = stamp > now + self.max_skew_s
            stale = now - stamp > self._limit_s(batch.interval_s)
        bad = future | stale
        if bad.any():
            keys = batch.instance_uuid, batch.dev
            for i in np.flatnonzero(bad).tolist():
                key = keys[0][i], keys[1][i]
                if future[i]:
                    self._refuse(key, 'timestamp %.3f is %.1f s in the '
                                 'future', stamp[i], stamp[i] - now)
                else:
                    self._refuse(key, 'timestamp %.3f is %.1f s old, '
                                 'stale', stamp[i], now - stamp[i])
            batch = batch.take(np.flatnonzero(~bad))
        if not len(batch):
            return 0
        values = np.vstack((
            batch.timestamp, batch.interval_s, batch.rates,
            _ceilings(batch.static, 'iops_sec'),
            _ceilings(batch.static, 'bytes_sec'),
            np.fromiter((g is None for g in batch.gap), bool, len(batch))
            & ~np.isnan(batch.rates[0]),
            batch.capped, batch.lease_expires_at))
        limits = np.vstack((batch.static, batch.cap))
        strings = np.vstack([_objects(column) for column in (
            batch.gap, batch.volume_id, batch.project_id, batch.decision_id,
            batch.source)])
        stored = 0
        with self._lock:
            rows = self._rows_of(batch.keys())
            for index in self._generations(rows):
                stored += self._write(rows[index], index, batch, values,
                                      limits, strings)
        return stored

    def _rows_of(self, keys):
        get, rows = self._rows.get, []
        for key in keys:
            row = get(key)
            if row is None:
                row = self._rows[key] = self._new_row()
            rows.append(row)
        return np.array(rows, dtype=np.intp)

    @staticmethod
    def _generations(rows):
        """Positions of a batch's rows: first sightings, then repeats."""
        if len(np.unique(rows)) == len(rows):
            return [np.arange(len(rows))]
        seen, nth = {}, []
        for row in rows.tolist():
            nth.append(seen.get(row, 0))
            seen[row] = nth[-1] + 1
        nth = np.array(nth)
        return [np.flatnonzero(nth == k) for k in range(nth.max() + 1)]

    def _write(self, rows, index, batch, values, limits, strings):
        stamp = values[0, index]
        latest = self._cols[0, rows]
        newer = np.isnan(latest) | (stamp > latest)
        for i in np.flatnonzero(~newer).tolist():
            self._refuse((batch.instance_uuid[index[i]],
                          batch.dev[index[i]]),
                         '%s (timestamp %.3f, latest %.3f)',
                         'duplicate' if stamp[i] == latest[i]
                         else 'older than the latest', stamp[i], latest[i])
        rows, index = rows[newer], index[newer]
        self._cols[:, rows] = values[:, index]
        self._limits[:, rows] = limits[:, index]
        self._strings[:, rows] = strings[:, index]
        return len(rows)

    def _new_row(self):
        if self._free:
            return self._free.pop()
        row = self._size
        capacity = self._cols.shape[1]
        if row >= capacity:
            self._cols = np.hstack((self._cols, np.full(
                (self._cols.shape[0], capacity), _NAN)))
            self._limits = np.hstack((self._limits, np.zeros_like(
                self._limits)))
            self._strings = np.hstack((self._strings, np.full(
                self._strings.shape, None, dtype=object)))
        self._size += 1
        return row

    # -- reading ------------------------------------------------------------

    def latest(self, instance_uuid, dev):
        """The newest sample of a disk as a wire dict (a copy), or None."""
        with self._lock:
            row = self._rows.get((instance_uuid, dev))
            if row is None:
                return None
            floats = dict(zip(_FLOAT_COLUMNS, self._cols[:, row].tolist()))
            limits = self._limits[:, row].tolist()
            strings = dict(zip(_STRING_COLUMNS,
                               self._strings[:, row].tolist()))
        keys, width = caps.IOTUNE_KEYS, len(caps.IOTUNE_KEYS)

        def none_if_nan(value):
            return None if math.isnan(value) else value

        sample = {'instance_uuid': instance_uuid, 'dev': dev,
                  'timestamp': floats['timestamp'],
                  'interval_s': none_if_nan(floats['interval_s']),
                  'gap': strings['gap'],
                  'static': {k: v for k, v in zip(keys, limits) if v},
                  'cap': ({k: v for k, v in zip(keys, limits[width:]) if v}
                          if floats['capped'] else None),
                  'volume_id': strings['volume_id'],
                  'project_id': strings['project_id'],
                  'lease_expires_at': none_if_nan(
                      floats['lease_expires_at']),
                  'decision_id': strings['decision_id']}
        for key in RATES:
            sample[key] = none_if_nan(floats[key])
        if strings['source'] is not None:
            sample['source'] = strings['source']
        return sample

    def gather(self, keys, now):
        """The :class:`~iotguard.policy.base.SampleColumns` of ``keys``.

        ``keys``: ``(instance_uuid, dev)``, the order of the columns.
        """
        n = len(keys)
        with self._lock:
            get = self._rows.get
            rows = np.fromiter((get(key, -1) for key in keys), np.intp, n)
            known = rows >= 0
            cols = self._cols[:, np.where(known, rows, 0)]
        cols[:, ~known] = _NAN
        col = dict(zip(_FLOAT_COLUMNS, cols))
        limit = self._limit_s(col['interval_s'])
        with np.errstate(invalid='ignore'):
            stale = ~known | (col['rated'] != 1.0) | (
                now - col['timestamp'] > limit)
        return base.SampleColumns(
            timestamp=col['timestamp'], read_iops=col['read_iops'],
            write_iops=col['write_iops'],
            read_bytes_sec=col['read_bytes_sec'],
            write_bytes_sec=col['write_bytes_sec'],
            read_latency_ms=col['read_latency_ms'],
            write_latency_ms=col['write_latency_ms'],
            static_iops=np.where(known, col['static_iops'], math.inf),
            static_bytes_sec=np.where(known, col['static_bytes_sec'],
                                      math.inf),
            stale=stale)

    # -- forgetting ---------------------------------------------------------

    def _drop(self, key):
        row = self._rows.pop(key, None)
        if row is not None:
            self._cols[:, row] = _NAN
            self._limits[:, row] = 0
            self._strings[:, row] = None
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
            old = np.flatnonzero(now - stamp > self._limit_s(interval))
            for i in old:
                self._drop(keys[i])
            return len(old)

    def __len__(self):
        with self._lock:
            return len(self._rows)
