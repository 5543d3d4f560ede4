#!/bin/bash
# Install the system packages the tests need and start the services the
# functional tests talk to (loopback only). Idempotent: skips what is there.
set -eu

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo

apt_install() {
    local missing=()
    for pkg in "$@"; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done
    [ ${#missing[@]} = 0 ] && return 0
    # No systemd here: keep package scripts from starting services.
    if [ ! -x /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
        $SUDO chmod +x /usr/sbin/policy-rc.d
    fi
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q \
        --no-install-recommends "${missing[@]}"
}

apt_install $(grep -v '^#' "$(dirname "$0")/../bindep.txt" | grep 'test' | \
    awk '{print $1}')
