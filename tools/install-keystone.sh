#!/bin/bash
# Install Keystone (the identity service the OSC plugin's catalog lookup and
# the tempest plugin's tier tests run against) into its own virtualenv,
# apart from iotguard's: Keystone pins its own oslo.* and Flask.
# iotguard/tests/functional/test_osc_keystone.py sets up a throwaway
# Keystone (SQLite, fernet) per test and serves keystone.wsgi.api with
# wsgiref. Idempotent.
#
#   IOTGUARD_KEYSTONE_VENV     where (default /opt/iotguard-keystone)
#   IOTGUARD_KEYSTONE_VERSION  which (default 30.0.0)
set -eu

VENV=${IOTGUARD_KEYSTONE_VENV:-/opt/iotguard-keystone}
WANT=${IOTGUARD_KEYSTONE_VERSION:-30.0.0}
PYTHON=${PYTHON:-python3}

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import keystone.wsgi, sys; \
from importlib.metadata import version; \
sys.exit(version('keystone') != '$WANT')" 2>/dev/null; then
    echo "keystone $WANT already in $VENV"
    exit 0
fi

start=$(date +%s)
SUDO=
if [ ! -w "$(dirname "$VENV")" ] && [ "$(id -u)" != 0 ]; then
    SUDO=sudo
fi
$SUDO "$PYTHON" -m venv "$VENV"
$SUDO "$VENV/bin/pip" install -q --upgrade pip setuptools wheel
$SUDO "$VENV/bin/pip" install -q "keystone==$WANT"
"$VENV/bin/python" -c "import keystone.server.wsgi"
echo "keystone $WANT installed in $VENV in $(( $(date +%s) - start )) s"
