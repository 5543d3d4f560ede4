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

import threading

from iotguard import service
from iotguard.tests import base


class RunEveryTest(base.TestCase):

    def test_calls_until_stopped(self):
        stop = threading.Event()
        calls = []

        def tick():
            calls.append(len(calls))
            if len(calls) == 3:
                stop.set()

        service.run_every(0.0, stop, tick)
        self.assertEqual([0, 1, 2], calls)

    def test_stopped_before_start_calls_nothing(self):
        stop = threading.Event()
        stop.set()
        service.run_every(0.0, stop, self.fail)
