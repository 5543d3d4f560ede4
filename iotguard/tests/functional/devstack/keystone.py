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

"""devstack's get-or-create Keystone helpers, for the devstack harness.

devstack runs them with the ``openstack`` CLI as the
``devstack-system-admin`` cloud; this does the same lookups and creations
through openstacksdk (one process instead of two or three CLI runs, each of
which costs seconds on this machine). Each command prints the id devstack's
function prints::

    keystone.py user NAME PASSWORD DOMAIN
    keystone.py role ROLE USER PROJECT USER_DOMAIN PROJECT_DOMAIN
    keystone.py service NAME TYPE DESCRIPTION
    keystone.py endpoint SERVICE INTERFACE URL REGION
"""

import sys

import openstack


def user(identity, name, password, domain):
    domain_id = identity.find_domain(domain, ignore_missing=False).id
    found = identity.find_user(name, domain_id=domain_id)
    if found is None:
        found = identity.create_user(name=name, password=password,
                                     domain_id=domain_id)
    return found.id


def role(identity, role_name, user_name, project, user_domain,
         project_domain):
    udom = identity.find_domain(user_domain, ignore_missing=False).id
    pdom = identity.find_domain(project_domain, ignore_missing=False).id
    found = identity.find_role(role_name, ignore_missing=False)
    who = identity.find_user(user_name, domain_id=udom, ignore_missing=False)
    where = identity.find_project(project, domain_id=pdom,
                                  ignore_missing=False)
    identity.assign_project_role_to_user(where, who, found)  # idempotent
    return found.id


def _service_id(identity, ref):
    # "openstack service show REF" finds a service by id, type or name.
    for candidate in identity.services():
        if ref in (candidate.id, candidate.type, candidate.name):
            return candidate.id
    return None


def service(identity, name, service_type, description):
    return _service_id(identity, service_type) or identity.create_service(
        name=name, type=service_type, description=description).id


def endpoint(identity, service_ref, interface, url, region):
    service_id = _service_id(identity, service_ref)
    if service_id is None:
        sys.exit('no service %s' % service_ref)
    for found in identity.endpoints(service_id=service_id,
                                    interface=interface, region_id=region):
        return found.id
    return identity.create_endpoint(service_id=service_id,
                                    interface=interface, url=url,
                                    region_id=region).id


COMMANDS = {'user': user, 'role': role, 'service': service,
            'endpoint': endpoint}


def main(argv):
    conn = openstack.connect(cloud='devstack-system-admin')
    try:
        print(COMMANDS[argv[0]](conn.identity, *argv[1:]))
    finally:
        conn.close()


if __name__ == '__main__':
    main(sys.argv[1:])
