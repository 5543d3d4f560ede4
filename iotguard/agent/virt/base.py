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

"""The hypervisor driver interface of the agent.

A disk is keyed by ``(instance_uuid, dev)``: the libvirt domain UUID is the
Nova instance UUID, ``dev`` the target dev (``vda``). Iotune dicts carry
the twelve keys of :data:`iotguard.wire.caps.IOTUNE_KEYS` (0 = no limit);
counters come as :class:`iotguard.wire.rates.Readings`.

Constructors do no I/O; :meth:`Driver.start` connects.
"""

import abc
import collections.abc
import dataclasses

from iotguard.wire import caps
from iotguard.wire import rates

#: Lifecycle event names passed to the callback.
EVENT_STARTED = 'started'
EVENT_STOPPED = 'stopped'
EVENT_DEFINED = 'defined'
EVENT_DEVICE = 'device'
EVENT_OTHER = 'other'

Key = tuple[str, str]
#: ``lifecycle_callback(instance_uuid, event)`` of :meth:`Driver.start`.
Callback = collections.abc.Callable[[str, str], None]


class Unavailable(Exception):
    """The hypervisor cannot be reached now (its daemon restarting).

    The agent says so in one line and tries again the next interval.
    """


@dataclasses.dataclass(frozen=True)
class Disk:
    """One instance disk as the hypervisor shows it.

    ``static`` is the disk's static ceiling: the iotune Nova (flavor
    ``quota:disk_*``) or Cinder (front-end QoS) put in the domain
    definition at boot or attach, all twelve keys.
    """

    instance_uuid: str
    dev: str
    volume_id: str | None = None
    project_id: str | None = None
    static: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def key(self) -> Key:
        return (self.instance_uuid, self.dev)


class Driver(abc.ABC):
    """What the agent needs from a hypervisor, and nothing more."""

    def start(self, lifecycle_callback: Callback | None = None) -> None:
        """Connect; later call ``lifecycle_callback(instance_uuid, event)``.

        The callback runs in the driver's event thread: keep it short.
        """

    def stop(self) -> None:
        """Disconnect and stop any thread the driver started."""

    @abc.abstractmethod
    def list_disks(self) -> dict[Key, Disk]:
        """Every disk of every running instance: ``{key: Disk}``."""

    @abc.abstractmethod
    def get_block_stats(self) -> rates.Readings:
        """Cumulative counters of every disk, in as few calls as possible.

        The same keys in the same order while the disks do not change (the
        sampler then reuses what it worked out per disk).
        """

    @abc.abstractmethod
    def get_iotune(self, instance_uuid: str, dev: str) -> dict[str, int]:
        """The live iotune of one disk (twelve keys)."""

    @abc.abstractmethod
    def set_iotune(self, instance_uuid: str, dev: str, limits: caps.Limits,
                   static: caps.Limits | None = None) -> None:
        """Apply a complete, consistent iotune set live (twelve keys).

        ``static``: the disk's static ceiling; with it, a driver may keep
        a record that ``limits`` (when they differ) are iotguard's cap, so
        that wherever the domain goes with them they are not taken for a
        static ceiling.
        """
