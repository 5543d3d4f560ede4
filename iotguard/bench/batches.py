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

"""Agents' batches (RPC 1.1's columns) made from rows, for benchmarks.

The agent builds its batch from its arrays (:meth:`iotguard.batch.
Batch.of_pass`); the benchmarks and the tests, which make up samples disk
by disk, build theirs here. Not used by a service.
"""

from typing import Any

from iotguard import batch

_NO_RATES = (None,) * len(batch.RATES)
_NO_LIMITS: dict[str, int] = {}


class Builder:
    """Collects one host's samples into the 1.1 wire form.

    No dict per disk: :meth:`add` appends one tuple (and the disk's own
    static and cap dicts), :meth:`wire` turns them into lists at once.
    """

    def __init__(self, timestamp: float, interval_s: float) -> None:
        self.timestamp = timestamp
        self.interval_s = interval_s
        self._rows: list[tuple[Any, ...]] = []
        self._static: list[dict[str, int]] = []
        self._cap: list[dict[str, int]] = []

    def __len__(self) -> int:
        return len(self._rows)

    def add(self, instance_uuid: str, dev: str, volume_id: str | None,
            project_id: str | None, interval_s: float, gap: str | None,
            measured: tuple[float, ...] | None, static: dict[str, int],
            cap: dict[str, int] | None = None,
            lease_expires_at: float | None = None,
            decision_id: str | None = None) -> None:
        """One disk; ``measured``: its rates (:data:`batch.RATES`) or None."""
        self._rows.append((
            instance_uuid, dev, volume_id, project_id, gap, decision_id,
            interval_s, None if cap is None else lease_expires_at)
            + (measured or _NO_RATES))
        self._static.append(static)
        self._cap.append(cap or _NO_LIMITS)

    def wire(self) -> dict[str, Any]:
        columns = (map(list, zip(*self._rows)) if self._rows
                   else ([] for _ in batch.WIRE_LISTS))
        disks: dict[str, Any] = dict(zip(batch.WIRE_LISTS, columns))
        disks['static'] = batch.limit_columns(self._static)
        disks['cap'] = batch.limit_columns(self._cap)
        return {'timestamp': self.timestamp, 'interval_s': self.interval_s,
                'disks': disks}
