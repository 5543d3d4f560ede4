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

"""The two-host cloud with iotguard, as the fault runner builds and reads it.

:class:`CloudBed`: the cloud of
:class:`~iotguard.tests.functional.test_cloud_multihost.MultiHostCloudTest`
(Nova on two simulated compute hosts, Nova's and Cinder's disks on one
throttled Ceph cluster: one domain), iotguard deployed on it as there
(the API, two controllers sharing the domains over tooz on Redis, an
agent in each host), a quiet guest on the tier mh-silver on one host and
a noisy guest (four writers, no tier) on the other, capped. It answers
what :func:`benchmarks.faults.episode` asks a bed: the guests' libvirt
domains (each from its own host's libvirtd), the noisy disk's lease in
its agent's state file, the processes by their part (:class:`Roles`),
the API.
"""

import os
import subprocess
import urllib.parse
import uuid

import fixtures
import libvirt
import numpy as np
from tooz import coordination
from tooz import hashring

from benchmarks import bed as bed_mod
from iotguard.tests.fixtures import database
from iotguard.tests.fixtures import deployment
from iotguard.tests.functional import test_cloud_multihost as mh

#: The quiet guest's writes (the image's paced writer): 64 KiB blocks,
#: 16 at a time, then half a second's pause.
QUIET = {'iotg_bs': '64k', 'iotg_count': '16', 'iotg_pause': '0.5'}


class Roles:
    """iotguard's processes by their part in an episode.

    ``controller``: the controller that owns the Ceph domain when the
    episode starts (:meth:`CloudBed.ready`), ``standby`` the other one;
    ``agent``: the noisy guest's host's agent, ``agent-quiet`` the quiet
    guest's; ``api``. ``procs`` and each ``<role>.log`` in ``dir`` (links
    to the deployment's logs) are keyed by role; :meth:`spawn` starts a
    role's process again as the deployment started it.
    """

    def __init__(self, iotguard, workdir, names):
        self.iotguard, self.names = iotguard, dict(names)
        self.dir = os.path.join(workdir, 'roles')
        os.makedirs(self.dir, exist_ok=True)
        self.assign({})

    def assign(self, changes):
        """Roles given to other processes; the log links follow.

        ``changes``: ``{role: (name, kind, host, popen)}``.
        """
        self.names.update(changes)
        for role, (name, _, _, _) in self.names.items():
            link = os.path.join(self.dir, role + '.log')
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink(os.path.join(self.iotguard.dir, name + '.log'), link)

    @property
    def procs(self):
        return {role: self.iotguard.procs[name]
                for role, (name, _, _, _) in self.names.items()}

    def spawn(self, role, env=None):
        if env:
            raise ValueError('the cloud bed starts its processes as the '
                             'deployment does, without a changed env')
        name, kind, host, popen = self.names[role]
        return self.iotguard.spawn(name, kind, host, popen=popen)


class CloudBed(fixtures.Fixture):
    """The two-host Ceph cloud with iotguard; see the module doc.

    ``deployed``: ``(cloud, iotguard, group, static flavor, tier
    flavors)`` of a cloud already started with iotguard (the multi-host
    tests'): its guests are booted there and deleted at the end; without
    it, the cloud is started in ``workdir``.
    """

    def __init__(self, workdir, deployed=None):
        super().__init__()
        self.dir, self.deployed = workdir, deployed

    def _deploy(self):
        why = mh.unavailable()
        if why:
            raise RuntimeError(why)
        cloud = self.useFixture(mh.ceph_cloud(os.path.join(self.dir,
                                                           'cloud')))
        static = cloud.flavor('iotguard-faults', {
            'quota:disk_total_bytes_sec': str(mh.STATIC)})
        db = self.useFixture(database.Database('mysql'))
        group = 'iotguard-faults-' + uuid.uuid4().hex[:8]
        iotguard = self.useFixture(deployment.Deployment(
            cloud, db.url, mh.INTERVAL, mh.LEASE, mh.SAMPLE,
            extra=mh.ceph_extra(group)))
        _, flavors = mh.start_iotguard(cloud, iotguard)
        return cloud, iotguard, group, static, flavors

    def boot(self, name, flavor, host, **kwargs):
        server = self.cloud.boot(name, flavor, host=host, **kwargs)
        if self.deployed:
            compute = self.cloud.conn.compute
            self.addCleanup(compute.wait_for_delete, server, wait=120)
            self.addCleanup(compute.delete_server, server,
                            ignore_missing=True)
        return server

    def _setUp(self):
        (self.cloud, self.iotguard, group, static,
         flavors) = self.deployed or self._deploy()
        self.group = group.encode()
        self.noisy_host, self.quiet_host = self.cloud.hosts
        self.conns = {}
        quiet = self.boot('faults-quiet', flavors['silver'],
                          self.quiet_host, metadata=QUIET)
        self.quiet = [self.domain(self.quiet_host, quiet)]
        bed_mod.wait(lambda: self._tier(quiet) == 'mh-silver', 60,
                     'the quiet guest on its tier')
        bed_mod.wait(lambda: bed_mod.written(self.quiet[0]) > 0, 60,
                     'the quiet guest writing')
        # what its floor promises it: at most the floor, at most its demand
        self.demand = np.minimum(mh.FLOOR, bed_mod.rates_alone(self.quiet))
        noisy = self.boot('faults-noisy', static, self.noisy_host,
                          user_data=mh.NOISY % {'dev': 'vda'})
        self.noisy = self.domain(self.noisy_host, noisy)
        self.static = bed_mod.limits(self.noisy)
        self.tiers = ['mh-silver', 'mh-bronze']
        agents = {h: ('agent-' + h.name, 'agent', h.name, h.popen)
                  for h in self.cloud.hosts}
        self.services = Roles(self.iotguard, self.dir, {
            'api': ('api', 'api', 'iotguard-api', subprocess.Popen),
            'agent': agents[self.noisy_host],
            'agent-quiet': agents[self.quiet_host]})
        self.state_file = os.path.join(
            self.iotguard.dir, 'agent-%s-state.json' % self.noisy_host.name)
        broker = urllib.parse.urlsplit(self.cloud.transport_url)
        self._cut_rule = ['OUTPUT', '-p', 'tcp', '-d', broker.hostname,
                          '--dport', str(broker.port or 5672), '-j', 'DROP']
        self.addCleanup(self.uncut)
        bed_mod.wait(self.capped, 60, 'the noisy guest capped')

    def domain(self, host, server):
        """``server``'s libvirt domain, from ``host``'s libvirtd."""
        if not self.conns:
            self.addCleanup(self._close)
        if host.name not in self.conns:
            self.conns[host.name] = libvirt.open(host.libvirt_uri)
        return self.conns[host.name].lookupByUUIDString(server.id)

    def _close(self):
        # The domains first, while the hosts' libvirtds still answer: one
        # freed after them hangs the process in its connection's close.
        self.quiet, self.noisy = [], None
        for conn in self.conns.values():
            conn.close()
        self.conns = {}

    def _tier(self, server):
        return ((self.iotguard.disks(server) or {}).get('vda') or {}).get(
            'tier')

    def owner(self):
        """The controller process owning the Ceph domain: its name.

        The group's members hashed as the controllers' partitioner hashes
        them (tooz's ring, each member's weight 1).
        """
        coord = coordination.get_coordinator(mh.REDIS, b'faults-runner')
        coord.start()
        try:
            members = coord.get_members(self.group).get()
        finally:
            coord.stop()
        member, = hashring.HashRing(members).get_nodes(mh.DOMAIN.encode())
        # member ids are '<[DEFAULT] host>:<8 hex>'
        return 'controller-' + member.decode().split(':')[0].rsplit('-', 1)[1]

    def ready(self):
        """Before an episode: the noisy guest capped, the roles set."""
        bed_mod.wait(self.capped, 60, 'the noisy guest capped again')
        owner = self.owner()
        standby = ({'controller-1', 'controller-2'} - {owner}).pop()
        self.services.assign({
            role: (name, 'controller', 'iotguard-' + name, subprocess.Popen)
            for role, name in (('controller', owner), ('standby', standby))})

    def capped(self):
        return bed_mod.limits(self.noisy) != self.static

    def lease(self):
        return bed_mod.state_lease(self.state_file, self.noisy)

    def api(self, method, path, who, body=None):
        """The API as the cloud's admin (``who`` is the shared bed's)."""
        resp = self.iotguard.request(method, path, body)
        if resp.status_code >= 300:
            raise RuntimeError('%s %s -> %s %s' % (
                method, path, resp.status_code, resp.text))
        return resp.json()

    def cut(self):
        """The noisy guest's host cut off from the broker.

        Its agent's and nova-compute's packets to it dropped, in the
        host's network namespace.
        """
        self.noisy_host.run(['iptables', '-I'] + self._cut_rule)

    def uncut(self):
        self.noisy_host.run(['iptables', '-D'] + self._cut_rule, check=False)
