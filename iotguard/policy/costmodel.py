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

"""The I/O-size aware cost model, in two forms.

One disk's load is measured in device-seconds per second, so a domain's
capacity is 1.0 whatever mix of I/O sizes it serves. The profile's
``form`` (:class:`iotguard.policy.base.Profile`) says how its two figures
combine:

``additive`` (the default: seek + transfer, disks and arrays)::

    u = iops / iops_4k + bytes_sec / bytes_sec_capacity

  an operation of ``s`` bytes costs ``1 / iops_4k + s / bytes_sec``
  device-seconds: small random I/O is charged for its seeks, large I/O for
  its transfer.

``max`` (separately provisioned IOPS and bandwidth: any token bucket,
such as QEMU's throttle, Ceph librbd QoS or Cinder front-end QoS)::

    u = max(iops / iops_4k, bytes_sec / bytes_sec_capacity)

  an operation costs ``max(1 / iops_4k, s / bytes_sec)``: the bucket that
  empties first is the one that holds the device. Below the knee size
  ``bytes_sec / iops_4k`` an operation costs one IOPS token, above it its
  bytes.

At one I/O size both forms are linear in the operation rate (the load of
``n`` operations of ``s`` bytes is ``n * op_cost(s)``), so floors, shares
and caps are computed in ``u`` and converted back to IOPS and bytes/s at
the disk's current mean I/O size with the same functions in both forms.

The domain's load is :func:`domain_load` of its total rates: the sum of
the disks' loads in the additive form; in the max form the max of the
summed shares, exact for a token bucket, while each disk is charged at
its own dominant resource, so the disks' loads add up to at least the
domain's and shares and floors priced per disk are conservative.
"""

import numpy as np

from iotguard.policy import base
from iotguard.policy.base import FloatArray
from iotguard.policy.base import Profile

#: I/O size assumed for a disk that did no I/O in the last interval.
DEFAULT_IO_SIZE = 16384.0

#: The I/O size a floor with only one part set is priced at
#: (:func:`committed_floor_load`): the size ``iops_4k`` is measured at.
FLOOR_IO_SIZE = 4096.0


def mean_io_size(iops: FloatArray, bytes_sec: FloatArray) -> FloatArray:
    """Bytes per operation, ``DEFAULT_IO_SIZE`` where there was no I/O."""
    with np.errstate(divide='ignore', invalid='ignore'):
        size = np.where(iops > 0, bytes_sec / np.where(iops > 0, iops, 1.0),
                        DEFAULT_IO_SIZE)
    result: FloatArray = np.asarray(size, dtype=np.float64)
    return result


def _combine(ops_share: FloatArray | float,
             bytes_share: FloatArray | float,
             profile: Profile) -> FloatArray:
    """The two shares of a profile's capacity, combined by its form."""
    if profile.form == base.MAX:
        result: FloatArray = np.maximum(ops_share, bytes_share)
    else:
        result = np.add(ops_share, bytes_share)
    return result


def op_cost(io_size: FloatArray, profile: Profile) -> FloatArray:
    """Device-seconds one operation of ``io_size`` bytes costs."""
    return _combine(1.0 / profile.iops_4k, io_size / profile.bytes_sec,
                    profile)


def load(iops: FloatArray, bytes_sec: FloatArray,
         profile: Profile) -> FloatArray:
    """Device-seconds per second each disk uses (the ``u`` above)."""
    return _combine(iops / profile.iops_4k, bytes_sec / profile.bytes_sec,
                    profile)


def domain_load(total_iops: float, total_bytes_sec: float,
                profile: Profile) -> float:
    """The load of a whole domain from its total rates (module doc)."""
    return float(_combine(total_iops / profile.iops_4k,
                          total_bytes_sec / profile.bytes_sec, profile))


def limit_load(ops_limit: FloatArray, bytes_limit: FloatArray,
               io_size: FloatArray, cost: FloatArray) -> FloatArray:
    """An (IOPS, bytes/s) limit pair in device-seconds per second.

    ``cost`` is :func:`op_cost` at ``io_size`` (so the profile's form is in
    it); ``inf`` is no limit.
    """
    with np.errstate(invalid='ignore'):
        result: FloatArray = np.minimum(ops_limit,
                                        bytes_limit / io_size) * cost
    return result


def floor_ops(floor_iops: FloatArray, floor_bytes_sec: FloatArray,
              io_size: FloatArray) -> FloatArray:
    """Operations per second a floor promises at a given I/O size.

    A floor is kept when the disk gets either of ``min_iops`` and
    ``min_bytes_sec`` (0: not set), so it promises the smaller of
    ``min_iops`` and ``min_bytes_sec / io_size``. Neither set: no floor.
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

    With both parts set the cost of ``min(min_iops, min_bytes_sec / s)``
    operations peaks where the two meet, ``s = min_bytes_sec /
    min_iops``: ``min_iops / iops_4k`` and ``min_bytes_sec / bytes_sec``
    combined by the profile's form.

    A floor with only one part set would cost without bound (IOPS of huge
    operations, bytes/s of tiny ones); it is priced as though the other
    part were at ``FLOOR_IO_SIZE``: an IOPS floor promises small
    operations, a bandwidth floor operations of at least 4 KiB. On a
    token bucket whose knee is far above 4 KiB that prices a
    bandwidth-only floor well above what it costs with large I/O: a tier
    for large I/O should set both parts.
    """
    if min_iops <= 0 and min_bytes_sec <= 0:
        return 0.0
    if min_iops <= 0:
        min_iops = min_bytes_sec / FLOOR_IO_SIZE
    if min_bytes_sec <= 0:
        min_bytes_sec = min_iops * FLOOR_IO_SIZE
    return float(_combine(min_iops / profile.iops_4k,
                          min_bytes_sec / profile.bytes_sec, profile))
