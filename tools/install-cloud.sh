#!/bin/bash
# Install a real OpenStack cloud from PyPI into one virtualenv, for the
# functional tests that run iotguard next to it
# (iotguard/tests/fixtures/cloud.py starts it once per test class):
# Keystone, Placement, Glance, Nova (api, conductor, scheduler, compute with
# the libvirt driver), neutron-server and Cinder (api, scheduler, volume with
# the RBD driver), plus libvirt-python for nova-compute and the database
# drivers. Ceph's Python bindings (rados, rbd) are not on PyPI: they come
# from Debian's python3-rados/python3-rbd (bindep.txt), linked into the
# virtualenv when its Python has the same version. They come from one OpenStack
# release, so one virtualenv holds them all, as devstack installs them
# side by side. Idempotent: a second run checks the versions and returns.
#
#   IOTGUARD_CLOUD_VENV   where (default /opt/iotguard-cloud)
set -eu

VENV=${IOTGUARD_CLOUD_VENV:-/opt/iotguard-cloud}
PYTHON=${PYTHON:-python3}
PACKAGES="keystone==30.0.0 openstack-placement==16.0.0 glance==33.0.0
nova==34.0.0 neutron==29.0.0 cinder==29.0.0"
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

ceph_bindings() {
    # Debian's rados/rbd modules of the system Python, when the venv's
    # Python is the same minor version (their ABI tag matches).
    local site tag found=0
    site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    tag=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
    for module in rados rbd; do
        if [ -e "/usr/lib/python3/dist-packages/$module$tag" ]; then
            $SUDO ln -sf "/usr/lib/python3/dist-packages/$module$tag" "$site/"
            found=$((found + 1))
        fi
    done
    if [ "$found" = 2 ] && "$VENV/bin/python" -c 'import rados, rbd'; then
        echo "Ceph bindings (rados, rbd) linked into $VENV"
    else
        echo "no Ceph bindings for $VENV (python3-rados, python3-rbd):" \
             "cinder-volume cannot use RBD; the Cinder tests skip"
    fi
}

validator() {
    # nova-api validates iotguard's flavor extra spec (iotguard:tier).
    "$(dirname "$0")/install-nova-validator.sh" "$VENV"
}

SUDO=
if [ ! -w "$(dirname "$VENV")" ] && [ "$(id -u)" != 0 ]; then
    SUDO=sudo
fi

if [ -x "$VENV/bin/python" ] && wanted 2>/dev/null; then
    echo "cloud already in $VENV"
    ceph_bindings
    validator
    exit 0
fi

start=$(date +%s)
$SUDO "$PYTHON" -m venv "$VENV"
$SUDO "$VENV/bin/pip" install -q --upgrade pip setuptools wheel
# shellcheck disable=SC2086
$SUDO "$VENV/bin/pip" install -q $PACKAGES $EXTRAS
wanted
echo "cloud installed in $VENV in $(( $(date +%s) - start )) s" \
     "($(du -sm "$VENV" | cut -f1) MB)"
ceph_bindings
validator
