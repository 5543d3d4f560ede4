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

"""The fault runner's readings: a cap's life past its lease, windows."""

from benchmarks import faults
from iotguard.tests import base

STATIC = {'total_bytes_sec': 64 << 20}
CAP = {'total_bytes_sec': 2 << 20, 'total_iops_sec': 30}


def sample(t, limits, lease=None, decision='1', written=(0, 0)):
    held = (lease, decision) if lease is not None else None
    return (t, limits, held, list(written))


class PastLeaseTest(base.TestCase):

    def test_a_cap_lifted_at_its_lease_is_not_past_it(self):
        samples = [sample(0.0, CAP, 10.0), sample(5.0, CAP, 10.0),
                   sample(10.0, STATIC, 10.0), sample(15.0, STATIC)]
        self.assertEqual(0.0, faults.past_lease(samples, STATIC))

    def test_a_cap_held_past_its_lease_counts_to_its_last_reading(self):
        samples = [sample(0.0, CAP, 10.0), sample(11.0, CAP),
                   sample(13.5, CAP), sample(14.0, STATIC)]
        self.assertEqual(3.5, faults.past_lease(samples, STATIC))

    def test_a_new_cap_read_before_its_lease_is_written(self):
        # libvirt shows the new cap one reading before the state file
        # gives its lease: the old lease does not count against it
        samples = [sample(0.0, CAP, 10.0), sample(10.0, STATIC),
                   sample(70.0, CAP), sample(70.5, CAP, 80.5)]
        self.assertEqual(0.0, faults.past_lease(samples, STATIC))

    def test_unreadable_samples_are_skipped(self):
        samples = [sample(0.0, CAP, 10.0), (11.0, None, None, None),
                   sample(12.0, STATIC)]
        self.assertEqual(0.0, faults.past_lease(samples, STATIC))


class WindowsTest(base.TestCase):

    def test_windows_span_the_readings_a_span_apart(self):
        # two guests, 100 and 200 bytes a second, read every half second
        samples = [sample(t / 2, STATIC, written=(50 * t, 100 * t))
                   for t in range(5)]
        times, rates = faults._windows(samples, 1.0)
        self.assertEqual([0.0, 0.5, 1.0], list(times))
        self.assertEqual([[100.0, 200.0]] * 3, rates.tolist())

    def test_a_gap_widens_the_window_it_falls_in(self):
        samples = [sample(0.0, STATIC, written=(0, 0)),
                   (0.5, None, None, None),
                   sample(2.0, STATIC, written=(400, 400))]
        times, rates = faults._windows(samples, 1.0)
        self.assertEqual([0.0], list(times))
        self.assertEqual([[200.0, 200.0]], rates.tolist())
