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

"""Noisy neighbour on one compute host, seen through iotguard's API only.

Two servers of the primary project on one host (an affinity group), each
with an ephemeral disk its user data writes to in a loop (no SSH, no
network: the workload starts at boot from the config drive's user data):
a quiet one with a floor tier and a noisy one with a tier whose ceiling it
runs far above, in their host's local domain. The flavor's
``quota:disk_total_bytes_sec`` is the disks' static ceiling.

* The noisy disk is capped (a decision with its reason) at no more than
  its tier's ceiling, and the rates iotguard samples follow the cap; the
  quiet disk is never capped below its floor.
* After a hard reboot of the noisy server (Nova rebuilds the domain from
  the flavor, so the live cap is gone), the cap is back within one
  decision interval: no sample taken later exceeds it.

The test sets the domain's capacity profile low enough for two writers to
make it busy (``[iotguard] scenario_profile_bytes_sec``) and puts back the
profile it found. It needs an iotguard agent next to nova-compute
(``[iotguard_feature_enabled] agent``) and an image whose init runs user
data written as a shell script (Cirros does; so does the busybox guest of
iotguard's own functional cloud).
"""

import base64
import time
from typing import Any

from oslo_utils import timeutils
from tempest.common import utils
from tempest.common import waiters
from tempest import config
from tempest.lib.common import api_microversion_fixture
from tempest.lib.common.utils import data_utils
from tempest.lib.common.utils import test_utils
from tempest.lib import decorators

from iotguard.tempest_plugin.tests import base

CONF = config.CONF

MIB = 1 << 20
STATIC = 40 * MIB
FLOOR = 4 * MIB
CEILING = 8 * MIB
# A sample is one agent interval (1 s in the functional cloud, 5 s by
# default) of 1 MiB writes: a window may hold a request or two more than
# the cap allows on average. Uncapped, the rate is the flavor quota (5x).
TOLERANCE = 1.5

WRITER = '''#!/bin/sh
( while true; do
    dd if=/dev/zero of=/dev/vdb bs=%(bs)s count=%(count)d conv=fsync \
2>/dev/null
    %(pause)s
  done ) &
'''
NOISY = WRITER % {'bs': '1M', 'count': 64, 'pause': ':'}
QUIET = WRITER % {'bs': '64k', 'count': 16, 'pause': 'sleep 1'}


class NoisyNeighbourTest(base.BaseIotguardTest):

    @classmethod
    def skip_checks(cls) -> None:
        super().skip_checks()
        if not CONF.iotguard_feature_enabled.agent:
            raise cls.skipException('no iotguard agent next to n-cpu')
        if not CONF.service_available.nova:
            raise cls.skipException('Nova is not available')

    @classmethod
    def setup_clients(cls) -> None:
        super().setup_clients()
        cls.servers = cls.os_primary.servers_client
        cls.groups = cls.os_primary.server_groups_client
        cls.flavors = cls.os_admin.flavors_client

    @classmethod
    def resource_setup(cls) -> None:
        super().resource_setup()
        base_flavor = cls.flavors.show_flavor(
            CONF.compute.flavor_ref)['flavor']
        flavor = cls.flavors.create_flavor(
            name=data_utils.rand_name(prefix='tempest', name='iotguard'),
            ram=base_flavor['ram'], vcpus=base_flavor['vcpus'],
            disk=base_flavor['disk'], ephemeral=1)['flavor']
        cls.addClassResourceCleanup(
            test_utils.call_and_ignore_notfound_exc,
            cls.flavors.delete_flavor, flavor['id'])
        cls.flavors.set_flavor_extra_spec(
            flavor['id'], **{'quota:disk_total_bytes_sec': str(STATIC)})
        cls.flavor = flavor
        cls.floor_tier = cls.create_tier(min_bytes_sec=FLOOR)
        cls.bronze = cls.create_tier(max_bytes_sec=CEILING)

    def _boot(self, name: str, user_data: str, group: str) -> dict[str, Any]:
        # No network: compute API 2.37 ("networks": "none").
        self.useFixture(api_microversion_fixture.APIMicroversionFixture(
            compute_microversion='2.37'))
        server: dict[str, Any] = self.servers.create_server(
            name=data_utils.rand_name(prefix='tempest', name=name),
            imageRef=CONF.compute.image_ref, flavorRef=self.flavor['id'],
            networks='none', config_drive=True,
            user_data=base64.b64encode(user_data.encode()).decode(),
            scheduler_hints={'group': group})['server']
        self.delete_server_at_end(self.addCleanup, self.servers, server['id'])
        waiters.wait_for_server_status(self.servers, server['id'], 'ACTIVE')
        return server

    def _disk(self, uuid: str) -> dict[str, dict[str, Any]]:
        disks = self.client.show_instance(uuid)['instance']['disks']
        return {d['dev']: d for d in disks}

    def _cap(self, uuid: str) -> float | None:
        """The smallest total_bytes_sec capping a disk of ``uuid``."""
        caps = [d['cap']['limits'].get('total_bytes_sec')
                for d in self._disk(uuid).values()
                if d['cap'] and d['cap']['limits']]
        return min((c for c in caps if c), default=None)

    def _written(self, uuid: str) -> tuple[str, float] | None:
        """(sampled_at, bytes/s) of the disk the user data writes."""
        disk = self._disk(uuid).get('vdb')
        if not disk or not disk['rates']:
            return None
        rates = disk['rates']
        return (rates['sampled_at'],
                rates['write_bytes_sec'] + rates['read_bytes_sec'])

    def _sample_after(self, uuid: str, moment: float, cap: float) -> bool:
        """A sample taken after ``moment`` and no higher than ``cap``."""
        sample = self._written(uuid)
        return (sample is not None and _epoch(sample[0]) > moment
                and sample[1] <= cap * TOLERANCE)

    def _set_profile(self, domain: str, bytes_sec: float) -> None:
        old = self.admin_client.show_domain(domain)['domain'].get('profile')
        self.admin_client.update_domain(domain, iops_4k=100000,
                                        bytes_sec=bytes_sec)
        if old:
            self.addCleanup(self.admin_client.update_domain, domain,
                            iops_4k=old['iops_4k'],
                            bytes_sec=old['bytes_sec'])

    @decorators.idempotent_id('4f5a6b7c-8d9e-4fa0-b1c2-3d4e5f6a7b11')
    @decorators.attr(type='slow')
    @utils.services('compute')
    def test_noisy_capped_floor_kept_cap_back_after_hard_reboot(self) -> None:
        group = self.groups.create_server_group(
            name=data_utils.rand_name(prefix='tempest', name='iotguard'),
            policies=['affinity'])['server_group']
        self.addCleanup(self.groups.delete_server_group, group['id'])
        quiet = self._boot('quiet', QUIET, group['id'])
        noisy = self._boot('noisy', NOISY, group['id'])
        for server in (quiet, noisy):
            self.wait_for_instance(self.client, server['id'])
            # vdb, the ephemeral disk, once the agent has reported it.
            self.poll(lambda: 'vdb' in self._disk(server['id']),
                      'iotguard did not learn about disk vdb of %s'
                      % server['id'])
        # The project sees one opaque domain for both; the admin its name.
        self.assertEqual(self._disk(noisy['id'])['vdb']['domain_id'],
                         self._disk(quiet['id'])['vdb']['domain_id'])
        domain = {d['dev']: d for d in self.admin_client.show_instance(
            noisy['id'])['instance']['disks']}['vdb']['domain']
        # Admission needs the profile before a floor can be chosen.
        self._set_profile(domain, CONF.iotguard.scenario_profile_bytes_sec)
        self.client.set_instance_tier(quiet['id'], self.floor_tier['name'])
        self.client.set_instance_tier(noisy['id'], self.bronze['name'])

        # The noisy disk is capped, with a reason, at most at its ceiling.
        self.poll(lambda: self._cap(noisy['id']), 'no cap on the noisy disk')
        cap = self._cap(noisy['id'])
        assert cap is not None
        self.assertLessEqual(cap, CEILING * 1.01)
        decisions = self.client.list_decisions(
            instance=noisy['id'])['decisions']
        self.assertIn('cap', [d['action'] for d in decisions])
        self.assertTrue(all(d['reason'] for d in decisions))
        # Its samples follow the cap.
        interval: float = CONF.iotguard.decision_interval
        # How long until the API shows a sample taken after a moment.
        fresh: float = interval + CONF.iotguard.rates_write_interval + 1
        capped_at = time.time()
        self.poll(lambda: self._sample_after(noisy['id'], capped_at
                                             + interval, cap),
                  'no sample under the cap', timeout=fresh + 4 * interval)
        # The quiet disk is never capped below its floor.
        quiet_cap = self._cap(quiet['id'])
        self.assertTrue(quiet_cap is None or quiet_cap >= FLOOR, quiet_cap)

        # Hard reboot: the cap is back within one interval.
        self.servers.reboot_server(noisy['id'], type='HARD')
        waiters.wait_for_server_status(self.servers, noisy['id'], 'ACTIVE')
        active = time.time()
        self.assertIsNotNone(self._cap(noisy['id']))
        seen: list[tuple[str, float]] = []

        def watch() -> bool:
            sample = self._written(noisy['id'])
            if sample and sample not in seen:
                seen.append(sample)
            return time.time() > active + 8 * interval + fresh
        test_utils.call_until_true(watch, 10 * interval + fresh, 0.5)
        late = [rate for at, rate in seen
                if _epoch(at) > active + interval + 1]
        # The guest writes again (its user data runs at boot) ...
        self.assertTrue(any(rate > 0 for rate in late),
                        'the noisy server did not write after the reboot: '
                        '%s' % seen)
        # ... and never above its cap once one interval has passed.
        self.assertLessEqual(max(late), cap * TOLERANCE, seen)


def _epoch(stamp: str) -> float:
    return timeutils.parse_isotime(stamp).timestamp()
