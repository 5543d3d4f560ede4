#!/bin/bash
# Install Gnocchi (the metric store the Gnocchi source of iotguard-controller
# is tested against) into its own virtualenv, apart from iotguard's: Gnocchi
# pins its own oslo.* and would fight iotguard's requirements otherwise.
# No uwsgi is built: the test fixture serves gnocchi.rest.app.load_app()
# with wsgiref. Idempotent: does nothing when the venv already imports
# gnocchi at the wanted version.
#
#   IOTGUARD_GNOCCHI_VENV   where (default /opt/iotguard-gnocchi)
#   IOTGUARD_GNOCCHI_VERSION  which (default 4.7.1)
set -eu

VENV=${IOTGUARD_GNOCCHI_VENV:-/opt/iotguard-gnocchi}
WANT=${IOTGUARD_GNOCCHI_VERSION:-4.7.1}
PYTHON=${PYTHON:-python3}

if [ -x "$VENV/bin/python" ] && \
        "$VENV/bin/python" -c "import gnocchi.rest.app, psycopg2, sys; \
from importlib.metadata import version; \
sys.exit(version('gnocchi') != '$WANT')" 2>/dev/null; then
    echo "gnocchi $WANT already in $VENV"
    exit 0
fi

start=$(date +%s)
SUDO=
if [ ! -w "$(dirname "$VENV")" ] && [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
$SUDO "$PYTHON" -m venv "$VENV"
$SUDO "$VENV/bin/pip" install -q --upgrade pip setuptools wheel
# This is gnocchi[postgresql,file,redis] with psycopg2-binary in place of
# psycopg2 (the extra's psycopg2 compiles against libpq-dev; the binary
# wheel provides the same module and needs no compiler).
$SUDO "$VENV/bin/pip" install -q "gnocchi[file,redis]==$WANT" \
    psycopg2-binary 'oslo.db>=4.29.0' 'sqlalchemy>=1.4.24' sqlalchemy-utils \
    alembic
"$VENV/bin/python" -c "import gnocchi.rest.app"
echo "gnocchi $WANT installed in $VENV in $(( $(date +%s) - start )) s"
