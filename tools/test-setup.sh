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

# The services the functional tests talk to, on loopback. Start what is down.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() {
    for _ in $(seq 1 60); do port_open "$1" && return 0; sleep 1; done
    echo "service on port $1 did not come up" >&2
    return 1
}

if ! port_open 5432 && command -v pg_ctlcluster >/dev/null; then
    $SUDO pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start
    wait_port 5432
fi
if ! port_open 3306 && [ -x /usr/sbin/mariadbd ]; then
    $SUDO start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
    wait_port 3306
fi
if ! port_open 6379 && command -v redis-server >/dev/null; then
    $SUDO redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
    wait_port 6379
fi
if ! port_open 5672 && command -v rabbitmq-server >/dev/null; then
    $SUDO rabbitmq-server -detached
    wait_port 5672
fi

# libvirtd + virtlogd (QEMU, TCG) for the agent's end-to-end test; no
# systemd here, and no cgroup delegation, AppArmor or NAT network either.
if command -v libvirtd >/dev/null && \
        ! timeout 10 virsh -c qemu:///system version >/dev/null 2>&1; then
    grep -q '^# --- iotguard' /etc/libvirt/qemu.conf || \
        $SUDO tee -a /etc/libvirt/qemu.conf >/dev/null <<'EOC'
# --- iotguard: container without systemd/cgroup delegation/AppArmor ---
user = "root"
group = "root"
security_driver = "none"
namespaces = [ ]
cgroup_controllers = [ ]
EOC
    $SUDO rm -f /etc/libvirt/qemu/networks/autostart/*.xml
    pgrep -x virtlogd >/dev/null || $SUDO timeout 10 virtlogd -d || true
    $SUDO timeout 20 libvirtd -d || echo "libvirtd did not start" >&2
    for _ in $(seq 1 120); do
        timeout 5 virsh -c qemu:///system version >/dev/null 2>&1 && break
        sleep 0.25
    done
fi
# A guest kernel with virtio modules as plain .ko files, unpacked (not
# installed: no initramfs rebuild), for the same test.
GUESTKERNEL=/opt/iotguard/guestkernel
if [ ! -d "$GUESTKERNEL/boot" ] && command -v apt-get >/dev/null; then
    kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | \
        awk '/Depends: linux-image-[0-9]/{print $2; exit}')
    if [ -n "$kpkg" ]; then
        tmp=$(mktemp -d)
        (cd "$tmp" && apt-get download "$kpkg" >/dev/null) && \
            $SUDO mkdir -p "$GUESTKERNEL" && \
            $SUDO dpkg-deb -x "$tmp/$kpkg"_*.deb "$GUESTKERNEL"
        rm -rf "$tmp"
    fi
fi

# Each OpenStack service the functional tests start lives in its own
# virtualenv, installed side by side (downloads and builds overlap; about
# half the time of one after the other on 2 cores). A failed install is
# shown with its log and fails the set-up.
# - install-gnocchi.sh: Gnocchi, for the Gnocchi source's tests
#   (iotguard/tests/fixtures/gnocchi.py starts it per test class);
# - install-openstack-apis.sh: nova-api and cinder-api from PyPI, for the
#   tier sync tests (iotguard/tests/fixtures/openstack.py);
# - install-keystone.sh: Keystone, for the OSC and tempest plugins through
#   a real catalog (iotguard/tests/functional/test_osc_keystone.py);
# - install-horizon.sh: Horizon 27 with the dashboard plugin
#   (iotguard-dashboard/) and Debian's chromium and chromium-driver, for
#   tox -e dashboard and iotguard/tests/functional/test_horizon.py;
# - install-cloud.sh: a real OpenStack cloud (Keystone, Placement, Glance,
#   Nova with nova-compute on libvirt, neutron-server) in one venv, for
#   iotguard/tests/functional/test_cloud.py (iotguard/tests/fixtures/cloud.py).
logs=$(mktemp -d)
pids=()
for part in gnocchi openstack-apis keystone horizon cloud; do
    "$(dirname "$0")/install-$part.sh" >"$logs/$part.log" 2>&1 &
    pids+=("$part:$!")
done
failed=0
for entry in "${pids[@]}"; do
    part=${entry%%:*}
    if wait "${entry#*:}"; then
        tail -n 3 "$logs/$part.log"
    else
        echo "install-$part.sh failed:" >&2
        cat "$logs/$part.log" >&2
        failed=1
    fi
done
rm -rf "$logs"
exit $failed
