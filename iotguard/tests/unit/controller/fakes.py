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

"""Fakes for the controller's unit tests: samples, DB, agents, notifier."""

import uuid


def sample(instance_uuid=None, dev='vda', timestamp=1000.0, iops=10.0,
           bytes_sec=40960.0, latency_ms=1.0, gap=None, **extra):
    """A valid per-disk sample (agent shape), split evenly read/write."""
    rate = None if gap else 1.0
    out = {
        'instance_uuid': instance_uuid or str(uuid.uuid4()), 'dev': dev,
        'volume_id': None, 'project_id': 'p1',
        'timestamp': timestamp, 'interval_s': 5.0, 'gap': gap,
        'read_iops': rate and iops / 2, 'write_iops': rate and iops / 2,
        'read_bytes_sec': rate and bytes_sec / 2,
        'write_bytes_sec': rate and bytes_sec / 2,
        'read_latency_ms': rate and latency_ms,
        'write_latency_ms': rate and latency_ms,
        'flush_ops': rate and 0.0,
        'static': {}, 'cap': None, 'lease_expires_at': None,
        'decision_id': None,
    }
    out.update(extra)
    return out
