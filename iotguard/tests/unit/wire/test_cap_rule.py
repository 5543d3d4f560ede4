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

"""One cap rule: the agent and the simulator apply a cap the same way.

Over random static limit sets (none, total, read and/or write, with
bursts, per kind) and random caps (what the controller sends: ``total``
IOPS and bytes/s), the agent's path (:class:`AgentManager.apply_caps` on
a driver) and the simulator's (:func:`iotguard.sim.loop.run` applying a
policy's cap to its world's throttle) must set the same iotune, and the
set must bound what the disk can do: per kind, in total, exactly
``min(cap, static ceiling)`` (never more than the cap or the sum of the
ceilings, never less); one direction never beyond its own ceiling unless
the cap is above it.
"""

import math
from unittest import mock

import hypothesis
from hypothesis import strategies as st

from iotguard.agent import manager
from iotguard.agent.virt import base as virt_base
from iotguard.policy import base as policy_base
from iotguard.sim import loop
from iotguard.sim import world as world_mod
from iotguard.tests import base
from iotguard.tests.unit.agent import fakes
from iotguard.tests.unit.sim import helpers
from iotguard.wire import caps

VALUE = st.integers(min_value=1, max_value=5000)


@st.composite
def static_kind(draw, kind):
    """One kind's static keys: none, total, or read and/or write."""
    form = draw(st.sampled_from(['none', 'total', 'read', 'write', 'rw']))
    directions = {'none': (), 'total': ('total',), 'read': ('read',),
                  'write': ('write',), 'rw': ('read', 'write')}[form]
    out = {}
    for d in directions:
        key = '%s_%s' % (d, kind)
        out[key] = draw(VALUE)
        if draw(st.booleans()):
            out[key + '_max'] = out[key] + draw(VALUE)
    return out


@st.composite
def statics(draw):
    return dict(draw(static_kind('iops_sec')),
                **draw(static_kind('bytes_sec')))


CAPS = st.tuples(st.one_of(st.just(math.inf), st.integers(1, 12000)),
                 st.one_of(st.just(math.inf), st.integers(1, 12000)))


def bound(limits, kind, direction=None):
    """What a set lets through of ``kind`` (one direction, or in total)."""
    total = caps.limit(limits, 'total_' + kind)
    if direction is not None:
        return min(total, caps.limit(limits, '%s_%s' % (direction, kind)))
    return min(total, caps.limit(limits, 'read_' + kind)
               + caps.limit(limits, 'write_' + kind))


class CapOnce:
    """A policy that caps the one disk at (iops, bytes_sec)."""

    name = 'cap-once'

    def __init__(self, iops, bytes_sec):
        self.iops, self.bytes_sec = iops, bytes_sec

    def decide(self, snapshot, state, now):
        return [policy_base.Decision(snapshot.disk_ids[0], policy_base.CAP,
                                     'test', self.iops, self.bytes_sec)], None


class CapRuleTest(base.TestCase):

    def agent_sets(self, static, decision):
        key = (fakes.UUID_A, 'vda')
        driver = fakes.FakeDriver([virt_base.Disk(
            key[0], key[1], static=caps.full(static))])
        mgr = manager.AgentManager(self.conf, driver, clock=lambda: 1000.0,
                                   store=fakes.MemoryStore())
        mgr.apply_caps({}, [{
            'instance_uuid': key[0], 'dev': key[1],
            'limits': {k: v for k, v in decision.limits.items() if v},
            'lease_expires_at': 2000.0, 'decision_id': 'd1'}])
        return caps.full(driver.live[key])

    def simulator_sets(self, static, iops, bytes_sec):
        scenario = helpers.make(duration_s=5, tick_s=0.5, vms=[helpers.vm(
            'a', [{'bs': 4096, 'processes': 1}], limits=static)])
        seen = {}

        class Recorded(world_mod.World):
            def set_iotune(self, disk_id, params):
                super().set_iotune(disk_id, params)
                seen['tune'] = self.get_iotune(disk_id)

        with mock.patch.object(loop.world_mod, 'World', Recorded):
            loop.run(scenario, CapOnce(iops, bytes_sec))
        return caps.full(seen['tune'])

    @hypothesis.settings(max_examples=150, deadline=None)
    @hypothesis.given(static=statics(), cap=CAPS)
    def test_agent_and_simulator_apply_a_cap_alike(self, static, cap):
        iops, bytes_sec = cap
        hypothesis.assume(math.isfinite(iops) or math.isfinite(bytes_sec))
        decision = policy_base.Decision('d', policy_base.CAP, 'test', iops,
                                        bytes_sec)
        agent = self.agent_sets(static, decision)
        self.assertEqual(agent, self.simulator_sets(static, iops, bytes_sec))
        self.assertEqual(agent, caps.effective(decision.limits, static))
        caps.check_limits(agent)
        for kind, value in (('iops_sec', iops), ('bytes_sec', bytes_sec)):
            ceiling = caps.ceiling(static, kind)
            got = bound(agent, kind)
            self.assertLessEqual(got, value)
            self.assertLessEqual(got, ceiling)
            self.assertGreaterEqual(got, min(value, ceiling))
            for direction in ('read', 'write'):
                own = caps.limit(static, '%s_%s' % (direction, kind))
                if value <= own:
                    self.assertLessEqual(bound(agent, kind, direction), own)
