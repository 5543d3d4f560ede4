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

"""Tell Nova and Cinder what changed: a tier choice, the tiers themselves.

A tier choice becomes the instance metadata ``iotguard:tier``; a tier
created, changed or deleted brings the flavors and volume types in step
(:func:`iotguard.manage.tiersync.sync`, as ``iotguard-manage tier sync``).

:meth:`Metadata.set_tier`, :meth:`Metadata.unset_tier` and
:meth:`Metadata.sync_tiers` answer what happened (``synced``, ``disabled``
or ``failed``) and never raise: iotguard's own record is already committed
and is what the controller uses.
"""

from collections.abc import Sequence
import typing

from openstack.compute.v2 import _proxy as compute_proxy
from openstack import connection
from openstack import exceptions as sdk_exc
from oslo_config import cfg
from oslo_log import log

from iotguard import clients
from iotguard.controller import placement
from iotguard.db import tiers as db_tiers
from iotguard.manage import tiersync

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
        return self._call('%s on instance %s in Nova' % (what, instance_uuid),
                          lambda conn: call(conn.compute))

    def _call(self, what: str,
              call: typing.Callable[[connection.Connection], object]) -> str:
        try:
            if self._conn is None:
                self._conn = clients.get_connection(self.conf)
            call(self._conn)
        except Exception as exc:
            LOG.warning('Could not %(what)s: %(exc)s',
                        {'what': what, 'exc': exc})
            return 'failed'
        return 'synced'

    def sync_tiers(self, tiers: Sequence[db_tiers.Tier]) -> str:
        """Flavors and volume types in step with ``tiers`` (every tier).

        ``disabled`` when ``[api] tier_sync`` is off or
        ``[service_credentials]`` names no ``auth_type``.
        """
        if not (self.conf.api.tier_sync
                and self.conf[clients.GROUP].auth_type):
            return 'disabled'
        tiers_conf = self.conf.tiers
        return self._call('bring Nova and Cinder in step with the tiers',
                          lambda conn: tiersync.sync(
                              conn, tiers, tiers_conf.flavor_tiers,
                              tiers_conf.volume_type_prefix,
                              floor=placement.flavor_request(self.conf)))

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
