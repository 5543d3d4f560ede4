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

"""The floors' units, the providers wanted, the writes' retries (no I/O).

Against a real Placement: tests/functional/controller/test_placement.py.
"""

import itertools
from unittest import mock

from iotguard.controller import placement
from iotguard.controller import service
from iotguard.db import disks as disks_db
from iotguard.policy import admission
from iotguard.policy import base as policy_base
from iotguard.tests import base
from iotguard.tests.unit.controller import fakes

REF = placement.reference(65536.0)
GOLD = policy_base.Tier('gold', min_iops=200.0, min_bytes_sec=8e6)


def member(domain, host, tier=None, dev='vda'):
    return disks_db.Member(1, 'vm-' + host, dev, host, 'p1', None, domain,
                           tier, 'flavor' if tier else None)


class UnitsTest(base.TestCase):

    def test_a_floor_in_units(self):
        self.assertEqual(323, placement.units(GOLD, REF))   # 322.07
        # An IOPS floor alone is priced with 4 KiB operations, as
        # admission prices it: 100 + 100 * 4096 / 65536.
        self.assertEqual(107, placement.units(
            policy_base.Tier('iops', min_iops=100.0), REF))
        self.assertEqual(0, placement.units(policy_base.Tier('none'), REF))
        self.assertEqual(3, placement.units(
            policy_base.Tier('exact', min_iops=1.0,
                             min_bytes_sec=2 * 65536.0), REF))

    def test_a_domain_in_units(self):
        self.assertEqual(900, placement.capacity(
            policy_base.Profile(1000.0, 1e9), REF, 0.9))
        # Bandwidth-bound: 1e8 / 65536 = 1525.9 reference devices.
        self.assertEqual(1525, placement.capacity(
            policy_base.Profile(1e5, 1e8), REF, 1.0))

    def test_what_placement_admits_admission_admits_on_every_domain(self):
        profiles = [policy_base.Profile(i, b, form)
                    for i, b, form in itertools.product(
                        (150.0, 2e4, 5e5), (1.5e8, 1e9, 3e9),
                        (policy_base.ADDITIVE, policy_base.MAX))]
        tiers = [GOLD, policy_base.Tier('iops', min_iops=50.0),
                 policy_base.Tier('bw', min_bytes_sec=5e7),
                 policy_base.Tier('tiny', min_iops=1.0, min_bytes_sec=1.0)]
        for profile, tier in itertools.product(profiles, tiers):
            fits = placement.capacity(profile, REF, 0.9) // placement.units(
                tier, REF)
            self.assertLessEqual(
                admission.committed([tier] * fits, profile), 0.9 + 1e-12,
                (profile, tier))


class WantedTest(base.TestCase):

    def test_providers_of_the_domains(self):
        domains = [
            admission.Domain('local:cn1', 'local', iops_4k=1000.0,
                             bytes_sec=1e9),
            admission.Domain('ceph', 'ceph', iops_4k=2e4, bytes_sec=1e9),
            admission.Domain('new', 'ceph', iops_4k=2e4, bytes_sec=1e9),
            admission.Domain('bare', 'ceph'),
            admission.Domain('small', 'ceph', iops_4k=1.0, bytes_sec=4096.0),
        ]
        members = {
            'local:cn1': [member('local:cn1', 'cn1', GOLD),
                          member('local:cn1', 'cn1', GOLD, 'vdb')],
            'ceph': [member('ceph', 'cn2', GOLD), member('ceph', 'cn1'),
                     member('ceph', 'cn2', dev='vdb')],
            'bare': [member('bare', 'cn1', GOLD)],
        }
        self.assertEqual([
            placement.Provider('local:cn1', 900, 646, parent='cn1'),
            placement.Provider('ceph', 13732, 323, hosts=('cn1', 'cn2')),
            placement.Provider('new', 13732, 0)],
            placement.wanted(domains, members, REF, 0.9))

    def test_hosts_whose_image_disks_go_to_a_shared_domain(self):
        self.flags(group='membership', ephemeral_domain='ceph',
                   ephemeral_domains={'cn3': 'other', 'cn4': 'ceph'})
        domains = [admission.Domain(name, 'ceph', iops_4k=2e4, bytes_sec=1e9)
                   for name in ('ceph', 'other', 'volumes')]
        members = {'ceph': [member('ceph', 'cn2')]}
        self.assertEqual([
            placement.Provider('ceph', 13732, 0, hosts=('cn2', 'cn4'),
                               every_node=True),
            placement.Provider('other', 13732, 0, hosts=('cn3',)),
            placement.Provider('volumes', 13732, 0)],
            placement.wanted(domains, members, REF, 0.9,
                             self.conf.membership))

    def test_names_and_ids(self):
        local = placement.Provider('local:cn1', 1, 0, parent='cn1')
        shared = placement.Provider('ceph', 1, 0)
        self.assertEqual('cn1:iotguard', local.name)
        self.assertEqual('iotguard:ceph', shared.name)
        self.assertEqual(placement.Provider('ceph', 5, 2).uuid, shared.uuid)
        self.assertEqual(3, len({local.uuid, shared.uuid,
                                 shared.aggregate}))


class Response:

    def __init__(self, status, body=None):
        self.status_code, self.body = status, body or {}
        self.request = mock.Mock(method='PUT')
        self.url, self.text = '/x', str(body)

    def json(self):
        return self.body


def conflict():
    return Response(409, {'errors': [
        {'code': 'placement.concurrent_update'}]})


class UpdateTest(base.TestCase):
    """Writes with the provider's generation, read again on a conflict."""

    def setUp(self):
        super().setUp()
        self.report = placement.Report(self.conf, db=None,
                                       session=mock.Mock())
        self.api = self.report._api = mock.Mock()
        self.api.get.side_effect = [
            Response(200, {'traits': [], 'resource_provider_generation': g})
            for g in range(5)]

    def update(self):
        self.report._update('/p/traits', 'traits', lambda t: t + ['T'])

    def test_a_conflict_is_read_again_and_retried(self):
        self.api.put.side_effect = [conflict(), Response(200)]
        self.update()
        self.assertEqual(
            [mock.call('/p/traits', json={
                'traits': ['T'], 'resource_provider_generation': g})
             for g in (0, 1)], self.api.put.call_args_list)

    def test_conflicts_in_a_row_give_up(self):
        self.api.put.side_effect = [conflict()] * placement.RETRIES
        self.assertRaises(placement.PlacementError, self.update)

    def test_another_error_is_not_retried(self):
        self.api.put.side_effect = [Response(409, {'errors': [
            {'code': 'placement.undefined_code'}]})]
        self.assertRaises(placement.PlacementError, self.update)
        self.assertEqual(1, self.api.put.call_count)

    def test_nothing_to_change_nothing_written(self):
        self.report._update('/p/traits', 'traits', lambda t: None)
        self.assertFalse(self.api.put.called)


class CompareTest(base.TestCase):
    """Placement's usage vs the committed floors: gauges, notifications."""

    def setUp(self):
        super().setUp()
        self.notifier = mock.Mock()
        self.report = placement.Report(self.conf, db=None,
                                       session=mock.Mock(),
                                       notifier=self.notifier)
        self.provider = placement.Provider('ceph', 900, 323)

    def compare(self, *used):
        for u in used:
            self.report._compare(self.provider, u)

    def sent(self):
        return [(c[0], c.args[0]['placement_used'])
                for c in self.notifier.method_calls]

    def test_a_difference_seen_twice_is_notified_once(self):
        self.compare(0)
        self.assertEqual([], self.sent())     # Nova may be ahead of us
        self.compare(0, 100, 0)
        self.assertEqual([('placement_usage_differs', 0)], self.sent())
        self.assertEqual(
            {'domain': 'ceph', 'provider': self.provider.uuid,
             'resource_class': 'CUSTOM_IOTGUARD_FLOOR', 'total': 900,
             'placement_used': 0, 'committed': 323},
            self.notifier.placement_usage_differs.call_args.args[0])
        self.compare(323, 323)
        self.assertEqual([('placement_usage_differs', 0),
                          ('placement_usage_matches', 323)], self.sent())

    def test_a_passing_difference_is_not_notified(self):
        self.compare(0, 323, 646, 323, 323)
        self.assertEqual([], self.sent())

    def test_gauges_per_domain(self):
        self.compare(100)
        self.report._compare(placement.Provider('local:cn1', 50, 0), 0)
        families = {f.name: {s.labels['domain']: s.value for s in f.samples}
                    for f in self.report.collect()}
        self.assertEqual({
            'iotguard_placement_floor_units': {'ceph': 900, 'local:cn1': 50},
            'iotguard_placement_floor_used_units': {'ceph': 100,
                                                    'local:cn1': 0},
            'iotguard_placement_floor_committed_units': {
                'ceph': 323, 'local:cn1': 0}}, families)


class ControllerTest(base.TestCase):
    """The controller syncs its own domains, at most every resync."""

    def test_owned_domains_synced_every_resync_interval(self):
        self.flags(group='placement', enabled=True)
        self.flags(group='membership', resync_interval=600.0)
        db = fakes.real_db(self)
        for name in ('a', 'b'):
            fakes.add_domain(db, name, policy='static')
        svc = service.ControllerService(self.conf, db=db)
        svc.partition = mock.Mock(my_domains=lambda names: ['a'],
                                  owns=lambda key: False)
        svc.manager = mock.Mock()
        svc.loop = mock.Mock(run=lambda domains, now: [])
        with mock.patch.object(svc.placement, 'sync',
                               side_effect=[RuntimeError('down'), []]) as sync:
            for now in (1000.0, 1300.0, 1600.0, 1700.0):
                svc.tick(now)
        self.assertEqual([['a'], ['a']], [[d.name for d in c.args[0]]
                                          for c in sync.call_args_list])

    def test_notifier_and_metrics_wired(self):
        self.flags(group='placement', enabled=True)
        svc = service.ControllerService(
            self.conf, transport=mock.Mock(),
            notification_transport=mock.Mock(),
            db=fakes.real_db(self), timer=False)
        with mock.patch.object(service.rpc, 'get_server'), \
                mock.patch.object(service.notifications, 'Notifier'), \
                mock.patch.object(svc.partition, 'start'):
            svc.start()
        self.assertIs(svc.notifier, svc.placement.notifier)
        svc.placement.usage = {'a': placement.Usage(9, 1, 2)}
        self.assertIn('iotguard_placement_floor_used_units',
                      [f.name for f in svc.collect_metrics()])

    def test_off_by_default(self):
        svc = service.ControllerService(self.conf, db=mock.Mock())
        self.assertIsNone(svc.placement)
