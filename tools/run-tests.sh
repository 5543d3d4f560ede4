#!/bin/bash
# Install what the tests need and run them all: unit, functional and pep8.
# Needs root (or sudo) the first time, for the system packages and services
# that tools/test-setup.sh installs and starts.
set -eu
cd "$(dirname "$0")/.."
started=$(date +%s)
report_time() {
    local took=$(( $(date +%s) - started ))
    echo "tools/run-tests.sh: total time $((took / 60)) min $((took % 60)) s" \
         "(installs included)"
}
trap report_time EXIT
bash tools/test-setup.sh
python3 -m pip install -q 'tox>=4.6'
# The environments are made side by side first (each installs the
# requirements: one after the other they took about 3 minutes), then the
# tests run one environment after the other (the functional tests must
# not share the 2 cores with the unit tests).
python3 -m tox run-parallel -p all --parallel-no-spinner --notest \
    -e py3,functional,pep8
rm -f .stestr-summary
status=0
python3 -m tox -e py3,functional,pep8,dashboard || status=$?
python3 tools/test-summary.py --total || status=1
exit $status
