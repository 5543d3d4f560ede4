#!/bin/bash
# Install a real OpenStack cloud from PyPI into one virtualenv, for the
# functional tests that run iotguard next to it
# (iotguard/tests/fixtures/cloud.py starts it once per test class):
# Keystone, Placement, Glance, Nova (api, conductor, scheduler, compute with
# the libvirt driver) and neutron-server, plus libvirt-python for
# nova-compute and the PostgreSQL driver. They come from one OpenStack
# release, so one virtualenv holds them all, as devstack installs them
# side by side. Idempotent: a second run checks the versions and returns.
#
#   IOTGUARD_CLOUD_VENV   where (default /opt/iotguard-cloud)
set -eu

VENV=${IOTGUARD_CLOUD_VENV:-/opt/iotguard-cloud}
PYTHON=${PYTHON:-python3}
PACKAGES="keystone==30.0.0 openstack-placement==16.0.0 glance==33.0.0
nova==34.0.0 neutron==29.0.0"
EXTRAS="libvirt-python psycopg2-binary PyMySQL"

wanted() {
    "$VENV/bin/python" - "$PACKAGES" <<'EOF'
import sys
from importlib.metadata import version, PackageNotFoundError
for spec in sys.argv[1].split():
    name, want = spec.split('==')
    try:
        if version(name) != want:
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
import libvirt, psycopg2  # noqa: F401
EOF
}

validator() {
    # nova-api validates iotguard's flavor extra spec (iotguard:tier).
    "$(dirname "$0")/install-nova-validator.sh" "$VENV"
}

if [ -x "$VENV/bin/python" ] && wanted 2>/dev/null; then
    echo "cloud already in $VENV"
    validator
    exit 0
fi

start=$(date +%s)
SUDO=
if [ ! -w "$(dirname "$VENV")" ] && [ "$(id -u)" != 0 ]; then
    SUDO=sudo
fi
$SUDO "$PYTHON" -m venv "$VENV"
$SUDO "$VENV/bin/pip" install -q --upgrade pip setuptools wheel
# shellcheck disable=SC2086
$SUDO "$VENV/bin/pip" install -q $PACKAGES $EXTRAS
wanted
echo "cloud installed in $VENV in $(( $(date +%s) - start )) s" \
     "($(du -sm "$VENV" | cut -f1) MB)"
validator
