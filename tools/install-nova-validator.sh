#!/bin/bash
# Make Nova validate iotguard's flavor extra spec: install this checkout,
# without its dependencies, into the virtualenv nova-api runs from, so that
# Nova finds iotguard's nova.api.extra_spec_validators entry point
# (iotguard/nova/extra_specs.py imports nothing but Nova). Idempotent.
#
#   tools/install-nova-validator.sh VENV
set -eu

VENV=$1
CHECKOUT=$(cd "$(dirname "$0")/.." && pwd)

installed_here() {
    "$VENV/bin/python" - "$CHECKOUT" <<'PYEOF'
import os, sys
from importlib.metadata import entry_points
eps = entry_points(group='nova.api.extra_spec_validators', name='iotguard')
if not eps:
    sys.exit(1)
module = list(eps)[0].load()
sys.exit(not os.path.realpath(module.__file__).startswith(
    os.path.realpath(sys.argv[1]) + os.sep))
PYEOF
}

if installed_here 2>/dev/null; then
    echo "iotguard's Nova extra spec validator already in $VENV"
    exit 0
fi
SUDO=
if [ ! -w "$VENV" ] && [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
$SUDO "$VENV/bin/pip" install -q --no-deps -e "$CHECKOUT"
installed_here
echo "iotguard's Nova extra spec validator installed in $VENV"
