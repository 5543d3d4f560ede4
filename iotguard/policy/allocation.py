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

"""Weighted max-min fair allocation with floors.

Each disk ``i`` gets::

    a_i = min(d_i, max(f_i, w_i * level))

with ``level`` the one water level at which the shares fill the capacity:
floors first, spare capacity by weight, nobody above its demand. When the
floors alone exceed the capacity they are scaled down in proportion; when
every demand fits, everyone gets its demand.
"""

import numpy as np
import numpy.typing as npt

from iotguard.policy.base import FloatArray

IntArray = npt.NDArray[np.intp]


def _sorted(values: FloatArray) -> tuple[FloatArray, IntArray]:
    """``values`` in increasing order, and the order (``np.argsort``)."""
    order: IntArray = np.argsort(values)
    return values[order], order


def _gather(values: FloatArray, order: IntArray,
            out: FloatArray) -> FloatArray:
    """``values[order]``, written into ``out`` (``order`` is in range)."""
    result: FloatArray = np.take(values, order, out=out, mode='clip')
    return result


def _running_sums(values: FloatArray) -> FloatArray:
    """``[0, v0, v0 + v1, ...]``: the first k values added in turn."""
    sums = np.empty(len(values) + 1)
    sums[0] = 0.0
    np.cumsum(values, out=sums[1:])
    return sums


def fair_shares(capacity: float, floors: FloatArray, demands: FloatArray,
                weights: FloatArray) -> tuple[FloatArray, float]:
    """Return ``(allocation, level)``; ``level`` is ``inf`` when all fit.

    ``demands`` may hold ``inf`` (a disk that takes all it is given);
    ``weights`` must be > 0. Exact, O(n log n), no iteration.
    """
    floors = np.minimum(floors, demands)
    n = len(floors)
    if n == 0:
        return np.zeros(0), np.inf
    floor_sum = float(floors.sum())
    if floor_sum >= capacity:
        scale = capacity / floor_sum if floor_sum > 0 else 0.0
        return floors * scale, 0.0
    if np.all(np.isfinite(demands)) and float(demands.sum()) <= capacity:
        return demands.astype(np.float64), np.inf

    # g(level) = sum of shares is piecewise linear and non-decreasing,
    # with breakpoints where w*level crosses a floor (disk starts to grow)
    # and where it crosses a demand (disk stops): both sorted, with the
    # running sums of what crosses them. One scratch array carries the
    # values to add up (fewer fresh pages of n at every decision).
    scratch = np.empty(n)
    s_sorted, s_order = _sorted(np.divide(floors, weights, out=scratch))
    s_floor = _running_sums(_gather(floors, s_order, scratch))
    s_weight = _running_sums(_gather(weights, s_order, scratch))
    del s_order
    e_sorted, e_order = _sorted(np.divide(demands, weights, out=scratch))
    e_demand = _gather(demands, e_order, scratch)
    e_demand[~np.isfinite(e_demand)] = 0.0
    e_dem = _running_sums(e_demand)
    e_weight = _running_sums(_gather(weights, e_order, scratch))
    del e_order, e_demand, scratch

    def total(levels: FloatArray) -> tuple[FloatArray, FloatArray]:
        ks = np.searchsorted(s_sorted, levels, side='right')
        ke = np.searchsorted(e_sorted, levels, side='right')
        slope = s_weight[ks] - e_weight[ke]
        const = floor_sum - s_floor[ks] + e_dem[ke]
        return const + slope * levels, slope

    # Both runs are sorted: a stable sort merges them in one pass. A point
    # twice over (a floor equal to another disk's demand) is harmless: it
    # has one value, and the search below lands on its first copy.
    points = np.concatenate((s_sorted, e_sorted[np.isfinite(e_sorted)]))
    points.sort(kind='stable')
    # The first point where g reaches the capacity, by bisection (g is
    # non-decreasing along the points).
    lo, hi = 0, len(points)
    while lo < hi:
        mid = (lo + hi) // 2
        if float(total(points[mid:mid + 1])[0][0]) < capacity:
            lo = mid + 1
        else:
            hi = mid
    k = lo
    if k < len(points) and float(total(points[k:k + 1])[0][0]) == capacity:
        level = float(points[k])
    else:
        # capacity lies after points[k-1] (or before the first point, which
        # cannot be: g is constant there and equals floor_sum < capacity).
        base = float(points[k - 1])
        base_value, slope = total(np.array([base]))
        level = base + (capacity - float(base_value[0])) / float(slope[0])
    shares: FloatArray = np.minimum(demands,
                                    np.maximum(floors, weights * level))
    return shares, level
