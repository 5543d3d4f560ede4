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
same store with :meth:`SampleStore.add`, one per-disk sample in the shape
of :data:`iotguard.caps.SAMPLE_SCHEMA` whose ``timestamp`` is the source's
own time of measurement (UNIX seconds). The store keeps, per disk
``(instance_uuid, dev)``, only the newest sample, and refuses (logs and
returns ``False``):

* a malformed sample (schema, a rate above :data:`iotguard.caps.MAX_RATE`,
  or a NaN or infinite number);
* one from the future, more than ``max_skew_s`` after its arrival;
* one already stale on arrival (see below);
* a duplicate, or one not newer than the sample it would replace.

**Staleness.** A sample is stale when it is older than
``STALE_INTERVALS`` (3) intervals, the interval being the larger of the
controller's decision interval and the sample's own ``interval_s`` (a
Ceilometer sample that covers 300 s stays usable longer than an agent's
5 s one). A policy must never tighten a cap on stale data; the decision
loop flags such disks in the snapshot. A sample with a ``gap`` (first
reading, counter reset after a reboot, ...) has no rates: it is stored,
so it replaces older rates that no longer describe the disk, and
:func:`has_rates` tells the loop it says nothing about the load.

Thread-safe: the RPC server's threads add while the loop reads.
"""

import math
import re
import threading
import time

from oslo_log import log as logging

from iotguard import caps
from iotguard import exception

LOG = logging.getLogger(__name__)

STALE_INTERVALS = 3

#: Default tolerated clock skew between a source and the controller.
MAX_SKEW_S = 2.0

_NUMBERS = ('timestamp', 'interval_s', 'read_iops', 'write_iops',
            'read_bytes_sec', 'write_bytes_sec', 'read_latency_ms',
            'write_latency_ms', 'flush_ops')


_UUID = re.compile(caps.DISK_SCHEMA['properties']['instance_uuid']['pattern'])
_DEV = re.compile(caps.DISK_SCHEMA['properties']['dev']['pattern'])
_RATES = ('read_iops', 'write_iops', 'read_bytes_sec', 'write_bytes_sec',
          'read_latency_ms', 'write_latency_ms', 'flush_ops')
_MAX_LIMIT = caps.LIMITS_SCHEMA['properties']['total_iops_sec']['maximum']
_KEYS = frozenset(caps.IOTUNE_KEYS)


def _number(value):
    return type(value) in (int, float)


def _limits(value):
    return type(value) is dict and all(
        k in _KEYS and type(v) is int and 0 <= v <= _MAX_LIMIT
        for k, v in value.items())


def _plainly_valid(sample):
    """A fast, strict check: True only for a sample the schema accepts.

    jsonschema costs about 150 us per sample, too much for 50,000 disks
    every 5 s; this check takes a few microseconds. Whatever it does not
    accept is judged by the schema itself (and its error reported).
    """
    if type(sample) is not dict:
        return False
    get = sample.get
    uuid, dev = get('instance_uuid'), get('dev')
    if not (type(uuid) is str and _UUID.match(uuid) and type(dev) is str
            and _DEV.match(dev) and _number(get('timestamp'))
            and 'gap' in sample and 'static' in sample
            and 'cap' in sample):
        return False
    for key in _RATES:
        if key not in sample:
            return False
        value = sample[key]
        if value is not None and not (_number(value)
                                      and 0 <= value <= caps.MAX_RATE):
            return False
    for key in ('volume_id', 'project_id', 'gap', 'decision_id'):
        value = get(key)
        if value is not None and type(value) is not str:
            return False
    for key in ('interval_s', 'lease_expires_at'):
        value = get(key)
        if value is not None and not _number(value):
            return False
    if 'interval_s' in sample and sample['interval_s'] is None:
        return False
    cap = sample['cap']
    return _limits(sample['static']) and (cap is None or _limits(cap))


def validate(sample):
    """Return ``sample`` if it is a valid sample, else raise Invalid."""
    if _plainly_valid(sample):
        return sample
    return caps.validate_sample(sample)


def has_rates(sample):
    """Whether ``sample`` carries rates (no ``gap``)."""
    return sample is not None and sample.get('gap') is None and \
        sample.get('read_iops') is not None


class SampleStore:
    """The newest sample of every disk, keyed by ``(instance_uuid, dev)``."""

    def __init__(self, interval_s, clock=time.time, max_skew_s=MAX_SKEW_S):
        if not interval_s > 0:
            raise ValueError('interval_s must be > 0, not %r' % interval_s)
        self.interval_s = float(interval_s)
        self.max_skew_s = float(max_skew_s)
        self._clock = clock
        self._lock = threading.Lock()
        self._samples = {}
        self.rejected = 0

    def stale_after_s(self, sample):
        """Age in seconds beyond which ``sample`` is stale."""
        own = sample.get('interval_s') or 0.0
        return STALE_INTERVALS * max(self.interval_s, float(own))

    def is_stale(self, sample, now):
        """True when ``sample`` is older than 3 intervals at ``now``."""
        if sample is None:
            return True
        return now - sample['timestamp'] > self.stale_after_s(sample)

    def _refuse(self, sample, why, *args):
        self.rejected += 1
        disk = sample if isinstance(sample, dict) else {}
        LOG.warning('Sample of %s/%s refused: ' + why,
                    disk.get('instance_uuid'), disk.get('dev'), *args)
        return False

    def add(self, sample, received_at=None):
        """Store ``sample`` if it is valid and newer; False (logged) if not."""
        try:
            validate(sample)
        except exception.Invalid as e:
            return self._refuse(sample, '%s', e)
        bad = [k for k in _NUMBERS if sample.get(k) is not None
               and not math.isfinite(sample[k])]
        if bad:
            return self._refuse(sample, 'not a finite number: %s',
                                ', '.join(bad))
        now = self._clock() if received_at is None else received_at
        stamp = sample['timestamp']
        if stamp > now + self.max_skew_s:
            return self._refuse(sample, 'timestamp %.3f is %.1f s in the '
                                'future', stamp, stamp - now)
        if self.is_stale(sample, now):
            return self._refuse(sample, 'timestamp %.3f is %.1f s old, '
                                'stale', stamp, now - stamp)
        key = (sample['instance_uuid'], sample['dev'])
        with self._lock:
            latest = self._samples.get(key)
            if latest is not None and stamp <= latest['timestamp']:
                return self._refuse(
                    sample, '%s (timestamp %.3f, latest %.3f)',
                    'duplicate' if stamp == latest['timestamp'] else
                    'older than the latest', stamp, latest['timestamp'])
            self._samples[key] = dict(sample)
        return True

    def latest(self, instance_uuid, dev):
        """The newest sample of a disk (a copy), or None."""
        with self._lock:
            sample = self._samples.get((instance_uuid, dev))
            return dict(sample) if sample is not None else None

    def forget(self, instance_uuid, dev):
        """Drop what is known of a disk (deleted, moved away)."""
        with self._lock:
            self._samples.pop((instance_uuid, dev), None)

    def prune(self, now):
        """Drop every stale sample; returns how many (bounds memory)."""
        with self._lock:
            old = [k for k, s in self._samples.items()
                   if self.is_stale(s, now)]
            for key in old:
                del self._samples[key]
            return len(old)

    def __len__(self):
        with self._lock:
            return len(self._samples)
