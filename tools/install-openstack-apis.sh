#!/bin/bash
# Install nova-api and cinder-api (the real services iotguard-manage tier
# sync is tested against) into their own virtualenvs, apart from iotguard's:
# both pin their own oslo.* and would fight iotguard's requirements.
# The test fixture (iotguard/tests/fixtures/openstack.py) serves them with
# wsgiref on SQLite with the fake RPC transport, without keystone.
# Idempotent.
#
#   IOTGUARD_NOVA_VENV     default /opt/iotguard-nova    (nova 34.0.0)
#   IOTGUARD_CINDER_VENV   default /opt/iotguard-cinder  (cinder 29.0.0)
set -eu

PYTHON=${PYTHON:-python3}

install() {
    local venv=$1 package=$2 version=$3 module=$4
    if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import $module, sys; \
from importlib.metadata import version; \
sys.exit(version('$package') != '$version')" 2>/dev/null; then
        echo "$package $version already in $venv"
        return
    fi
    local start
    start=$(date +%s)
    SUDO=
    if [ ! -w "$(dirname "$venv")" ] && [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
    $SUDO "$PYTHON" -m venv "$venv"
    $SUDO "$venv/bin/pip" install -q --upgrade pip setuptools wheel
    $SUDO "$venv/bin/pip" install -q "$package==$version"
    "$venv/bin/python" -c "import $module"
    echo "$package $version installed in $venv in $(( $(date +%s) - start )) s"
}

install "${IOTGUARD_NOVA_VENV:-/opt/iotguard-nova}" nova 34.0.0 \
    nova.api.openstack.wsgi_app
install "${IOTGUARD_CINDER_VENV:-/opt/iotguard-cinder}" cinder 29.0.0 \
    cinder.api
# nova-api validates iotguard's flavor extra spec (iotguard:tier).
"$(dirname "$0")/install-nova-validator.sh" \
    "${IOTGUARD_NOVA_VENV:-/opt/iotguard-nova}"
