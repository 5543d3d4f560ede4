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

:meth:`Metadata.set_tier` and :meth:`Metadata.unset_tier` answer what
happened (``synced``, ``disabled`` or ``failed``) and never raise:
iotguard's own record of the choice is already committed and is what the
controller uses.
"""

import typing

from openstack.compute.v2 import _proxy as compute_proxy
from openstack import connection
from openstack import exceptions as sdk_exc
from oslo_config import cfg
from oslo_log import log

from iotguard import clients

LOG = log.getLogger(__name__)

METADATA_KEY = 'iotguard:tier'


class Metadata:
    """Nova's ``iotguard:tier`` of instances, kept like iotguard's choice.

    A no-op when ``[api] nova_metadata_sync`` is off. The connection is
    made on first use, not here (no I/O at start-up), and then reused.
    """

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        self._conn: connection.Connection | None = None

    def _sync(self, what: str, instance_uuid: str,
              call: typing.Callable[[compute_proxy.Proxy], object]) -> str:
        if not self.conf.api.nova_metadata_sync:
            return 'disabled'
        try:
            if self._conn is None:
                self._conn = clients.get_connection(self.conf)
            call(self._conn.compute)
        except Exception as exc:
            LOG.warning('Could not %(what)s on instance %(uuid)s in Nova: '
                        '%(exc)s', {'what': what, 'uuid': instance_uuid,
                                    'exc': exc})
            return 'failed'
        return 'synced'

    def set_tier(self, instance_uuid: str, tier: str) -> str:
        return self._sync(
            'set %s=%s' % (METADATA_KEY, tier), instance_uuid,
            lambda compute: compute.set_server_metadata(
                instance_uuid, **{METADATA_KEY: tier}))

    def unset_tier(self, instance_uuid: str) -> str:
        def delete(compute: compute_proxy.Proxy) -> None:
            try:
                compute.delete_server_metadata(instance_uuid,
                                               [METADATA_KEY])
            except sdk_exc.NotFoundException:
                pass    # the key (or the server) is gone already

        return self._sync('remove %s' % METADATA_KEY, instance_uuid, delete)
