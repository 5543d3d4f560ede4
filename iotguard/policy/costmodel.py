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

"""The I/O-size aware cost model.

One disk's load is measured in device-seconds per second::

    u = iops / iops_4k + bytes_sec / bytes_sec_capacity

so a domain's capacity is 1.0 whatever mix of I/O sizes it serves. An
operation of ``s`` bytes costs ``1 / iops_4k + s / bytes_sec_capacity``
device-seconds: small random I/O is charged for its seeks, large I/O for its
transfer. Floors, shares and caps are computed in ``u`` and converted back to
IOPS and bytes/s at the disk's current mean I/O size.
"""

import numpy as np

from iotguard.policy.base import FloatArray
from iotguard.policy.base import Profile

#: I/O size assumed for a disk that did no I/O in the last interval.
DEFAULT_IO_SIZE = 16384.0


def mean_io_size(iops: FloatArray, bytes_sec: FloatArray) -> FloatArray:
    """Bytes per operation, ``DEFAULT_IO_SIZE`` where there was no I/O."""
    with np.errstate(divide='ignore', invalid='ignore'):
        size = np.where(iops > 0, bytes_sec / np.where(iops > 0, iops, 1.0),
                        DEFAULT_IO_SIZE)
    result: FloatArray = np.asarray(size, dtype=np.float64)
    return result


def op_cost(io_size: FloatArray, profile: Profile) -> FloatArray:
    """Device-seconds one operation of ``io_size`` bytes costs."""
    result: FloatArray = 1.0 / profile.iops_4k + io_size / profile.bytes_sec
    return result


def load(iops: FloatArray, bytes_sec: FloatArray,
         profile: Profile) -> FloatArray:
    """Device-seconds per second each disk uses (the ``u`` above)."""
    result: FloatArray = iops / profile.iops_4k + bytes_sec / profile.bytes_sec
    return result


def limit_load(ops_limit: FloatArray, bytes_limit: FloatArray,
               io_size: FloatArray, cost: FloatArray) -> FloatArray:
    """An (IOPS, bytes/s) limit pair in device-seconds per second.

    ``cost`` is :func:`op_cost` at ``io_size``; ``inf`` is no limit.
    """
    with np.errstate(invalid='ignore'):
        result: FloatArray = np.minimum(ops_limit,
                                        bytes_limit / io_size) * cost
    return result


def floor_ops(floor_iops: FloatArray, floor_bytes_sec: FloatArray,
              io_size: FloatArray) -> FloatArray:
    """Operations per second a floor promises at a given I/O size.

    A tier may set ``min_iops``, ``min_bytes_sec`` or both (0 = not set).
    The floor is kept when the disk gets either of them, so the operation
    rate it promises is the smaller of ``min_iops`` and
    ``min_bytes_sec / io_size``. Neither set: no floor.
    """
    by_iops = np.where(floor_iops > 0, floor_iops, np.inf)
    by_bytes = np.where(floor_bytes_sec > 0, floor_bytes_sec / io_size,
                        np.inf)
    ops = np.minimum(by_iops, by_bytes)
    result: FloatArray = np.where(np.isfinite(ops), ops, 0.0)
    return result


def floor_load(floor_iops: FloatArray, floor_bytes_sec: FloatArray,
               io_size: FloatArray, profile: Profile) -> FloatArray:
    """The floors of the disks in device-seconds per second."""
    result: FloatArray = (floor_ops(floor_iops, floor_bytes_sec, io_size)
                          * op_cost(io_size, profile))
    return result


def committed_floor_load(min_iops: float, min_bytes_sec: float,
                         profile: Profile) -> float:
    """The most a floor can cost at any I/O size (for admission).

    With both floors set the cost of ``min(min_iops, min_bytes_sec / s)``
    operations peaks where the two meet, at ``min_iops / iops_4k +
    min_bytes_sec / bytes_sec``. A floor with only one part set is charged
    as though the other part were at the domain's own 4 KiB ratio.
    """
    if min_iops <= 0 and min_bytes_sec <= 0:
        return 0.0
    if min_iops <= 0:
        min_iops = min_bytes_sec / 4096.0
    if min_bytes_sec <= 0:
        min_bytes_sec = min_iops * 4096.0
    return min_iops / profile.iops_4k + min_bytes_sec / profile.bytes_sec


def to_limits(share: FloatArray, io_size: FloatArray,
              profile: Profile) -> tuple[FloatArray, FloatArray]:
    """A share in device-seconds per second -> (IOPS, bytes/s) caps."""
    ops = share / op_cost(io_size, profile)
    return ops, ops * io_size
