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

"""Per-project limits on floor units, with oslo.limit's fixture."""

from keystoneauth1 import exceptions as ksa_exc
from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslo_limit import exception as limit_exc
from oslo_limit import fixture as limit_fixture
from oslo_limit import limit

from iotguard.api import limits
from iotguard.controller import placement
from iotguard import exception
from iotguard.policy import base as policy_base
from iotguard.tests import base

#: 1 IOPS = 1 unit, 64 KiB/s = 1 unit ([placement] unit_bytes_sec).
GOLD = policy_base.Tier('gold', min_iops=1000.0, min_bytes_sec=65536e3)
BRONZE = policy_base.Tier('bronze', min_iops=100.0, min_bytes_sec=65536e2)
UUID = '11111111-0000-4000-8000-000000000001'


class FakeDB:
    """disk_list and tier_get over a list of disks (dicts).

    (The owner and the tier are the database's to check, before the
    limit: see ``test_concurrent_choices_within_unified_limits``.)
    """

    def __init__(self, disks):
        self.disks = disks

    def disk_list(self, instance_uuid=None, project_id=None):
        return [dict(d) for d in self.disks
                if instance_uuid in (None, d['instance_uuid'])
                and project_id in (None, d['project_id'])]

    def tier_get(self, name, project_id=None):
        return {'gold': GOLD, 'bronze': BRONZE}[name]


def disk(uuid, dev, domain, tier=None, project='p1'):
    return {'instance_uuid': uuid, 'dev': dev, 'domain': domain,
            'tier': tier, 'project_id': project, 'size_gib': 10}


class EnforceTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(config_fixture.Config(cfg.CONF)).config(
            group='oslo_limit', endpoint_id='iotguard')
        self.limits = self.useFixture(limit_fixture.LimitFixture(
            {limits.LOCAL: 4200, limits.SHARED: 2200}, {}))
        # gold is 2000 units, bronze 200. The project's other floors: 2200
        # local, 200 shared; another project's do not count.
        self.db = FakeDB([
            disk(UUID, 'vda', 'local:cn1'),
            disk(UUID, 'vdb', 'ceph:c'),
            disk('other', 'vda', 'local:cn2', GOLD),
            disk('other', 'vdb', 'local:cn2', BRONZE),
            disk('other', 'vdc', 'ceph:c', BRONZE),
            disk('more', 'vda', 'local:cn1', GOLD, project='p2')])

    def enforce(self, tier):
        """As the tier choice's transaction runs it: the owner's disks."""
        limits.enforcer(self.conf)(UUID, 'p1', self.db.tier_get(tier),
                                   self.db.disk_list(project_id='p1'))

    def test_units_per_kind(self):
        self.assertEqual({limits.LOCAL: 2200, limits.SHARED: 200},
                         dict(limits.usage(self.db.disk_list(
                             project_id='p1'), placement.reference(
                                 self.conf.placement.unit_bytes_sec))))

    def test_up_to_the_limit(self):
        self.enforce('gold')            # 4200 and 2200: the limits

    def test_refusal_names_the_limits_passed(self):
        self.limits.reglimits[limits.LOCAL] = 4199
        error = self.assertRaises(exception.Conflict, self.enforce, 'gold')
        self.assertIn('iotguard_floor_units_local: limit 4199, committed '
                      '2200, this choice 2000 more', error.message)
        self.assertNotIn(limits.SHARED, error.message)
        self.limits.reglimits[limits.SHARED] = 0
        error = self.assertRaises(exception.Conflict, self.enforce, 'gold')
        self.assertIn('iotguard_floor_units_shared: limit 0, committed '
                      '200, this choice 2000 more', error.message)

    def test_project_limit_overrides_the_registered_one(self):
        self.limits.reglimits[limits.LOCAL] = 0
        self.limits.projlimits['p1'] = {limits.LOCAL: 4200}
        self.enforce('gold')
        self.limits.projlimits['p1'] = {limits.LOCAL: 2399}
        self.assertRaises(exception.Conflict, self.enforce, 'bronze')

    def test_a_choice_adding_nothing_is_never_refused(self):
        self.db.disks[0]['tier'] = self.db.disks[1]['tier'] = GOLD
        self.limits.reglimits.update({limits.LOCAL: 0, limits.SHARED: 0})
        self.enforce('bronze')          # lower
        self.enforce('gold')            # the same

    def test_keystone_away_is_unavailable_not_an_error(self):
        for error in (ksa_exc.ConnectFailure('refused'),
                      limit_exc.SessionInitError(Exception('no auth')),
                      ValueError("Can't find endpoint for iotguard")):
            def away(*args, **kwargs):
                raise error
            self.patch(limit.Enforcer, 'enforce', away)
            failed = self.assertRaises(exception.Unavailable, self.enforce,
                                       'gold')
            self.assertEqual(503, failed.code)
        self.db.disks[0]['tier'] = self.db.disks[1]['tier'] = GOLD
        self.enforce('bronze')      # adds nothing: Keystone not asked
