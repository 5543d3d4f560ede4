# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""A tiny QEMU/TCG guest that writes to its disk in a loop.

Debian's kernel (direct kernel boot) and a busybox initramfs built here, no
disk image to download: the guest loads the virtio modules, prints
``IOTG: boot-done`` on its serial console (a file) and runs
``dd if=/dev/zero of=/dev/vda bs=1M oflag=direct`` forever.
The kernel is looked up in
``$IOTGUARD_TEST_GUEST_KERNEL_ROOT`` (a directory holding ``boot/`` and
``lib/modules/``, e.g. ``dpkg-deb -x linux-image-*.deb DIR``, which
tools/test-setup.sh does into /opt/iotguard/guestkernel), then in ``/``.
"""

import glob
import gzip
import io
import os
import shutil

MODULES = ('virtio/virtio_ring', 'virtio/virtio',
           'virtio/virtio_pci_legacy_dev', 'virtio/virtio_pci_modern_dev',
           'virtio/virtio_pci', 'block/virtio_blk')
# The IDE CD-ROM and ISO 9660, for a Nova config drive (relative to
# drivers/, in load order).
CDROM_MODULES = ('scsi/scsi_common', 'scsi/scsi_mod', 'ata/libata',
                 'ata/ata_piix', 'cdrom/cdrom', 'scsi/sr_mod',
                 '../fs/isofs/isofs')
BUSYBOX = '/bin/busybox'
DEFAULT_KERNEL_ROOTS = ('/opt/iotguard/guestkernel', '/')

INIT = """#!/bin/sh
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev \
virtio_pci virtio_blk; do insmod /mods/$m.ko; done
sleep 1
echo "IOTG: boot-done $(cat /proc/uptime)"
while true; do dd if=/dev/zero of=/dev/vda bs=1M count=64 oflag=direct \
2>/dev/null; done
"""


# A guest of the cloud: its workload comes from Nova's config drive. A
# server with user data runs it as a shell script (as Cirros does); one
# without writes to its root disk as its metadata says: ``iotg_bs`` (dd
# block size, default 1M), ``iotg_count`` (blocks per dd, default 64) and
# ``iotg_pause`` (seconds between dd runs, default 0: as fast as it can).
CLOUD_INIT = r"""#!/bin/sh
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev \
virtio_pci virtio_blk scsi_common scsi_mod libata ata_piix cdrom sr_mod \
isofs; do insmod /mods/$m.ko; done
sleep 1
mkdir -p /cfg; mount -t iso9660 -o ro /dev/sr0 /cfg
meta() {
    v=$(sed -n "s/.*\"$1\": *\"\([0-9.A-Za-z]*\)\".*/\1/p" \
        /cfg/openstack/latest/meta_data.json 2>/dev/null)
    echo "${v:-$2}"
}
BS=$(meta iotg_bs 1M); COUNT=$(meta iotg_count 64); PAUSE=$(meta iotg_pause 0)
UD=/cfg/openstack/latest/user_data
if [ -s $UD ]; then
    echo "IOTG: boot-done $(cat /proc/uptime) user-data"
    sh $UD
    while true; do sleep 3600; done
fi
echo "IOTG: boot-done $(cat /proc/uptime) bs=$BS count=$COUNT pause=$PAUSE"
while true; do dd if=/dev/zero of=/dev/vda bs=$BS count=$COUNT oflag=direct \
2>/dev/null; [ "$PAUSE" = 0 ] || sleep $PAUSE; done
"""


# A guest of the shared-queue bed: its writers come from the kernel
# command line (``iotg_<key>=<value>``): ``bs`` (dd block size, default
# 64k), ``count`` (blocks per dd, default 16), ``par`` (writers in
# parallel, default 1), ``pause`` (seconds a writer thinks after each dd,
# default 0), ``start`` (seconds before writing, default 0), ``oflag``
# (dd's, default direct; ``direct,dsync`` for synchronous writes),
# ``ramp`` (writer i starts i x this many seconds after the first, default
# 0: all at once; the paper's 1 -> N writers).
WRITERS_INIT = r"""#!/bin/sh
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev \
virtio_pci virtio_blk; do insmod /mods/$m.ko; done
sleep 1
arg() {
    v=$(sed -n "s/.*iotg_$1=\([^ ]*\).*/\1/p" /proc/cmdline)
    echo "${v:-$2}"
}
BS=$(arg bs 64k); COUNT=$(arg count 16); PAR=$(arg par 1)
PAUSE=$(arg pause 0); START=$(arg start 0); OFLAG=$(arg oflag direct)
RAMP=$(arg ramp 0)
echo "IOTG: boot-done $(cat /proc/uptime) bs=$BS count=$COUNT par=$PAR \
pause=$PAUSE start=$START oflag=$OFLAG ramp=$RAMP"
sleep $START
echo "IOTG: writing $(cat /proc/uptime)"
i=0
while [ $i -lt $PAR ]; do
    (sleep $((i * RAMP)); while true; do
        dd if=/dev/zero of=/dev/vda bs=$BS count=$COUNT \
            seek=$((i * COUNT)) oflag=$OFLAG 2>/dev/null
        [ "$PAUSE" = 0 ] || sleep $PAUSE
    done) &
    i=$((i + 1))
done
while true; do sleep 3600; done
"""


def find_kernel():
    """``(vmlinuz path, modules dir)`` or raise LookupError saying why."""
    roots = [os.environ.get('IOTGUARD_TEST_GUEST_KERNEL_ROOT')]
    roots += list(DEFAULT_KERNEL_ROOTS)
    for root in filter(None, roots):
        for vmlinuz in sorted(glob.glob(os.path.join(root, 'boot',
                                                     'vmlinuz-*')),
                              reverse=True):
            version = os.path.basename(vmlinuz)[len('vmlinuz-'):]
            mods = os.path.join(root, 'lib', 'modules', version, 'kernel',
                                'drivers')
            if all(os.path.exists(os.path.join(mods, m + '.ko'))
                   for m in MODULES):
                return vmlinuz, mods
    raise LookupError(
        'no guest kernel with uncompressed virtio modules in %s (set '
        'IOTGUARD_TEST_GUEST_KERNEL_ROOT to a dpkg-deb -x of '
        'linux-image-amd64)' % ', '.join(filter(None, roots)))


def _cpio_newc(entries):
    """A newc cpio archive of ``(name, mode, data)`` entries."""
    out = io.BytesIO()

    def pad():
        out.write(b'\0' * (-out.tell() % 4))

    for ino, (name, mode, data) in enumerate(
            entries + [('TRAILER!!!', 0, b'')], start=1):
        raw = name.encode() + b'\0'
        fields = (ino, mode, 0, 0, 2 if mode & 0o040000 else 1, 0,
                  len(data), 0, 0, 0, 0, len(raw), 0)
        out.write(b'070701' + b''.join(b'%08X' % f for f in fields))
        out.write(raw)
        pad()
        out.write(data)
        pad()
    return out.getvalue()


def build_initramfs(path, modules_dir, init=INIT, modules=MODULES):
    """Write the gzipped initramfs to ``path``."""
    if not os.path.exists(BUSYBOX):
        raise LookupError('%s not found (apt-get install busybox-static)'
                          % BUSYBOX)
    with open(BUSYBOX, 'rb') as f:
        busybox = f.read()
    d, x, r, link = 0o040755, 0o100755, 0o100644, 0o120777
    entries = [(n, d, b'') for n in ('bin', 'dev', 'proc', 'sys', 'mods')]
    entries.append(('bin/busybox', x, busybox))
    for applet in ('sh', 'mount', 'insmod', 'dd', 'sleep', 'echo', 'cat',
                   'mkdir', 'sed', 'true'):
        entries.append(('bin/' + applet, link, b'busybox'))
    for module in modules:
        with open(os.path.join(modules_dir, module + '.ko'), 'rb') as f:
            entries.append(('mods/%s.ko' % os.path.basename(module), r,
                            f.read()))
    entries.append(('init', x, init.encode()))
    with gzip.open(path, 'wb', compresslevel=1) as f:
        f.write(_cpio_newc(entries))


def _disk_source(workdir, rbd, nbd=None):
    """The <disk> opening and <source> of vda: a file, RBD or NBD.

    ``rbd``: ``(pool/image, monitor port, ceph.conf)`` as Nova writes a
    Ceph-backed volume (``type='network'``, librbd inside QEMU);
    ``nbd``: ``(export name, port)`` of an NBD server on 127.0.0.1.
    """
    if nbd is not None:
        return ("<disk type='network' device='disk'>\n"
                "      <driver name='qemu' type='raw' cache='none'/>\n"
                "      <source protocol='nbd' name='%s'>\n"
                "        <host name='127.0.0.1' port='%d'/>\n"
                "      </source>" % nbd)
    if rbd is None:
        disk = os.path.join(workdir, 'disk.img')
        with open(disk, 'wb') as f:
            f.truncate(256 << 20)
        return ("<disk type='file' device='disk'>\n"
                "      <driver name='qemu' type='raw' cache='none' "
                "io='native'/>\n      <source file='%s'/>" % disk)
    image, port, conf = rbd
    return ("<disk type='network' device='disk'>\n"
            "      <driver name='qemu' type='raw' cache='none'/>\n"
            "      <source protocol='rbd' name='%s'>\n"
            "        <host name='127.0.0.1' port='%d'/>\n"
            "        <config file='%s'/>\n      </source>"
            % (image, port, conf))


def _owner(project_id):
    """Nova's owner metadata, from which the agent reads the project."""
    if project_id is None:
        return ''
    return ("<metadata><nova:instance xmlns:nova="
            "'http://openstack.org/xmlns/libvirt/nova/1.1'><nova:owner>"
            "<nova:user uuid='user-%(p)s'>user</nova:user>"
            "<nova:project uuid='%(p)s'>project</nova:project>"
            "</nova:owner></nova:instance></metadata>\n  "
            % {'p': project_id})


def domain_xml(name, uuid, workdir, static_bytes_sec, rbd=None, nbd=None,
               init=INIT, args='', project_id=None):
    """A persistent TCG domain with one raw disk and a static ceiling.

    The disk is a file in ``workdir``, or the RBD image ``rbd`` or the NBD
    export ``nbd`` names (see :func:`_disk_source`); ``init`` the guest's
    /init, ``args`` appended to the kernel command line; ``project_id``
    the owner in Nova's metadata.
    """
    vmlinuz, modules_dir = find_kernel()
    kernel = os.path.join(workdir, 'vmlinuz')
    shutil.copyfile(vmlinuz, kernel)
    initrd = os.path.join(workdir, 'initrd.gz')
    build_initramfs(initrd, modules_dir, init=init)
    return """<domain type='qemu'>
  <name>%(name)s</name>
  <uuid>%(uuid)s</uuid>
  %(owner)s<memory unit='MiB'>128</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type>
    <kernel>%(kernel)s</kernel><initrd>%(initrd)s</initrd>
    <cmdline>console=ttyS0 quiet panic=-1 %(args)s</cmdline></os>
  <on_poweroff>destroy</on_poweroff><on_reboot>destroy</on_reboot>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    %(disk)s<target dev='vda' bus='virtio'/>
      <iotune><total_bytes_sec>%(static)d</total_bytes_sec></iotune>
    </disk>
    <serial type='file'><source path='%(console)s'/><target port='0'/>
    </serial>
    <memballoon model='none'/>
  </devices>
</domain>""" % {'name': name, 'uuid': uuid, 'kernel': kernel,
                'initrd': initrd, 'disk': _disk_source(workdir, rbd, nbd),
                'owner': _owner(project_id), 'args': args,
                'static': static_bytes_sec,
                'console': console_path(workdir)}


def console_path(workdir):
    return os.path.join(workdir, 'console.log')
