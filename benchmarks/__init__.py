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

"""Benchmarks: measuring tools beside the package, not installed.

Each module is run by hand from a checkout, ``python -m benchmarks.NAME``,
and prints its figures (the docs give the commands and the figures
measured): :mod:`benchmarks.agent` (one
agent sampling pass), :mod:`benchmarks.broker` (receiving batches
off RabbitMQ, layer by layer), :mod:`benchmarks.controller` (one
controller's rounds over RabbitMQ), :mod:`benchmarks.partition` (N
controllers over tooz, one killed), :mod:`benchmarks.routing` (N
controllers receiving the samples, routed),
:mod:`benchmarks.rates` (a round's writes of the disks' rates),
:mod:`benchmarks.index` (the disk index's size) and
:mod:`benchmarks.faults` (faults injected on the shared-queue bed).
The decision's cost is the simulator's (``iotguard-sim bench``). The
local check I307 keeps the package from importing them.
"""

import argparse
import os


def add_url_argument(parser: argparse.ArgumentParser,
                     help: str = 'oslo.messaging transport URL') -> None:
    """``--url``: the broker a benchmark casts to.

    ``$IOTGUARD_TEST_RABBIT_URL`` (as the functional tests take it), else
    RabbitMQ's guest account on loopback.
    """
    parser.add_argument('--url', default=os.environ.get(
        'IOTGUARD_TEST_RABBIT_URL', 'rabbit://guest:guest@127.0.0.1:5672/'),
        help=help)
