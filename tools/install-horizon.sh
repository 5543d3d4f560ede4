#!/bin/bash
# Install Horizon (with iotguard's dashboard plugin from this checkout) into
# its own virtualenv, apart from iotguard's: Horizon pins its own Django and
# clients, and the plugin must not need iotguard's server requirements.
# iotguard/tests/functional/test_horizon.py serves that Horizon against a
# throwaway Keystone and iotguard-api and drives it with headless Chromium
# (Debian's chromium and chromium-driver; selenium goes in iotguard's
# virtualenv, from test-requirements.txt or below). Idempotent.
#
#   IOTGUARD_HORIZON_VENV     where (default /opt/iotguard-horizon)
#   IOTGUARD_HORIZON_VERSION  which (default 27.0.0, the 2026.2 release)
#   IOTGUARD_SELENIUM_PIP     pip of the virtualenv running the tests, to
#                             install selenium into (default: none)
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
if [ -n "${IOTGUARD_SELENIUM_PIP:-}" ]; then
    "$IOTGUARD_SELENIUM_PIP" install -q 'selenium>=4.10'
fi

if ! { [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import \
openstack_dashboard, sys; from importlib.metadata import version; \
sys.exit(version('horizon') != '$WANT')" 2>/dev/null; }; then
    if [ ! -w "$(dirname "$VENV")" ]; then
        SUDO_VENV=$SUDO
    fi
    ${SUDO_VENV:-} "$PYTHON" -m venv "$VENV"
    ${SUDO_VENV:-} "$VENV/bin/pip" install -q --upgrade pip setuptools wheel
    # Horizon 27 runs on Django 4.2 and 5.2 (the LTS releases).
    ${SUDO_VENV:-} "$VENV/bin/pip" install -q "horizon==$WANT" \
        'Django>=4.2,<6'
fi
# The plugin, from this checkout (re-installed each time: it changes).
${SUDO_VENV:-} "$VENV/bin/pip" install -q --no-deps --force-reinstall \
    "$HERE/iotguard-dashboard"
"$VENV/bin/python" -c "import openstack_dashboard, iotguard_dashboard"
echo "horizon $WANT and iotguard-dashboard in $VENV in" \
     "$(( $(date +%s) - start )) s"
