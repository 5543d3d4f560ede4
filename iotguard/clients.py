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

"""Sessions and clients for the services iotguard calls (Nova, Cinder,
Gnocchi), authenticated from [service_credentials].

Constructors do no I/O: keystoneauth authenticates on the first request.
"""

from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
import openstack
from oslo_config import cfg

from iotguard.conf import service_credentials

GROUP = service_credentials.GROUP


def get_session(conf: cfg.ConfigOpts) -> ks_session.Session:
    """A keystoneauth session from [service_credentials]."""
    auth = ks_loading.load_auth_from_conf_options(conf, GROUP)
    return ks_loading.load_session_from_conf_options(conf, GROUP, auth=auth)


def get_connection(conf: cfg.ConfigOpts,
                   session: ks_session.Session | None = None
                   ) -> openstack.connection.Connection:
    """An openstacksdk Connection on that session (Nova, Cinder, ...)."""
    group = conf[GROUP]
    return openstack.connection.Connection(
        session=session or get_session(conf),
        region_name=group.region_name,
        interface=group.interface,
        app_name='iotguard')
