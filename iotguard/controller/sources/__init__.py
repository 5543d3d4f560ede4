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

"""Metric sources other than the agents: Ceilometer and Gnocchi.

Each source turns what it reads into the same per-disk sample dicts the
agents send (:data:`iotguard.caps.SAMPLE_SCHEMA`) and hands each one to a
``sink(sample) -> bool`` callable (the controller passes its sample
store's ``add``). The samples carry ``source`` so the audit trail can tell
where the numbers came from. Neither source sees the static ceilings or
the cap in force (only the agent does), so ``static`` is empty and
``cap`` is ``None``; neither sees flushes, so ``flush_ops`` is ``None``.
"""

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

RATE_FIELDS = ('read_iops', 'write_iops', 'read_bytes_sec',
               'write_bytes_sec', 'read_latency_ms', 'write_latency_ms',
               'flush_ops')


def make_sample(source, instance_uuid, dev, timestamp, interval_s,
                rates=None, gap=None, project_id=None, volume_id=None):
    """One sample dict in the agents' shape.

    ``rates`` maps rate fields to values (missing and ``None`` rates stay
    ``None``); with a ``gap`` every rate is ``None``.
    """
    sample = {'instance_uuid': instance_uuid, 'dev': dev,
              'volume_id': volume_id, 'project_id': project_id,
              'timestamp': timestamp, 'interval_s': interval_s,
              'gap': gap, 'static': {}, 'cap': None,
              'lease_expires_at': None, 'decision_id': None,
              'source': source}
    rates = {} if gap is not None else (rates or {})
    for field in RATE_FIELDS:
        sample[field] = rates.get(field)
    return sample


def deliver(sink, samples):
    """Hand every sample to ``sink``; returns how many it accepted.

    A sink that raises is logged, never raised further.
    """
    accepted = 0
    for sample in samples:
        try:
            accepted += bool(sink(sample))
        except Exception:
            LOG.exception('Sample store refused %(uuid)s/%(dev)s',
                          {'uuid': sample['instance_uuid'],
                           'dev': sample['dev']})
    return accepted
