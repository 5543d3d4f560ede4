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

"""A per-disk I/O throttle that behaves like QEMU's, set like libvirt's.

The settings are libvirt's 12 iotune keys (0 = no limit). :func:`merge`
applies one ``setBlockIoTune`` call with libvirt's rules: the keys of a
group (``total_/read_/write_`` of ``bytes_sec``, ``iops_sec``,
``bytes_sec_max`` or ``iops_sec_max``) are set together, so giving any of
them resets the others of that group to 0 (QEMU clears ``bps_rd`` when
``bps`` is set); ``total_X`` and ``read_X``/``write_X`` both non-zero in one
call is an error; a ``*_max`` needs its base value and may not be below it.

Enforcement is QEMU's leaky bucket (``util/throttle.c``): each limited
quantity has a bucket that leaks at the average rate; a request may pass
while the bucket's level is below its size and then adds its amount. The
size is ``*_max`` x 1 s of burst when a ``*_max`` is set, else a tenth of a
second of the average rate (QEMU's default).
"""

from iotguard import exception
from iotguard.wire import caps

GROUPS = caps.KINDS + tuple(kind + '_max' for kind in caps.KINDS)
BURST_LENGTH_S = 1.0
DEFAULT_BUCKET_S = 0.1


def validate(tune: dict[str, int]) -> None:
    """:func:`iotguard.wire.caps.check_limits`, raising ``ValueError``."""
    try:
        caps.check_limits(tune)
    except exception.InvalidCap as e:
        raise ValueError(e.kwargs['reason']) from None


def merge(current: dict[str, int],
          params: dict[str, int]) -> dict[str, int]:
    """The iotune state after one libvirt ``setBlockIoTune`` call."""
    unknown = sorted(set(params) - set(caps.IOTUNE_KEYS))
    if unknown:
        raise ValueError('unknown iotune key(s) %s; known: %s'
                         % (', '.join(unknown), ', '.join(caps.IOTUNE_KEYS)))
    for key, value in params.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError('%s must be an integer, not %r' % (key, value))
        if value < 0:
            raise ValueError('%s must be >= 0, not %d' % (key, value))
    result = dict(current)
    for group in GROUPS:
        keys = ['%s_%s' % (d, group) for d in caps.DIRECTIONS]
        total, read, write = (params.get(k, 0) for k in keys)
        if total and (read or write):
            raise ValueError('total_%s and read_%s/write_%s cannot be set in '
                             'the same call' % (group, group, group))
        if any(k in params for k in keys):
            for k in keys:
                result[k] = int(params.get(k, 0))
    for group in caps.KINDS:
        peaks = ['%s_%s_max' % (d, group) for d in caps.DIRECTIONS]
        if not any(k in params for k in peaks):
            # libvirt drops a burst value whose base value went away.
            for d in caps.DIRECTIONS:
                if not result['%s_%s' % (d, group)]:
                    result['%s_%s_max' % (d, group)] = 0
    validate(result)
    return result


class Bucket:
    """One QEMU leaky bucket (amounts in bytes or operations)."""

    def __init__(self, avg: float, peak: float) -> None:
        self.avg = avg
        self.size = (peak * BURST_LENGTH_S if peak
                     else avg * DEFAULT_BUCKET_S)
        self.level = 0.0

    def leak(self, dt: float) -> None:
        self.level = max(0.0, self.level - self.avg * dt)


class Throttle:
    """The throttle of one disk: its iotune state and its buckets."""

    def __init__(self, tune: dict[str, int]) -> None:
        self.buckets: dict[tuple[str, str], Bucket] = {}
        self.configure(tune)

    def configure(self, tune: dict[str, int]) -> None:
        """Apply a complete iotune state; bucket levels carry over."""
        validate(tune)
        old = self.buckets
        self.tune = dict(tune)
        self.buckets = {}
        for direction in caps.DIRECTIONS:
            for unit in caps.KINDS:
                key = '%s_%s' % (direction, unit)
                if tune[key]:
                    bucket = Bucket(tune[key], tune[key + '_max'])
                    if (direction, unit) in old:
                        bucket.level = min(old[direction, unit].level,
                                           bucket.size)
                    self.buckets[direction, unit] = bucket

    @property
    def active(self) -> bool:
        return bool(self.buckets)

    def leak(self, dt: float) -> None:
        for bucket in self.buckets.values():
            bucket.leak(dt)

    def admit(self, is_read: bool, size: int) -> bool:
        """Let one request through if every bucket it touches has room."""
        direction = 'read' if is_read else 'write'
        touched = [(unit, b) for (d, unit), b in self.buckets.items()
                   if d in ('total', direction)]
        if any(b.level >= b.size for _, b in touched):
            return False
        for unit, b in touched:
            b.level += size if unit == 'bytes_sec' else 1
        return True
