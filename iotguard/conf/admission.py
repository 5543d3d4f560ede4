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

"""Options of tier admission control."""

from oslo_config import cfg

GROUP = 'admission'

OPTS: list[cfg.Opt] = [
    cfg.FloatOpt('max_commit_ratio',
                 default=0.9, min=0.0, max=1.0,
                 help='A tier choice is admitted only while the '
                      'cost-weighted floors committed in the disk\'s '
                      'domain stay within this fraction of the domain\'s '
                      'capacity (1.0 device-second per second).'),
]
