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
"""Print the last stestr run as 'NAME: N passed, N failed, N skipped'.

Also adds the counts to .stestr-summary (read back by ``--total``), and
fails when the run executed no test at all, so a suite can never pass on
zero tests.
"""

import io
import json
import os
import subprocess
import sys

RECORD = '.stestr-summary'


def count_last_run():
    # Imported here: --total runs outside the test virtualenv.
    import subunit
    import testtools

    data = subprocess.run(['stestr', 'last', '--subunit'], check=True,
                          capture_output=True).stdout
    stream = subunit.ByteStreamToStreamResult(
        io.BytesIO(data), non_subunit_name='stdout')
    summary = testtools.StreamSummary()
    summary.startTestRun()
    stream.run(summary)
    summary.stopTestRun()
    skipped = len(summary.skipped)
    failed = (len(summary.errors) + len(summary.failures)
              + len(summary.unexpectedSuccesses))
    passed = summary.testsRun - failed - skipped
    return {'passed': passed, 'failed': failed, 'skipped': skipped}


def main(argv):
    if argv[1:] == ['--total']:
        if not os.path.exists(RECORD):
            print('total: no test ran', file=sys.stderr)
            return 1
        with open(RECORD) as f:
            runs = [json.loads(line) for line in f if line.strip()]
        counts = {k: sum(r[k] for r in runs)
                  for k in ('passed', 'failed', 'skipped')}
        name = 'total'
    else:
        name = argv[1] if len(argv) > 1 else 'tests'
        counts = count_last_run()
        if os.environ.get('IOTGUARD_TEST_RECORD', '1') == '1':
            with open(RECORD, 'a') as f:
                f.write(json.dumps(counts) + '\n')
    print('%s: %d passed, %d failed, %d skipped'
          % (name, counts['passed'], counts['failed'], counts['skipped']))
    if counts['passed'] == 0:
        print('%s: no test ran' % name, file=sys.stderr)
        return 1
    return 1 if counts['failed'] else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
