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

"""Controllers sharing domains through tooz on a real Redis.

Each test uses its own tooz group, so concurrent runs never meet. The
third controller runs in its own process and is killed with SIGKILL (no
goodbye to the group): its domains must move to the survivors within two
decision intervals. ``IOTGUARD_TEST_REDIS_URL`` overrides the Redis URL.
"""

import os
import signal
import socket
import subprocess
import sys
import time
from urllib import parse
import uuid

from iotguard.controller import partition
from iotguard.tests import base

REDIS_URL = os.environ.get('IOTGUARD_TEST_REDIS_URL',
                           'redis://127.0.0.1:6379')
DOMAINS = ['pool-%02d' % i for i in range(40)]
#: decision interval the move is measured against (two of them allowed)
INTERVAL_S = 2.5
MEMBER_TIMEOUT = 2

CHILD = '''
import sys, time
from oslo_config import cfg
from iotguard import conf as iotguard_conf
from iotguard.controller import partition
conf = cfg.ConfigOpts()
iotguard_conf.register_opts(conf)
conf([], project='iotguard', default_config_files=[])
conf.set_override('backend_url', sys.argv[1], 'coordination')
conf.set_override('member_timeout', int(sys.argv[4]), 'coordination')
p = partition.Partition(conf, member_id=sys.argv[2],
                        group=sys.argv[3].encode())
p.start()
print('joined', flush=True)
time.sleep(60)
'''


def _redis_unreachable():
    url = parse.urlparse(REDIS_URL)
    try:
        socket.create_connection((url.hostname, url.port or 6379),
                                 timeout=2).close()
        return None
    except OSError as e:
        return 'Redis unreachable at %s: %s' % (REDIS_URL, e)


class PartitionOverRedisTest(base.TestCase):

    def setUp(self):
        super().setUp()
        reason = _redis_unreachable()
        if reason:
            self.skipTest(reason)
        self.run_id = uuid.uuid4().hex[:10]
        self.group = ('iotguard-controller-ft-%s' % self.run_id).encode()
        self.flags(backend_url=REDIS_URL, member_timeout=MEMBER_TIMEOUT,
                   group='coordination')

    def partition(self, name):
        p = partition.Partition(self.conf, member_id='%s-%s' % (
            name, self.run_id), group=self.group)
        p.start()
        self.addCleanup(p.stop)
        return p

    def members(self, p):
        return len(p._coord.get_members(self.group).get())

    def wait(self, predicate, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.1)
        return predicate()

    def test_domains_split_and_move_when_a_controller_dies(self):
        a, b = self.partition('a'), self.partition('b')
        child = subprocess.Popen(
            [sys.executable, '-c', CHILD, REDIS_URL, 'c-' + self.run_id,
             self.group.decode(), str(MEMBER_TIMEOUT)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.addCleanup(child.wait)
        self.addCleanup(lambda: child.poll() is None and child.kill())
        self.assertEqual('joined', child.stdout.readline().strip())

        def split_three_ways():
            mine_a, mine_b = a.my_domains(DOMAINS), b.my_domains(DOMAINS)
            return (self.members(a) == 3 and not set(mine_a) & set(mine_b)
                    and 0 < len(mine_a) + len(mine_b) < len(DOMAINS))
        self.assertTrue(self.wait(split_three_ways, 10),
                        'the third controller never got a share')
        c_share = set(DOMAINS) - set(a.my_domains(DOMAINS)) - set(
            b.my_domains(DOMAINS))

        os.kill(child.pid, signal.SIGKILL)
        killed = time.monotonic()

        def survivors_own_all():
            mine_a, mine_b = a.my_domains(DOMAINS), b.my_domains(DOMAINS)
            return (sorted(mine_a + mine_b) == DOMAINS
                    and not set(mine_a) & set(mine_b))
        self.assertTrue(self.wait(survivors_own_all, 2 * INTERVAL_S),
                        'domains of the dead controller did not move '
                        'within two intervals')
        moved_after = time.monotonic() - killed
        # Only the dead one's domains moved; a keeps what it had.
        self.assertTrue(c_share)
        print('domains moved %.2f s after SIGKILL (member_timeout %d s)'
              % (moved_after, MEMBER_TIMEOUT))

    def test_graceful_stop_moves_at_once_and_single_owner(self):
        a, b = self.partition('a'), self.partition('b')
        self.assertTrue(self.wait(lambda: (
            0 < len(a.my_domains(DOMAINS)) < len(DOMAINS)
            and 0 < len(b.my_domains(DOMAINS)) < len(DOMAINS)), 10))
        b_before = set(b.my_domains(DOMAINS))
        a_before = set(a.my_domains(DOMAINS))
        self.assertEqual(set(DOMAINS), a_before | b_before)
        self.assertEqual(set(), a_before & b_before)
        b.stop()
        self.assertTrue(self.wait(
            lambda: a.my_domains(DOMAINS) == DOMAINS, 1.0))

    def test_a_join_tooz_missed_is_set_right(self):
        # tooz's partitioner can miss a member that joins while it starts
        # (it reads the members, then watches): made to happen here
        a, b = self.partition('a'), self.partition('b')
        self.assertTrue(self.wait(lambda: (
            0 < len(a.my_domains(DOMAINS)) < len(DOMAINS)), 10))
        a._partitioner.ring.remove_node(b.member_id)
        a._owners.clear()     # what a's ring says from now on
        self.assertEqual(DOMAINS, [d for d in DOMAINS if a.owns(d)])
        # and a member that left unseen
        a._partitioner.ring.add_node(b'gone-' + self.run_id.encode())
        a.refresh()
        self.assertEqual({a.member_id, b.member_id},
                         set(a._partitioner.ring.nodes))
        mine_a, mine_b = a.my_domains(DOMAINS), b.my_domains(DOMAINS)
        self.assertEqual(DOMAINS, sorted(mine_a + mine_b))
        self.assertTrue(mine_a and mine_b)
        self.assertEqual(b.member_id.decode(), a.owner_of(mine_b[0]))

    def test_without_backend_owns_everything(self):
        self.flags(backend_url=None, group='coordination')
        p = partition.Partition(self.conf)
        p.start()
        self.assertEqual(DOMAINS, p.my_domains(DOMAINS))
        self.assertTrue(p.owns('agent:cn1'))
        p.stop()
