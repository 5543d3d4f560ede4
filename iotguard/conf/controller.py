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

OPTS = [
    cfg.FloatOpt('decision_interval',
                 default=5.0, min=1.0,
                 help='Seconds between two decision rounds of a domain. '
                      'A sample older than three intervals is stale and '
                      'never acted on.'),
    cfg.StrOpt('default_policy',
               default='guarantee',
               choices=[('none', 'never cap (best effort)'),
                        ('static', 'cap every disk at its tier ceiling'),
                        ('ntt', "the NTT paper's Algorithm 1"),
                        ('guarantee', 'keep every floor, share the spare '
                                      'capacity by weight')],
               help='Decision policy of a domain that names none.'),
]
