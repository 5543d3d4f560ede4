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

"""The NBD disk emulator's protocol and timing, on a virtual clock.

A client written here from the protocol talks to
:func:`~iotguard.tests.fixtures.nbddisk.serve_connection` over a socket
pair; the disk sleeps on a virtual clock, so the service times are exact
and nothing waits. The real thing, under QEMU and FUSE, is
iotguard.tests.functional.test_measure.
"""

import os
import socket
import struct
import tempfile
import threading

from iotguard.tests import base as test_base
from iotguard.tests.fixtures import diskmodel
from iotguard.tests.fixtures import nbddisk as nbd

SIZE = 1 << 20
MODEL = diskmodel.Disk(seek_s=0.005, transfer_bytes_per_s=8 << 20)


class VirtualClock:
    """Time that passes only when the disk sleeps."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def recv(sock, size):
    return nbd._recv(sock, size)


def option(sock, code, payload=b''):
    sock.sendall(nbd.OPTION.pack(nbd.IHAVEOPT, code, len(payload)) + payload)


def option_reply(sock):
    magic, code, kind, length = nbd.OPTION_REPLY.unpack(
        recv(sock, nbd.OPTION_REPLY.size))
    assert magic == nbd.REPLY_MAGIC
    return code, kind, recv(sock, length)


class Client:
    """Just enough of an NBD client: negotiate, then simple requests."""

    def __init__(self, sock):
        self.sock, self.cookie = sock, 0

    def negotiate(self, go=True):
        magic, opt, flags = struct.unpack('>QQH', recv(self.sock, 18))
        assert (magic, opt) == (nbd.NBDMAGIC, nbd.IHAVEOPT)
        assert flags & nbd.FLAG_FIXED_NEWSTYLE
        self.sock.sendall(struct.pack('>I', nbd.FLAG_FIXED_NEWSTYLE
                                      | nbd.FLAG_NO_ZEROES))
        # what QEMU asks first: structured replies, which it goes without
        option(self.sock, 8)
        unsupported = option_reply(self.sock)
        if not go:
            option(self.sock, nbd.OPT_EXPORT_NAME, b'disk')
            size, tflags = struct.unpack('>QH', recv(self.sock, 10))
            return unsupported, size, tflags
        name = b'disk'
        option(self.sock, nbd.OPT_GO, struct.pack('>I', len(name)) + name
               + struct.pack('>H', 0))
        code, kind, data = option_reply(self.sock)
        assert (code, kind) == (nbd.OPT_GO, nbd.REP_INFO)
        info, size, tflags = struct.unpack('>HQH', data)
        assert info == nbd.INFO_EXPORT
        assert option_reply(self.sock)[:2] == (nbd.OPT_GO, nbd.REP_ACK)
        return unsupported, size, tflags

    def send(self, kind, offset=0, length=0, data=b''):
        self.cookie += 1
        self.sock.sendall(nbd.REQUEST.pack(nbd.REQUEST_MAGIC, 0, kind,
                                           self.cookie, offset, length)
                          + data)
        return self.cookie

    def reply(self, length=0):
        magic, error, cookie = nbd.REPLY.unpack(recv(self.sock,
                                                     nbd.REPLY.size))
        assert magic == nbd.SIMPLE_REPLY_MAGIC
        return cookie, error, recv(self.sock, length) if not error else b''


class TestNbdDisk(test_base.TestCase):

    def setUp(self):
        super().setUp()
        fd, path = tempfile.mkstemp()
        os.ftruncate(fd, SIZE)
        self.addCleanup(os.unlink, path)
        self.addCleanup(os.close, fd)
        self.clock = VirtualClock()
        self.disk = nbd.SerialDisk(fd, SIZE, MODEL, self.clock,
                                   self.clock.sleep)
        self.addCleanup(self.disk.stop)
        ours, theirs = socket.socketpair()
        self.server = threading.Thread(target=nbd.serve_connection,
                                       args=(theirs, self.disk))
        self.server.start()
        # cleanups run last first: the client hangs up, the server ends
        self.addCleanup(self.server.join, 5)
        self.addCleanup(ours.close)
        self.client = Client(ours)

    def test_go_serves_writes_and_reads_in_service_time(self):
        unsupported, size, tflags = self.client.negotiate()
        self.assertEqual(nbd.REP_ERR_UNSUP, unsupported[1])
        self.assertEqual(SIZE, size)
        self.assertTrue(tflags & nbd.TFLAG_SEND_FLUSH)
        block = os.urandom(4096)
        # pipelined, as QEMU sends them: answered in order, one at a time
        cookies = [self.client.send(nbd.CMD_WRITE, n * 4096, 4096, block)
                   for n in range(3)]
        cookies.append(self.client.send(nbd.CMD_FLUSH))
        self.assertEqual([(c, 0, b'') for c in cookies],
                         [self.client.reply() for _ in cookies])
        self.client.send(nbd.CMD_READ, 4096, 4096)
        self.assertEqual(block, self.client.reply(4096)[2])
        self.client.send(nbd.CMD_READ, 0, SIZE)
        self.assertEqual(block, self.client.reply(SIZE)[2][8192:12288])
        # four 4 KiB requests and one of 1 MiB, the flush for nothing
        self.assertAlmostEqual(4 * MODEL.service_s(4096)
                               + MODEL.service_s(SIZE), self.clock.now)
        self.assertAlmostEqual(self.clock.now, self.disk.stats.busy_s)
        stats = self.disk.stats.to_dict()
        self.assertEqual({'write': 3, 'flush': 1, 'read': 2},
                         stats['requests'])
        self.assertEqual({'4096': 4, str(SIZE): 1}, stats['sizes'])
        self.client.send(nbd.CMD_DISC)
        self.server.join(5)
        self.assertFalse(self.server.is_alive())

    def test_export_name_and_errors(self):
        _, size, _ = self.client.negotiate(go=False)
        self.assertEqual(SIZE, size)
        self.client.send(nbd.CMD_WRITE, SIZE - 4096, 8192, bytes(8192))
        self.assertEqual(nbd.ENOSPC, self.client.reply()[1])
        self.client.send(nbd.CMD_READ, SIZE, 4096)
        self.assertEqual(nbd.EINVAL, self.client.reply()[1])
        self.client.send(4)  # trim: not offered
        self.assertEqual(nbd.EINVAL, self.client.reply()[1])
        # refused requests never occupy the disk
        self.assertEqual(0.0, self.clock.now)

    def test_a_client_that_goes_away_is_dropped(self):
        self.client.negotiate()
        self.client.sock.close()
        self.server.join(5)
        self.assertFalse(self.server.is_alive())
