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

"""Noisy neighbour: a writer next to a server with a floor gets capped.

A skeleton of the end-to-end check, for a devstack with the iotguard
agent next to nova-compute (``[iotguard_feature_enabled] agent = True``)
and SSH access to the guests (cirros). Whether the writer saturates the
domain depends on the node's disk and on the capacity profile iotguard
was given: the job calibrates the compute node's local domain low
(``IOTGUARD_DOMAIN_PROFILES`` in devstack, e.g. ``local:<host>=800:
40000000``) so that a ``dd`` loop is noise. It has not been run here:
there is no devstack on the machine this was written on.
"""

from tempest.common import utils
from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib.common.utils import test_utils
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc
from tempest.scenario import manager

CONF = config.CONF

WRITE_LOOP = ("nohup sh -c 'while true; do dd if=/dev/zero of=%s bs=1M "
              "count=32 conv=fsync; done' >/dev/null 2>&1 &")


class NoisyNeighbourTest(manager.ScenarioTest):

    credentials = ['primary', 'admin']

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.service_available.iotguard:
            raise cls.skipException('iotguard is not available')
        if not CONF.iotguard_feature_enabled.agent:
            raise cls.skipException('no iotguard agent next to n-cpu')
        if not CONF.service_available.nova:
            raise cls.skipException('Nova is not available')

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.client = cls.os_primary.iotguard_v1.IotguardClient()
        cls.admin_client = cls.os_admin.iotguard_v1.IotguardClient()

    def _tier(self, **fields):
        name = data_utils.rand_name(prefix='tempest', name='iotguard')
        self.admin_client.create_tier(name=name, **fields)
        self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                        self.admin_client.delete_tier, name)
        return name

    def _server(self, keypair, security_group, group_id):
        server = self.create_server(
            key_name=keypair['name'],
            security_groups=[{'name': security_group['name']}],
            scheduler_hints={'group': group_id})
        ssh = self.get_remote_client(
            self.get_server_ip(server), private_key=keypair['private_key'],
            server=server)
        return server, ssh

    def _wait(self, predicate, what):
        if not test_utils.call_until_true(predicate,
                                          CONF.iotguard.build_timeout,
                                          CONF.iotguard.build_interval):
            self.fail('iotguard: no %s within %ss'
                      % (what, CONF.iotguard.build_timeout))

    def _known(self, uuid):
        try:
            self.client.show_instance(uuid)
        except lib_exc.NotFound:
            return False
        return True

    def _capped(self, uuid):
        disks = self.client.show_instance(uuid)['instance']['disks']
        return any(d['cap'] for d in disks)

    @decorators.idempotent_id('4f5a6b7c-8d9e-4fa0-b1c2-3d4e5f6a7b11')
    @decorators.attr(type='slow')
    @utils.services('compute', 'network')
    def test_writer_is_capped_floor_kept(self):
        keypair = self.create_keypair()
        security_group = self.create_security_group()
        group = self.os_primary.server_groups_client.create_server_group(
            name=data_utils.rand_name(prefix='tempest', name='iotguard'),
            policies=['affinity'])['server_group']
        self.addCleanup(self.os_primary.server_groups_client
                        .delete_server_group, group['id'])
        victim, victim_ssh = self._server(keypair, security_group,
                                          group['id'])
        noisy, noisy_ssh = self._server(keypair, security_group,
                                        group['id'])
        for server in (victim, noisy):
            self._wait(lambda: self._known(server['id']),
                       'record of instance %s' % server['id'])

        floor = self._tier(min_iops=50, min_bytes_sec=2e6, weight=4)
        bulk = self._tier(weight=1)
        self.client.set_instance_tier(victim['id'], floor)
        self.client.set_instance_tier(noisy['id'], bulk)

        victim_ssh.exec_command(WRITE_LOOP % '/home/cirros/steady')
        noisy_ssh.exec_command(WRITE_LOOP % '/home/cirros/noise')

        self._wait(lambda: self._capped(noisy['id']),
                   'cap on the noisy server %s' % noisy['id'])
        decisions = self.client.list_decisions(
            instance=noisy['id'])['decisions']
        self.assertIn('cap', [d['action'] for d in decisions])
        self.assertTrue(all(d['reason'] for d in decisions))
        # The server with the floor is not the one throttled below it.
        for disk in self.client.show_instance(victim['id'])['instance'][
                'disks']:
            if disk['cap'] is None:
                continue
            iops = disk['cap']['limits'].get('total_iops_sec', 0)
            self.assertTrue(iops == 0 or iops >= 50, disk['cap'])
