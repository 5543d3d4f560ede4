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

"""Which tier a disk has: a pure function of the choices and refusals."""

from collections.abc import Mapping
import typing
from typing import Any
from typing import Optional

#: Sources of a tier choice, strongest first: the tenant's choice through
#: iotguard's API, the flavor's ``iotguard:tier`` (for the disks the flavor
#: describes: the image-backed root, ephemeral and swap), the volume type's
#: (for that volume). ``[tiers] default_tier`` comes after them all.
TIER_SOURCES = ('api', 'flavor', 'volume_type')
#: The ``dev`` of a choice for every disk of an instance.
ALL_DISKS = '*'

T = typing.TypeVar('T')
#: The key of a choice or refusal: ``(instance_uuid, dev or '*', source)``.
Key = tuple[str, str, str]


def source_applies(source: str, volume_id: Optional[str]) -> bool:
    """Whether a choice from ``source`` can give a disk its tier."""
    if source == 'flavor':
        return not volume_id
    if source == 'volume_type':
        return bool(volume_id)
    return True


def resolve(choices: Mapping[Key, T], default: Optional[T], disk: Any,
            refusals: Optional[Mapping[Key, Any]] = None
            ) -> tuple[Optional[T], Optional[str], Any]:
    """``(tier, source, refused)`` of one disk; first match wins.

    ``disk``: anything with ``instance_uuid``, ``dev`` and ``volume_id``
    (a row, a record). Sources in the order of :data:`TIER_SOURCES`, each
    only where it applies (:func:`source_applies`); within a source a
    choice for the disk beats one for all its disks; no choice gives
    ``default`` (source ``'default'``, or None without a default).
    ``refused``: the refusal of a stronger source than the one that gave
    the tier, or None.
    """
    refused = None
    for source in TIER_SOURCES:
        if not source_applies(source, disk.volume_id):
            continue
        for which in (disk.dev, ALL_DISKS):
            key = (disk.instance_uuid, which, source)
            if key in choices:
                return choices[key], source, refused
            if refused is None and refusals and key in refusals:
                refused = refusals[key]
    return default, 'default' if default else None, refused
