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

"""Base class of the iotguard tempest tests."""

from collections.abc import Callable
from typing import Any

from tempest.common import compute
from tempest.common import waiters
from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib.common.utils import test_utils
from tempest.lib import exceptions as lib_exc
from tempest import test

from iotguard.tempest_plugin.services.v1 import iotguard_client

CONF = config.CONF


class BaseIotguardTest(test.BaseTestCase):
    """Clients for the admin, a project (primary) and another one (alt)."""

    credentials = ['primary', 'alt', 'admin']
    admin_client: iotguard_client.IotguardClient
    client: iotguard_client.IotguardClient
    alt_client: iotguard_client.IotguardClient

    @classmethod
    def skip_checks(cls) -> None:
        super().skip_checks()
        if not CONF.service_available.iotguard:
            raise cls.skipException('iotguard is not available')

    @classmethod
    def setup_clients(cls) -> None:
        super().setup_clients()
        cls.admin_client = cls.os_admin.iotguard_v1.IotguardClient()
        cls.client = cls.os_primary.iotguard_v1.IotguardClient()
        cls.alt_client = cls.os_alt.iotguard_v1.IotguardClient()

    @classmethod
    def create_tier(cls, **fields: Any) -> dict[str, Any]:
        """A tier made by the admin, deleted after the class."""
        fields.setdefault('name', data_utils.rand_name(
            prefix='tempest', name='iotguard-tier'))
        tier: dict[str, Any] = cls.admin_client.create_tier(**fields)['tier']
        cls.addClassResourceCleanup(
            test_utils.call_and_ignore_notfound_exc,
            cls.admin_client.delete_tier, tier['name'])
        return tier

    @classmethod
    def create_server(cls, clients: Any, **kwargs: Any) -> dict[str, Any]:
        """An ACTIVE server of ``clients``' project, deleted afterwards."""
        server: dict[str, Any] = compute.create_test_server(
            clients, wait_until='ACTIVE', **kwargs)[0]
        cls.delete_server_at_end(cls.addClassResourceCleanup,
                                 clients.servers_client, server['id'])
        return server

    @classmethod
    def delete_server_at_end(cls, add_cleanup: Callable[..., None],
                             servers_client: Any, uuid: str) -> None:
        """Delete the server ``uuid`` with ``add_cleanup``'s cleanups."""
        # Cleanups run last-in first-out: delete, wait until Nova is done,
        # then until iotguard forgot it (its tier choices go with it, so
        # the tiers made before the server can be deleted after it).
        add_cleanup(cls.wait_for_instance_gone, uuid)
        add_cleanup(waiters.wait_for_server_termination, servers_client,
                    uuid)
        add_cleanup(test_utils.call_and_ignore_notfound_exc,
                    servers_client.delete_server, uuid)

    @staticmethod
    def _known(client: iotguard_client.IotguardClient, uuid: str) -> bool:
        try:
            client.show_instance(uuid)
        except lib_exc.NotFound:
            return False
        return True

    @staticmethod
    def poll(predicate: Callable[[], object], what: str,
             timeout: float | None = None) -> None:
        """Until ``predicate()`` is true; ``what`` did not happen if not."""
        timeout = timeout or CONF.iotguard.build_timeout
        if not test_utils.call_until_true(predicate, timeout,
                                          CONF.iotguard.build_interval):
            raise lib_exc.TimeoutException('%s within %ss' % (what, timeout))

    @classmethod
    def wait_for_instance_gone(cls, uuid: str) -> None:
        """Wait until iotguard no longer knows the instance ``uuid``."""
        cls.poll(lambda: not cls._known(cls.admin_client, uuid),
                 'iotguard still knows instance %s after its deletion' % uuid)

    @classmethod
    def wait_for_instance(cls, client: iotguard_client.IotguardClient,
                          uuid: str) -> dict[str, Any]:
        """iotguard's view of the instance, once membership has seen it."""
        cls.poll(lambda: cls._known(client, uuid),
                 'iotguard did not learn about instance %s' % uuid)
        instance: dict[str, Any] = client.show_instance(uuid)['instance']
        return instance
