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

"""Tell Nova about a tier choice: instance metadata ``iotguard:tier``.

The API gets a ``set_nova_tier(context, instance_uuid, tier)`` callable
from :func:`tier_setter`; it answers what happened (``synced``,
``disabled`` or ``failed``) and never raises: iotguard's own record of
the choice is already committed and is what the controller uses.
"""

from oslo_log import log

from iotguard import clients

LOG = log.getLogger(__name__)

METADATA_KEY = 'iotguard:tier'


def connect(conf):
    """An openstacksdk Connection from [service_credentials]."""
    return clients.get_connection(conf)


def _disabled(context, instance_uuid, tier):
    return 'disabled'


def tier_setter(conf, connect=connect):
    """The setter for this conf; a no-op when nova_metadata_sync is off.

    The connection is made on first use, not here (no I/O at start-up).
    """
    if not conf.api.nova_metadata_sync:
        return _disabled
    cache = {}

    def set_nova_tier(context, instance_uuid, tier):
        try:
            if 'conn' not in cache:
                cache['conn'] = connect(conf)
            cache['conn'].compute.set_server_metadata(
                instance_uuid, **{METADATA_KEY: tier})
        except Exception as exc:
            LOG.warning('Could not set %(key)s=%(tier)s on instance '
                        '%(uuid)s in Nova: %(exc)s',
                        {'key': METADATA_KEY, 'tier': tier,
                         'uuid': instance_uuid, 'exc': exc})
            return 'failed'
        return 'synced'

    return set_nova_tier
