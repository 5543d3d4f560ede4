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

"""Each disk's record, gathered from the rounds, kept by the minute.

Per round and disk with fresh samples and a floor or a cap: the round's
seconds, those its floor was due and kept (not a violation: delivered,
or its demand met), those it was capped, its rates, the floor in force
(the last round's), the tightest cap of the minute, and the reason of a
cap set or changed, in plain words with this disk's own numbers only
(never the domain's or another disk's). A minute is handed on for
writing once it is over (:meth:`Recorder.closed`).
"""

import dataclasses
import datetime
import math

import numpy as np

from iotguard.db import disks as db_disks
from iotguard.db import records
from iotguard import metrics
from iotguard.policy import base
from iotguard.wire import caps

MINUTE_S = 60


@dataclasses.dataclass
class _Open:
    seconds: float = 0.0
    due: float = 0.0
    kept: float = 0.0
    capped: float = 0.0
    ops: float = 0.0      # operations and bytes over the seconds
    byts: float = 0.0
    reason: str | None = None
    floor_iops: float = 0.0    # 0: no floor of that kind
    floor_bytes_sec: float = 0.0
    cap_iops: float = math.inf   # inf: no cap of that kind
    cap_bytes_sec: float = math.inf


def _some(value: float) -> float | None:
    """A floor or cap as the record stores it (None: none)."""
    return float(value) if 0 < value < math.inf else None


def _limits(limits: dict[str, int]) -> str:
    iops = caps.limit(limits, 'total_iops_sec')
    byts = caps.limit(limits, 'total_bytes_sec')
    words = ([] if math.isinf(iops) else ['%d IOPS' % iops]) + (
        [] if math.isinf(byts) else ['%.1f MB/s' % (byts / 1e6)])
    return ' and '.join(words) or 'its static limits'


def cap_reason(old: dict[str, int] | None, new: dict[str, int],
               iops: float, bytes_sec: float) -> str:
    """Why a disk was capped, for its tenant: its own numbers only."""
    tighter = not old or all(
        caps.limit(new, k) <= caps.limit(old, k)
        for k in ('total_iops_sec', 'total_bytes_sec'))
    if tighter:
        return ('capped at %s: its storage was contended and it was doing '
                '%d IOPS and %.1f MB/s, more than its fair share'
                % (_limits(new), iops, bytes_sec / 1e6))
    return 'cap eased to %s: its storage had room again' % _limits(new)


def disk_rounds(snapshot: base.DomainSnapshot, violated: base.BoolArray,
                floor: base.FloatArray, limits: list[caps.Limits | None],
                interval_s: float) -> list[metrics.DiskRound]:
    """Each disk's round, for the per-disk series.

    Its floor due and kept as :meth:`Recorder.add` counts them.
    """
    fresh = ~snapshot.stale
    due = fresh & (floor > 0)
    kept = due & ~violated
    return [metrics.DiskRound(
        key, float(snapshot.iops[i]) if fresh[i] else None,
        float(snapshot.bytes_sec[i]) if fresh[i] else None,
        _some(snapshot.floor_iops[i]), _some(snapshot.floor_bytes_sec[i]),
        _some(caps.limit(limits[i], 'total_iops_sec')),
        _some(caps.limit(limits[i], 'total_bytes_sec')),
        interval_s * bool(due[i]), interval_s * bool(kept[i]))
        for i, key in enumerate(snapshot.disk_ids)]


class Recorder:
    """The minutes in progress of the disks a controller's rounds saw."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._open: dict[tuple[int, int], _Open] = {}
        self._why: dict[int, str] = {}     # disk id -> last cap's reason

    def add(self, disks: list[db_disks.Member],
            snapshot: base.DomainSnapshot, violated: base.BoolArray,
            floor: base.FloatArray, limits: list[caps.Limits | None],
            reasons: dict[int, str], now: float) -> None:
        """One round of a domain.

        ``limits``: each disk's cap after the round (None: uncapped);
        ``reasons`` by the disk's index.
        """
        minute = int(now // MINUTE_S) * MINUTE_S
        s = self.interval_s
        capped = np.array([c is not None for c in limits], dtype=bool)
        if self._why:
            for i in np.flatnonzero(~capped).tolist():
                self._why.pop(disks[i].id, None)
        for i in np.flatnonzero(
                ~snapshot.stale & ((floor > 0) | capped)).tolist():
            disk_id = disks[i].id
            if i in reasons:
                self._why[disk_id] = reasons[i]
            m = self._open.setdefault((disk_id, minute), _Open())
            m.seconds += s
            if floor[i] > 0:
                m.due += s
                m.kept += 0.0 if violated[i] else s
            if capped[i]:
                m.capped += s
                m.reason = self._why.get(disk_id)
            m.ops += float(snapshot.iops[i]) * s
            m.byts += float(snapshot.bytes_sec[i]) * s
            m.floor_iops = float(snapshot.floor_iops[i])
            m.floor_bytes_sec = float(snapshot.floor_bytes_sec[i])
            m.cap_iops = min(m.cap_iops,
                             caps.limit(limits[i], 'total_iops_sec'))
            m.cap_bytes_sec = min(m.cap_bytes_sec,
                                  caps.limit(limits[i], 'total_bytes_sec'))

    def closed(self, now: float) -> list[records.Minute]:
        """The minutes over by ``now``, taken out."""
        done = [key for key in self._open if key[1] + MINUTE_S <= now]
        out = []
        for disk_id, minute in done:
            m = self._open.pop((disk_id, minute))
            out.append(records.Minute(
                disk_id, datetime.datetime.fromtimestamp(
                    minute, datetime.timezone.utc).replace(tzinfo=None),
                m.seconds, m.due, m.kept, m.capped, m.ops / m.seconds,
                m.byts / m.seconds, m.reason and m.reason[:255],
                _some(m.floor_iops), _some(m.floor_bytes_sec),
                _some(m.cap_iops), _some(m.cap_bytes_sec)))
        return out
