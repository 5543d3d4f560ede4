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

"""Hand-built snapshots for the policy tests.

The test profile makes hand arithmetic easy: a 4 KiB operation costs
1/1000 + 4096/6553600 = 0.001625 device-seconds, a 64 KiB one
1/1000 + 65536/6553600 = 0.011.
"""

from iotguard.policy import base

KIB = 1024.0
PROFILE = base.Profile(iops_4k=1000.0, bytes_sec=6553600.0)
PLAIN = base.Tier('plain')
INTERVAL = 5.0


def disk(name, ops=0.0, size=64 * KIB, tier=PLAIN, **kw):
    """A disk doing ``ops`` writes/s of ``size`` bytes."""
    return base.DiskState(name, tier, write_iops=ops,
                          write_bytes_sec=ops * size, **kw)


def snapshot(*disks, profile=PROFILE):
    return base.DomainSnapshot.from_disks('pool', profile, INTERVAL,
                                          list(disks))


def by_disk(decisions):
    """Decisions keyed by disk id (each disk appears at most once)."""
    result = {d.disk_id: d for d in decisions}
    assert len(result) == len(decisions), decisions
    return result
