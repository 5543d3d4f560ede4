#!/usr/bin/env python3
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

"""Where the mixed phase's paced 4 KiB writes go, on a storage over FUSE.

Runs the built-in generator's streams (iotguard.manage.measure) on the test
bucket (100 IOPS, 4 MiB/s) or the test disk (40 ms, 16 MiB/s) exported
over FUSE, one variant after the other, and prints the 4 KiB writes a
second each reached against their pace, and the 1 MiB ones:

- ``alone:N``: N paced 4 KiB writers, nothing else;
- ``mixed:N``: N paced 4 KiB writers and one unpaced 1 MiB writer (what
  the mixed phase runs, N = depth - 1 before mixed_writers);
- ``slack:N``: the same, late slots never dropped.

For the disk it also prints the NBD server's counters (``depths``: how
many requests the disk held when each arrived). Root and /dev/fuse::

    flock /tmp/bed.lock python tools/probe-mixed.py bucket 50 4 \\
        alone:15 mixed:15 mixed:63 slack:15
"""

import argparse
import os
import sys
import tempfile

from iotguard.manage import measure
from iotguard.tests.fixtures import fusebucket
from iotguard.tests.fixtures import fusedisk


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('storage', choices=('bucket', 'disk'))
    parser.add_argument('pace', type=float, help='4 KiB writes a second')
    parser.add_argument('seconds', type=float, help='each variant')
    parser.add_argument('variants', nargs='+', help='alone:N, mixed:N, '
                        'slack:N')
    args = parser.parse_args()
    why = fusebucket.unavailable()
    if why:
        sys.exit(why)
    workdir = tempfile.mkdtemp(dir='/var/tmp')
    storage = (fusebucket.FuseBucket(workdir) if args.storage == 'bucket'
               else fusedisk.FuseDisk(workdir))
    large = measure.LARGE_SIZE
    print('load average', open('/proc/loadavg').read().strip())
    with storage:
        target = measure.prepare(storage.path, destroy=True)
        fd = measure.open_target(target.path, True)
        for variant in args.variants:
            name, writers = variant.split(':')
            streams = [measure._Stream(measure.SMALL_SIZE, int(writers),
                                       False, args.pace)]
            if name != 'alone':
                streams.append(measure._Stream(large, 1, True))
            slack = measure.PACE_SLACK_S
            if name == 'slack':
                measure.PACE_SLACK_S = float('inf')
            try:
                phase = measure._run_streams(fd, target.size, name, streams,
                                             args.seconds)
            finally:
                measure.PACE_SLACK_S = slack
            # ops = small + big, bytes = 4 KiB small + 1 MiB big
            small = ((large * phase.ops - phase.nbytes)
                     / (large - measure.SMALL_SIZE) / phase.seconds)
            print('%-6s %3s writers: 4 KiB %5.1f/s of %g paced, 1 MiB '
                  '%5.2f/s' % (name, writers, small, args.pace,
                               phase.iops - small), flush=True)
        os.close(fd)
    if args.storage == 'disk':
        print('disk counters', storage.stats())


if __name__ == '__main__':
    main()
