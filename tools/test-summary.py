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

Also adds the counts and the failed tests' names to .stestr-summary (read
back by ``--total``, which names them again at the end of the whole run,
each with the first lines of its failure: the end of a long CI log may be
all that is shown of it), and fails when the run executed no test at
all, so a suite can never pass on zero tests.
"""

import io
import json
import os
import subprocess
import sys

RECORD = '.stestr-summary'
#: How much of a failure is repeated at the end of the run.
WHY_LINES = 6
WHY_CHARS = 600


def why(traceback):
    """The exception line of a traceback and what follows it, shortened.

    The exception is the first line at the margin after the last frame
    (an indented ``File`` line and its indented source lines), whatever
    the exception is called (``fixtures``' ``TimeoutException`` too).
    """
    lines = [line for line in traceback.splitlines() if line.strip()]
    frames = [i for i, line in enumerate(lines)
              if line.lstrip().startswith('File "') and line[0].isspace()]
    start = frames[-1] + 1 if frames else 0
    while start < len(lines) - 1 and lines[start][0].isspace():
        start += 1
    shown = lines[start:start + WHY_LINES]
    text = '\n'.join(line.strip() for line in shown)
    return text[:WHY_CHARS]


def count_last_run(prefix=None):
    # Imported here: --total runs outside the test virtualenv.
    import subunit
    import testtools

    data = subprocess.run(['stestr', 'last', '--subunit'], check=True,
                          capture_output=True).stdout
    stream = subunit.ByteStreamToStreamResult(
        io.BytesIO(data), non_subunit_name='stdout')
    summary = testtools.StreamSummary()
    ran = set()
    collect = testtools.StreamToDict(lambda test: ran.add(test['id']))
    result = testtools.CopyStreamResult([summary, collect])
    result.startTestRun()
    stream.run(result)
    result.stopTestRun()
    skipped = len(summary.skipped)
    failed = (len(summary.errors) + len(summary.failures)
              + len(summary.unexpectedSuccesses))
    passed = summary.testsRun - failed - skipped
    reasons = {test.id(): why(detail) for test, detail in
               summary.errors + summary.failures}
    names = sorted(reasons)
    if prefix:
        # The unit and functional suites share one stestr repository: when
        # a run never started, "last" is the other suite's.
        # ("setUpClass (iotguard.tests....)" names a class that failed.)
        if not ran or any(prefix not in t for t in ran):
            return {'passed': 0, 'failed': 1, 'skipped': 0,
                    'failed_tests': ['(the last run is not %s: did it '
                                     'start?)' % prefix], 'why': {}}
    return {'passed': passed, 'failed': failed, 'skipped': skipped,
            'failed_tests': names, 'why': reasons}


def main(argv):
    if argv[1:] == ['--total']:
        if not os.path.exists(RECORD):
            print('total: no test ran', file=sys.stderr)
            return 1
        with open(RECORD) as f:
            runs = [json.loads(line) for line in f if line.strip()]
        counts = {k: sum(r[k] for r in runs)
                  for k in ('passed', 'failed', 'skipped')}
        counts['failed_tests'] = [t for r in runs
                                  for t in r.get('failed_tests', [])]
        counts['why'] = {t: w for r in runs
                         for t, w in r.get('why', {}).items()}
        name = 'total'
    else:
        name = argv[1] if len(argv) > 1 else 'tests'
        counts = count_last_run(argv[2] if len(argv) > 2 else None)
        if os.environ.get('IOTGUARD_TEST_RECORD', '1') == '1':
            with open(RECORD, 'a') as f:
                f.write(json.dumps(counts) + '\n')
    print('%s: %d passed, %d failed, %d skipped'
          % (name, counts['passed'], counts['failed'], counts['skipped']))
    for test in counts['failed_tests']:
        print('%s: FAILED %s' % (name, test))
        for line in counts['why'].get(test, '').splitlines():
            print('%s:     %s' % (name, line))
    if counts['passed'] == 0:
        print('%s: no test ran' % name, file=sys.stderr)
        return 1
    return 1 if counts['failed'] else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
