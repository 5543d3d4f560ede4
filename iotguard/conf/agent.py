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

"""Options of iotguard-agent, the per-compute-host eyes and hands."""

from oslo_config import cfg

GROUP = 'agent'

OPTS: list[cfg.Opt] = [
    cfg.StrOpt('virt_driver',
               default='libvirt',
               choices=[('libvirt', 'the local libvirt daemon '
                                    '(libvirt-python)'),
                        ('simulated', "the storage model of iotguard.sim, "
                                      "no hypervisor needed")],
               help='Hypervisor driver: where block statistics are read and '
                    'caps are applied.'),
    cfg.StrOpt('libvirt_uri',
               default='qemu:///system',
               help='libvirt connection URI, the same as nova-compute uses '
                    '(``test:///default`` for tests).'),
    cfg.FloatOpt('sample_interval',
                 default=5.0, min=0.1,
                 help='Seconds between two block-statistics samples. Each '
                      'sample is one bulk libvirt call and one '
                      'report_samples batch to the controllers; leases and '
                      're-applies after lifecycle events are checked at '
                      'the same pace.'),
    cfg.BoolOpt('urgent_samples',
                default=False,
                help='Mark a disk urgent in the batch when its demand rose '
                     'since the last sample (idle to busy, or its latency '
                     'per operation doubled): the controller that owns its '
                     'domain then decides the domain at once when the disk '
                     'is short of its floor, instead of at the next round '
                     '(``[controller] urgent_interval``). With '
                     '``sample_interval = 1`` a floor is reclaimed within '
                     'about a second. Needs controllers of controller RPC '
                     'API 1.1 (this release): an older one refuses a '
                     'batch that marks a disk urgent.'),
    cfg.FloatOpt('watch_interval',
                 default=0.0, min=0.0,
                 help='With ``urgent_samples``: seconds between two reads '
                      'of the block statistics between samples (one bulk '
                      'libvirt call each, nothing sent). When a disk\'s '
                      'demand rose since the last sample (its rates since '
                      'the last read against those of the last sample, as '
                      'urgent_samples judges them), the sample is taken and '
                      'sent at once instead of at its interval, so that a '
                      'neighbour that fills the queue is seen within this '
                      'many seconds. 0, or not less than sample_interval: '
                      'no reads between samples.'),
    cfg.BoolOpt('latency_histograms',
                default=False,
                help='Read each virtio disk\'s 99th percentile latency from '
                     'QEMU\'s latency histograms, so that the latency '
                     'objectives of tiers (``latency_p99_ms``) are judged on '
                     'it instead of the interval\'s mean latency. Costs one '
                     'QEMU monitor call per domain per sampling pass (and '
                     'one when the agent first reads a domain, to set the '
                     'histogram on its disks); libvirt has no API for it, '
                     'so the calls go through its QEMU monitor passthrough '
                     'and libvirt marks each such domain tainted '
                     '(``custom-monitor``). Disks on other buses keep the '
                     'mean. Needs controllers of controller RPC API 1.2 '
                     '(this release): an older one refuses a batch that '
                     'carries a percentile.'),
    cfg.StrOpt('state_file',
               default='/var/lib/iotguard/agent-caps.json',
               help='Where the agent keeps the caps it applied (one small '
                    'JSON file, this host only), so that after a restart '
                    'it can prove which live throttles are its own and '
                    'still leased. Empty: keep nothing, and after a '
                    'restart restore the static limits of every disk '
                    'whose live values differ from them.'),
    cfg.StrOpt('simulated_scenario',
               help='simulated driver: scenario name or path, as '
                    'iotguard-sim takes it (required with that driver). '
                    'The agent shows the disks the scenario puts on '
                    '``[DEFAULT] host``.'),
    cfg.IntOpt('simulated_seed',
               default=0,
               help='simulated driver: random seed of the world.'),
]
