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

"""Policy enforcement: one Enforcer per application, built from its conf."""

from oslo_config import cfg
from oslo_policy import policy

from iotguard.api import policies


def make_enforcer(conf: cfg.ConfigOpts) -> policy.Enforcer:
    """An Enforcer with the in-code defaults registered (no I/O yet)."""
    enforcer = policy.Enforcer(conf)
    enforcer.register_defaults(policies.list_rules())
    return enforcer


def get_enforcer() -> policy.Enforcer:
    """Entry point for oslopolicy-policy-generator and friends."""
    conf = cfg.ConfigOpts()
    conf([], project='iotguard')
    return make_enforcer(conf)
