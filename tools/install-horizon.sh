#!/bin/bash
# Install Horizon and iotguard's dashboard plugin (iotguard-dashboard/ of
# this checkout) into their own virtualenv, apart from iotguard's: Horizon
# pins its own Django and clients, and the plugin must install without
# iotguard's requirements. Also Debian's chromium and chromium-driver.
# iotguard/tests/functional/test_horizon.py serves that Horizon (with the
# plugin from the checkout, which comes first on its path) against a
# throwaway Keystone and iotguard-api and drives it with headless Chromium
# through selenium (test-requirements.txt). Idempotent.
#
#   IOTGUARD_HORIZON_VENV     where (default /opt/iotguard-horizon)
#   IOTGUARD_HORIZON_VERSION  which (default 27.0.0, the 2026.2 release)
#   IOTGUARD_NO_APT=1         do not apt-get install chromium
set -eu

VENV=${IOTGUARD_HORIZON_VENV:-/opt/iotguard-horizon}
WANT=${IOTGUARD_HORIZON_VERSION:-27.0.0}
PYTHON=${PYTHON:-python3}
HERE=$(cd "$(dirname "$0")/.." && pwd)

start=$(date +%s)
SUDO=
if [ "$(id -u)" != 0 ]; then
    SUDO=sudo
fi
if [ -z "${IOTGUARD_NO_APT:-}" ] && ! command -v chromedriver >/dev/null; then
    $SUDO apt-get install -y -q chromium chromium-driver >/dev/null
fi

# The virtualenv's owner installs into it.
SUDO_VENV=
if [ ! -w "$(dirname "$VENV")" ] || { [ -e "$VENV" ] && [ ! -w "$VENV" ]; }; then
    SUDO_VENV=$SUDO
fi
if ! "$VENV/bin/python" -c "import openstack_dashboard, sys; \
from importlib.metadata import version; \
sys.exit(version('horizon') != '$WANT')" 2>/dev/null; then
    $SUDO_VENV "$PYTHON" -m venv "$VENV"
    $SUDO_VENV "$VENV/bin/pip" install -q --upgrade pip setuptools wheel
    # Horizon 27 runs on Django 4.2 and 5.2, the LTS releases.
    $SUDO_VENV "$VENV/bin/pip" install -q "horizon==$WANT" 'Django>=4.2,<6'
fi
# The plugin each time (it changes with the checkout), without
# dependencies: Horizon brings them all.
$SUDO_VENV "$VENV/bin/pip" install -q --no-deps --force-reinstall \
    "$HERE/iotguard-dashboard"
"$VENV/bin/python" -c "import openstack_dashboard, iotguard_dashboard"
echo "horizon $WANT and iotguard-dashboard in $VENV in" \
     "$(( $(date +%s) - start )) s"
