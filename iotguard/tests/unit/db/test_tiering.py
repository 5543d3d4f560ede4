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

"""Which tier a disk has: tiering.resolve, without a database."""

import collections

from iotguard.db import tiering
from iotguard.tests import base

Disk = collections.namedtuple('Disk', 'instance_uuid dev volume_id')
ROOT = Disk('u1', 'vda', None)
VOLUME = Disk('u1', 'vdb', 'vol-1')


class ResolveTest(base.TestCase):

    def test_no_choice_is_the_default(self):
        self.assertEqual(('gold', 'default', None),
                         tiering.resolve({}, 'gold', ROOT))

    def test_no_choice_no_default(self):
        self.assertEqual((None, None, None), tiering.resolve({}, None, ROOT))

    def test_sources_strongest_first(self):
        choices = {('u1', '*', 'api'): 'api-tier',
                   ('u1', '*', 'flavor'): 'flavor-tier',
                   ('u1', 'vdb', 'volume_type'): 'type-tier'}
        self.assertEqual(('api-tier', 'api', None),
                         tiering.resolve(choices, 'gold', ROOT))
        self.assertEqual(('api-tier', 'api', None),
                         tiering.resolve(choices, 'gold', VOLUME))
        del choices[('u1', '*', 'api')]
        self.assertEqual(('flavor-tier', 'flavor', None),
                         tiering.resolve(choices, 'gold', ROOT))
        self.assertEqual(('type-tier', 'volume_type', None),
                         tiering.resolve(choices, 'gold', VOLUME))

    def test_source_applies_only_where_it_may(self):
        # A flavor describes the image-backed disks, a volume type its
        # volume: neither gives the other's disks a tier.
        flavor = {('u1', '*', 'flavor'): 'f'}
        volume_type = {('u1', '*', 'volume_type'): 'v'}
        self.assertEqual(('gold', 'default', None),
                         tiering.resolve(flavor, 'gold', VOLUME))
        self.assertEqual(('gold', 'default', None),
                         tiering.resolve(volume_type, 'gold', ROOT))
        self.assertFalse(tiering.source_applies('flavor', 'vol-1'))
        self.assertTrue(tiering.source_applies('flavor', None))
        self.assertFalse(tiering.source_applies('volume_type', ''))
        self.assertTrue(tiering.source_applies('api', 'vol-1'))

    def test_a_disk_beats_all_disks_within_a_source(self):
        choices = {('u1', '*', 'api'): 'all', ('u1', 'vda', 'api'): 'vda'}
        self.assertEqual('vda', tiering.resolve(choices, None, ROOT)[0])
        self.assertEqual('all', tiering.resolve(choices, None, VOLUME)[0])

    def test_other_instances_do_not_count(self):
        choices = {('u2', '*', 'api'): 'theirs'}
        self.assertEqual(('gold', 'default', None),
                         tiering.resolve(choices, 'gold', ROOT))

    def test_refusal_of_a_stronger_source(self):
        refusal = {'tier': 'platinum', 'source': 'api'}
        choices = {('u1', '*', 'flavor'): 'f'}
        refusals = {('u1', '*', 'api'): refusal}
        self.assertEqual(('f', 'flavor', refusal),
                         tiering.resolve(choices, 'gold', ROOT, refusals))
        self.assertEqual(('gold', 'default', refusal),
                         tiering.resolve({}, 'gold', ROOT, refusals))

    def test_refusal_of_a_weaker_source_is_not_reported(self):
        choices = {('u1', '*', 'api'): 'a'}
        refusals = {('u1', '*', 'flavor'): {'tier': 'f'}}
        self.assertEqual(('a', 'api', None),
                         tiering.resolve(choices, 'gold', ROOT, refusals))

    def test_first_refusal_wins(self):
        first, second = {'tier': 'x'}, {'tier': 'y'}
        refusals = {('u1', 'vda', 'api'): first,
                    ('u1', '*', 'flavor'): second}
        self.assertIs(first, tiering.resolve({}, None, ROOT, refusals)[2])
