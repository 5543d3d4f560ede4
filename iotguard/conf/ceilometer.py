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

"""Options of the controller's Ceilometer source (notifier:// samples)."""

from oslo_config import cfg

GROUP = 'ceilometer'

OPTS: list[cfg.Opt] = [
    cfg.BoolOpt('enabled',
                default=False,
                help="Listen to Ceilometer's samples on the message bus "
                     "(Ceilometer's notifier:// publisher) and turn the "
                     "disk.device.* meters into per-disk rates."),
    cfg.StrOpt('topic',
               default='metering',
               help="The topic Ceilometer's notifier publisher sends to "
                    "([publisher_notifier] metering_topic in "
                    "ceilometer.conf, or topic= in the publisher URL)."),
    cfg.StrOpt('exchange',
               default='ceilometer',
               help="The exchange Ceilometer publishes on: its "
                    "[DEFAULT] control_exchange, ``ceilometer`` unless "
                    "changed there."),
    cfg.StrOpt('pool',
               help='Listener pool (the queue this controller reads). '
                    'Unset: iotguard-ceilometer.<[DEFAULT] host>, so every '
                    'controller gets every sample, as it must: a domain '
                    'may move to any controller, and a rate needs two '
                    'consecutive readings of the same disk in the same '
                    'process. Give several controllers the same pool only '
                    'if they should split the samples between them.'),
    cfg.FloatOpt('polling_interval',
                 default=300.0, min=1.0,
                 help="Seconds between two of Ceilometer's polls of the "
                      "disk meters (polling.yaml). Two readings more than "
                      "three intervals apart give a gap, not a rate."),
]
