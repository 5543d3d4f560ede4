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

"""What the disk index costs each controller, in memory.

    python -m benchmarks.index [--db-url URL] [--disks 300000] \\
        [--host-domains 2] [--runs 3]

Every controller reads the whole disk index (which disk is in which
domain, on which host: any of them may receive any host's batch). A
fresh database (``--db-url``: an empty one; SQLite file by default) gets
``--disks`` disks, 50 a host, each host's in ``--host-domains`` of 100
domains; then, ``--runs`` times, a fresh process reads the index as a
controller does (:meth:`~iotguard.controller.disk_index.DiskIndex.refresh`)
and reports what that added to its resident memory, and
how long it took. The figures of the controller's admin guide. Nothing
here runs in the service; it only measures.
"""

import argparse
import gc
import statistics
import subprocess
import sys
import time

from benchmarks import rates as rates_bench


def _rss():
    with open('/proc/self/status') as status:
        for line in status:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) * 1024
    raise RuntimeError('no VmRSS in /proc/self/status')


def read_once(url):
    """Read the index once in this process: (bytes added, seconds)."""
    from iotguard.controller import manager as manager_mod
    from iotguard.controller import samples
    from iotguard.db import api as db_api

    conf = rates_bench.make_conf(url)
    controller = manager_mod.ControllerManager(
        conf, db_api.Connection(conf), samples.SampleStore(5.0))
    gc.collect()
    before, started = _rss(), time.perf_counter()
    controller.index.refresh()
    took = time.perf_counter() - started
    gc.collect()
    return _rss() - before, took


def run(args):
    url, engine = rates_bench.populate(args.db_url, args.disks,
                                       host_domains=args.host_domains)
    engine.dispose()
    print('%d disks (%s), 50 a host, %d domains a host' % (
        args.disks, url.split(':')[0], args.host_domains))
    print('run  bytes_per_disk  read_s')
    per_disk, took = [], []
    for n in range(args.runs):
        out = subprocess.run(
            [sys.executable, '-m', 'benchmarks.index', '--read', url],
            check=True, capture_output=True, text=True).stdout.split()
        per_disk.append(int(out[-2]) / args.disks)
        took.append(float(out[-1]))
        print('%3d  %14.0f  %6.3f' % (n + 1, per_disk[-1], took[-1]))
    for name, values in (('bytes per disk', per_disk), ('read s', took)):
        values = sorted(values)
        print('%s min/median/max %.3f/%.3f/%.3f' % (
            name, values[0], statistics.median(values), values[-1]))


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m benchmarks.index',
        description='What the disk index costs each controller.')
    parser.add_argument('--db-url', help='an empty database (default: a '
                        'fresh SQLite file)')
    parser.add_argument('--disks', type=int, default=300000)
    parser.add_argument('--host-domains', type=int, default=2,
                        help='domains the disks of one host are in')
    parser.add_argument('--runs', type=int, default=3)
    parser.add_argument('--read', metavar='URL', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.read:
        added, took = read_once(args.read)
        # the parent reads the last two words
        sys.stdout.write('%d %.6f\n' % (added, took))
    else:
        run(args)
    return 0


if __name__ == '__main__':
    sys.exit(main())
