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

"""Options of iotguard-controller, the decision loop."""

from oslo_config import cfg

GROUP = 'controller'

OPTS: list[cfg.Opt] = [
    cfg.FloatOpt('decision_interval',
                 default=5.0, min=1.0,
                 help='Seconds between two decision rounds of a domain. '
                      'A sample older than three intervals is stale and '
                      'never acted on.'),
    cfg.FloatOpt('urgent_interval',
                 default=1.0, min=0.0,
                 help='When an agent marks a disk urgent (``[agent] '
                      'urgent_samples``) and that disk holds a floor it '
                      'does not get, its domain is decided at once rather '
                      'than at the next round: at most once per this many '
                      'seconds per domain (a later urgent sample waits for '
                      'the rest), never while a round runs. The same holds, '
                      'with no agent option, for a disk short of its floor '
                      'whose samples resume (the first fresh one after '
                      'none: this controller started, the broker or the '
                      'agent is back, the disk is new). 0: such samples '
                      'are stored like any other and wait for the round.'),
    cfg.StrOpt('default_policy',
               default='guarantee',
               choices=[('none', 'never cap (best effort)'),
                        ('static', 'cap every disk at its tier ceiling'),
                        ('ntt', "the NTT paper's Algorithm 1"),
                        ('guarantee', 'keep every floor, share the spare '
                                      'capacity by weight')],
               help='Decision policy of a domain that names none.'),
    cfg.FloatOpt('lease_seconds',
                 default=15.0, min=1.0,
                 help='Lease of every cap sent to an agent: the agent '
                      'restores the static limits by itself when a cap is '
                      'not renewed in time, so a dead controller never '
                      'leaves a disk throttled. Caps in force are renewed '
                      'every decision round; keep this at least two '
                      'decision intervals (default: three).'),
    cfg.BoolOpt('register_local_disks',
                default=True,
                help='Record in the database the image-backed (ephemeral) '
                     'disks an agent reports that membership does not know '
                     'yet, in the host\'s ephemeral domain (``local:<host>`` '
                     'unless ``[membership] ephemeral_domain(s)`` names '
                     'another; created without '
                     'a capacity profile when missing: calibrate it with '
                     '``iotguard-manage domain calibrate``). Volume disks '
                     'are left to membership, which asks Cinder for their '
                     'pool.'),
    cfg.IntOpt('rpc_thread_pool_size',
               default=1, min=1,
               help='Threads of the controller\'s RPC server, which '
                    'receives the agents\' ``report_samples`` batches and '
                    'heartbeats (oslo.messaging\'s ``[DEFAULT] '
                    'executor_thread_pool_size``, 64 by default, is left '
                    'to the notification listeners). Checking and storing '
                    'a batch is CPU work that holds Python\'s GIL: more '
                    'threads do not receive faster, they fight for the '
                    'GIL (a 50-disk batch cost twice the CPU with 8 or 64 '
                    'threads than with one). Raise it only when database '
                    'writes (heartbeats, newly seen local disks) are slow '
                    'enough to hold up the batches behind them.'),
    cfg.FloatOpt('rates_write_interval',
                 default=30.0, min=0.0,
                 help='Seconds between two writes of a domain\'s disk rates '
                      'to the database, where the API\'s disk views read '
                      'them (one transaction per round for all its '
                      'domains; on PostgreSQL and MySQL 8.0.4+ / MariaDB '
                      '10.6+ one statement per 10,000 disks). 0: never.'),
    cfg.IntOpt('record_retention',
               default=24, min=1,
               help='Hours each disk\'s record (per minute: the seconds its '
                    'floor was due and kept, capped, its mean rates, its '
                    'floor, its tightest cap and the reason of its cap; '
                    'GET /v1/instances/{uuid}/disks/{dev}/record) is '
                    'kept; one row per disk with a floor or a cap per '
                    'minute, 1,440 rows per such disk and day, about '
                    '280 kB with their indexes on PostgreSQL.'),
    cfg.FloatOpt('clock_offset_warning',
                 default=2.0, min=0.1,
                 help='Seconds a compute host\'s clock may be off this '
                      'controller\'s before a warning names the host (one '
                      'line, and one more when it is back within). The '
                      'offset is learned from the host\'s samples; its '
                      'samples are judged and its caps\' leases sent on its '
                      'own clock either way, so a host off by seconds or '
                      'minutes keeps its floors, but keep the hosts '
                      'synchronised (NTP): the offset is only as good as '
                      'the least delayed of its recent samples.'),
    cfg.FloatOpt('violation_latency_ms',
                 default=20.0, min=0.0,
                 help='A disk below its floor whose mean latency per '
                      'operation is above this while it keeps operations '
                      'in flight has unmet demand: its guarantee is '
                      'violated and an ``iotguard.guarantee.violation`` '
                      'notification is sent when that starts.'),
]
