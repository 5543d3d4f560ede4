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

"""Bursts from measured headroom: the credit arithmetic and the grant.

A tier with a burst (``burst_factor`` N, ``burst_seconds`` B) lets a disk
run above its ceiling (the tier's ``max_*``, the static limits Nova or
Cinder set), up to N x its floor, while it has credits:

* **credits** are seconds of burst. A disk earns them while it uses less
  than its floor, one second per second idle, in proportion below it
  (half its floor: half a second); it spends one per second it runs above
  its ceiling; they stay within ``[0, B]``. A disk the policy has never
  seen (a new disk, a re-created volume: a new id) has none.
* **the grant** (:func:`grant`) serves a burst only from what the domain
  leaves unused under the level where the policy engages, shared among
  the disks that burst, and none while any floor-holder is short of its
  floor: the burst is the first thing taken back.

Pure: arrays in, arrays out, in the cost model's device-seconds per second.
"""

from typing import NamedTuple

import numpy as np

from iotguard.policy import base


def accrue(credits: base.FloatArray, used: base.FloatArray,
           load: base.FloatArray, floor: base.FloatArray,
           ceil: base.FloatArray, most: base.FloatArray, dt: float,
           tolerance: float = 0.05
           ) -> tuple[base.FloatArray, base.FloatArray]:
    """Credits and burst seconds used after ``dt`` seconds at ``load``.

    ``most``: the tier's ``burst_seconds`` (0: no burst, no credits). A
    disk above its ``ceil`` by more than ``tolerance`` bursts.
    """
    burst = most > 0
    with np.errstate(divide='ignore', invalid='ignore'):
        below = np.where(floor > 0, np.clip(1.0 - load / floor, 0.0, 1.0),
                         0.0)
    spent = np.where(burst & (load > ceil * (1.0 + tolerance)), dt, 0.0)
    out = np.where(burst, np.clip(credits + dt * below - spent, 0.0, most),
                   0.0)
    return out, used + spent


class Grant(NamedTuple):
    """The disks that burst this decision and the load each may reach."""

    granted: base.BoolArray
    #: the cap's load (device-seconds per second; ``nan`` where none)
    load: base.FloatArray


def grant(load: base.FloatArray, ceil: base.FloatArray,
          burst: base.FloatArray, credits: base.FloatArray, at_ceiling:
          base.BoolArray, spare: float, short: bool, least: float) -> Grant:
    """Which disks burst, to what load.

    ``burst``: each disk's burst ceiling (N x its floor; ``ceil`` or
    below: none); ``at_ceiling``: it asks for more than its ceiling (runs
    at it, or bursts already); ``spare``: the load the domain may still
    take before the policy would engage; ``short``: a floor-holder is
    short of its floor (then nothing is granted); ``least``: the credits
    a burst needs (an interval's worth: a lease it cannot overrun).
    """
    want = (burst > ceil) & at_ceiling & (credits >= least)
    none = Grant(np.zeros(len(load), dtype=bool), np.full(len(load), np.nan))
    if short or spare <= 0 or not want.any():
        return none
    each = spare / float(want.sum())
    reach = np.minimum(burst, np.maximum(load, ceil) + each)
    granted = want & (reach > ceil * 1.05)
    return Grant(granted, np.where(granted, reach, np.nan))
