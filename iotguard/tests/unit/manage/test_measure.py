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

"""iotguard.manage.measure and ``iotguard-manage domain calibrate --measure``.

The generator runs here on a simulated device (a fake ``os.pwrite`` on a
virtual clock): no real I/O, no sleep. The real thing, on a real token
bucket, is iotguard.tests.functional.test_measure.
"""

import contextlib
import errno
import io
import json
import os
import threading
from unittest import mock

import fixtures

from iotguard.cmd import manage
from iotguard import exception
from iotguard.manage import measure
from iotguard.policy import base
from iotguard.tests import base as test_base
from iotguard.tests.unit.controller import fakes

HERE = os.path.dirname(__file__)
#: fio 3.33's JSON output of a mixed phase (fio_args 'mixed', 4 s: 15
#: small writers paced at 3 IOPS each and one 1 MiB writer), captured on
#: the functional test's bucket of 100 IOPS and 4 MiB/s over FUSE; the
#: jobs' latency and disk statistics are cut, the rest is as fio wrote it.
FIO_SAMPLE = os.path.join(HERE, 'fio_mixed.json')

PROFILE = base.Profile(iops_4k=100.0, bytes_sec=4 << 20)


def phase(name, iops, bytes_sec, seconds=10.0):
    return measure.Phase(name, int(round(iops * seconds)),
                         int(round(bytes_sec * seconds)), seconds)


def result(mixed_iops, mixed_bytes, small=(100.0, 400 << 10),
           large=(4.0, 4 << 20)):
    return measure.Result('builtin', True, phase('small', *small),
                          phase('large', *large),
                          phase('mixed', mixed_iops, mixed_bytes))


class TestFormChoice(test_base.TestCase):

    def test_token_bucket_point_is_max(self):
        # A bucket of 100 IOPS and 4 MiB/s, 4 KiB writes at 50/s and the
        # rest of the bytes in 1 MiB writes: both buckets near empty.
        point = (50 + 3.8, 50 * 4096 + 3.8 * (1 << 20))
        residual = measure.residuals(*point, PROFILE)
        self.assertAlmostEqual(0.0, residual['max'], delta=0.01)
        self.assertAlmostEqual(0.54, residual['additive'], delta=0.01)
        self.assertEqual('max', measure.choose_form(residual))

    def test_seek_and_transfer_point_is_additive(self):
        # A disk: 4 KiB writes at 50/s take 0.55 of its time (seek and
        # transfer), 1 MiB writes the rest: iops/I + bytes/B is 1, the
        # max of the two about half.
        small_load = 50 / 100 + 50 * 4096 / (4 << 20)
        large = (1 - small_load) / (1 / 100 + (1 << 20) / (4 << 20))
        point = (50 + large, 50 * 4096 + large * (1 << 20))
        residual = measure.residuals(*point, PROFILE)
        self.assertAlmostEqual(0.0, residual['additive'], delta=1e-9)
        self.assertLess(residual['max'], -0.4)
        self.assertEqual('additive', measure.choose_form(residual))

    def test_unsaturated_point_falls_back_to_additive(self):
        residual = measure.residuals(20, 1 << 20, PROFILE)
        self.assertLess(residual['additive'], 0)
        self.assertEqual('additive', measure.choose_form(residual))

    def test_tie_is_additive(self):
        self.assertEqual('additive', measure.choose_form(
            {'additive': 0.1, 'max': -0.1}))
        self.assertEqual('max', measure.choose_form(
            {'additive': 0.1, 'max': -0.09}))

    def test_result_profile_and_report(self):
        res = result(53.8, 50 * 4096 + 3.8 * (1 << 20))
        self.assertEqual(base.Profile(100.0, 4 << 20, 'max'), res.profile)
        lines = measure.report_lines(res)
        self.assertIn('residual additive +0.5', '\n'.join(lines))
        self.assertIn('residual max', '\n'.join(lines))
        self.assertEqual('form: max', lines[-1])

    def test_zero_operations_fail(self):
        for res in (result(50, 1 << 20, small=(0, 0)),
                    result(50, 1 << 20, large=(0, 0)),
                    result(0, 0)):
            self.assertRaises(exception.MeasureFailed, lambda: res.profile)
            self.assertRaises(exception.MeasureFailed, res.check)

    def test_below_a_profile_fails(self):
        res = result(0.6, 2000.0, small=(0.5, 2048.0), large=(0.5, 2000.0))
        err = self.assertRaises(exception.MeasureFailed, res.check)
        self.assertIn('below what a profile can hold', err.message)


class TestSizes(test_base.TestCase):

    def test_parse_size(self):
        self.assertEqual([4096, 4096, 1 << 20, 1 << 30, 3 << 29],
                         [measure.parse_size(t) for t in
                          ('4096', '4k', '1M', '1GiB', '1.5g')])
        for bad in ('', 'x', '-1', '4q', '1 M B'):
            self.assertRaises(ValueError, measure.parse_size, bad)


class TestFio(test_base.TestCase):

    def test_parse_captured_sample(self):
        with open(FIO_SAMPLE) as f:
            text = f.read()
        got = measure.parse_fio(text, 'mixed')
        doc = json.loads(text)
        writes = [job['write'] for job in doc['jobs']]
        self.assertEqual(16, len(writes))
        self.assertEqual(sum(w['total_ios'] for w in writes), got.ops)
        self.assertEqual(sum(w['io_bytes'] for w in writes), got.nbytes)
        self.assertEqual(max(w['runtime'] for w in writes) / 1000.0,
                         got.seconds)
        # The point itself: the bucket's (see the functional test).
        residual = measure.residuals(got.iops, got.bytes_sec, PROFILE)
        self.assertEqual('max', measure.choose_form(residual))

    def test_notices_before_the_json_are_skipped(self):
        text = ('fio: this platform does not support process shared '
                'mutexes\n' + json.dumps({'jobs': [{
                    'jobname': 'small', 'error': 0, 'write': {
                        'total_ios': 400, 'io_bytes': 400 * 4096,
                        'runtime': 4000}}]}))
        got = measure.parse_fio(text, 'small')
        self.assertEqual((100.0, 409600.0), (got.iops, got.bytes_sec))

    def test_bad_output_and_job_errors(self):
        for text in ('', 'fio: no JSON', '{"jobs": []}', '{"jobs": [',
                     json.dumps({'jobs': [{'jobname': 'small',
                                           'error': 22, 'write': {}}]})):
            self.assertRaises(exception.MeasureFailed, measure.parse_fio,
                              text, 'small')

    def test_args(self):
        target = measure.Target('/dev/x', 64 << 20, block=True)
        small = measure.fio_args(target, 'small', 4, 16, 1 << 20, True)
        self.assertIn('--rw=randwrite', small)
        self.assertIn('--numjobs=16', small)
        self.assertIn('--direct=1', small)
        large = measure.fio_args(target, 'large', 4, 16, 1 << 20, False)
        self.assertIn('--sync=dsync', large)
        self.assertIn('--size=%d' % (4 << 20), large)
        self.assertIn('--offset_increment=%d' % (4 << 20), large)
        mixed = measure.fio_args(target, 'mixed', 4, 16, 1 << 20, True,
                                 small_iops=100.0)
        self.assertEqual(2, mixed.count('--numjobs=15') +
                         mixed.count('--numjobs=1'))
        self.assertIn('--rate_iops=3', mixed)

    def test_mixed_writers(self):
        # fast large writes: depth - 1 is enough
        self.assertEqual(15, measure.mixed_writers(16, 500.0, 500.0))
        # a bucket of 100 IOPS and 4 MiB/s, 1 MiB writes: the cycle is
        # 0.5 s (0.25 s for the large write, as long for 25 small ones)
        self.assertEqual(50, measure.mixed_writers(16, 50.0, 4.0))
        # the disk of 20 ms and 16 MiB/s at depth 4
        self.assertEqual(9, measure.mixed_writers(4, 24.7, 12.12))
        self.assertEqual(measure.MAX_MIX_WRITERS,
                         measure.mixed_writers(16, 1000.0, 0.1))

    def test_failing_fio_is_an_error(self):
        target = measure.Target('/x', 64 << 20)
        proc = mock.Mock(returncode=1, stdout='', stderr=(
            'fio: looks like your file system does not support direct=1\n'
            'fio: destination does not support O_DIRECT\n'))
        with mock.patch('subprocess.run', return_value=proc) as run:
            err = self.assertRaises(exception.MeasureFailed, measure.run_fio,
                                    target, fio='/usr/bin/fio')
        self.assertIn('O_DIRECT', err.message)
        self.assertEqual(1, run.call_count)


class Device:
    """A simulated device: writes one at a time on a virtual clock.

    Each write takes ``1 / iops + size / bytes_sec`` (seek + transfer).
    """

    def __init__(self, iops, bytes_sec, fail_after=None):
        self.iops, self.bytes_sec, self.fail_after = iops, bytes_sec, \
            fail_after
        self.now, self.writes = 1000.0, 0
        self.lock = threading.Lock()

    def clock(self):
        with self.lock:
            return self.now

    def pwrite(self, fd, buf, offset):
        size = len(buf)
        assert offset % 4096 == 0, offset
        with self.lock:
            self.writes += 1
            if self.fail_after is not None and \
                    self.writes > self.fail_after:
                raise OSError(errno.EIO, 'Input/output error')
            self.now += 1.0 / self.iops + size / self.bytes_sec
        return size


class TestGenerator(test_base.TestCase):

    def run_phase(self, device, streams, seconds=2.0):
        self.useFixture(fixtures.MonkeyPatch('os.pwrite', device.pwrite))
        return measure._run_streams(-1, 64 << 20, 'p', streams, seconds,
                                    clock=device.clock)

    def test_small_and_large_phases_measure_the_device(self):
        device = Device(1000.0, 100e6)
        small = self.run_phase(device, [measure._Stream(4096, 8, False)])
        expect = 1.0 / (1e-3 + 4096 / 100e6)
        self.assertAlmostEqual(expect, small.iops, delta=expect * 0.02)
        self.assertEqual(small.ops * 4096, small.nbytes)
        self.assertLessEqual(small.seconds, 2.0)
        large = self.run_phase(device, [measure._Stream(1 << 20, 4, True)])
        expect = (1 << 20) / (1e-3 + (1 << 20) / 100e6)
        self.assertAlmostEqual(expect, large.bytes_sec, delta=expect * 0.02)

    def test_a_failed_write_fails_the_phase(self):
        device = Device(1000.0, 100e6, fail_after=5)
        err = self.assertRaises(exception.MeasureFailed, self.run_phase,
                                device, [measure._Stream(4096, 4, False)])
        self.assertIn('in the p phase', err.message)
        self.assertIn('Input/output error', err.message)


class TestTarget(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def test_new_file_created_then_removed(self):
        path = os.path.join(self.dir, 'probe')
        target = measure.prepare(path, size=32 << 20)
        self.assertEqual((32 << 20, True), (os.path.getsize(path),
                                            target.created))
        target.cleanup()
        self.assertFalse(os.path.exists(path))

    def test_existing_data_refused_without_consent(self):
        path = os.path.join(self.dir, 'data')
        with open(path, 'wb') as f:
            f.write(b'precious')
            f.truncate(32 << 20)
        err = self.assertRaises(exception.MeasureFailed, measure.prepare,
                                path)
        self.assertIn('--yes-destroy', err.message)
        target = measure.prepare(path, destroy=True)
        self.assertEqual((32 << 20, False), (target.size, target.created))
        target.cleanup()
        self.assertTrue(os.path.exists(path))

    def test_bad_targets(self):
        small = os.path.join(self.dir, 'small')
        with open(small, 'wb') as f:
            f.write(b'x' * 8192)
        cases = [
            (self.dir, 'neither a regular file'),
            (os.path.join(self.dir, 'no', 'such', 'dir'), 'cannot create'),
            (small, 'fewer than depth x large size'),
        ]
        for path, why in cases:
            err = self.assertRaises(exception.MeasureFailed, measure.prepare,
                                    path, destroy=True)
            self.assertIn(why, err.message)
        err = self.assertRaises(exception.MeasureFailed, measure.prepare,
                                os.path.join(self.dir, 'new'), size=1 << 20)
        self.assertIn('--size', err.message)
        self.assertFalse(os.path.exists(os.path.join(self.dir, 'new')))

    def test_block_device_refused_without_consent(self):
        with mock.patch('os.stat', return_value=mock.Mock(
                st_mode=0o60660, st_size=0)):
            err = self.assertRaises(exception.MeasureFailed,
                                    measure.prepare, '/dev/sdz')
        self.assertIn('block device', err.message)

    def test_o_direct_refused(self):
        path = os.path.join(self.dir, 'f')
        open(path, 'wb').close()
        with mock.patch('os.open', side_effect=OSError(
                errno.EINVAL, 'Invalid argument')):
            err = self.assertRaises(exception.MeasureFailed,
                                    measure.open_target, path, True)
        self.assertIn('--no-direct', err.message)


def profile_of(domain):
    return domain.iops_4k, domain.bytes_sec, domain.form


class TestCalibrateMeasure(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.path = os.path.join(self.dir, 'probe')
        self.db = fakes.real_db(self)
        self.db.domain_create('local:h1', 'local')
        self.domains = self.db.domain_list()
        self.updates = fakes.spy(self, self.db, 'domain_update')
        self.creates = fakes.spy(self, self.db, 'domain_create')
        self.useFixture(fixtures.MockPatch(
            'iotguard.cmd.manage.db_api.Connection', return_value=self.db))
        self.useFixture(fixtures.MockPatch(
            'iotguard.service.prepare_service', return_value=self.conf))

    def manage(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = manage.main(list(argv))
            except SystemExit as exc:
                code = exc.code
        return code, out.getvalue(), err.getvalue()

    def fake_measure(self, res=None, error=None):
        def run(target, engine, **kw):
            self.seen = (target, engine, kw)
            self.existed = os.path.exists(target.path)
            if error:
                raise error
            return res
        return self.useFixture(fixtures.MockPatch(
            'iotguard.manage.measure.measure', side_effect=run)).mock

    def test_usage(self):
        for argv in (['--measure', self.path, '--iops-4k', '100'],
                     ['--measure', self.path, '--form', 'max'],
                     ['--iops-4k', '100'],
                     ['--measure', self.path, '--depth', '1'],
                     ['--measure', self.path, '--seconds', '0'],
                     ['--measure', self.path, '--size', '1x'],
                     ['--measure', self.path, '--engine', 'dd']):
            code, _, err = self.manage('domain', 'calibrate', 'local:h1',
                                       *argv)
            self.assertEqual(2, code, argv)
            self.assertIn('usage:', err)
        self.assertEqual(self.domains, self.db.domain_list())

    def test_measured_profile_stored_as_the_manual_one(self):
        self.fake_measure(result(53.8, 50 * 4096 + 3.8 * (1 << 20)))
        code, out, err = self.manage(
            'domain', 'calibrate', 'local:h1', '--measure', self.path,
            '--seconds', '3', '--size', '64M', '--engine', 'builtin')
        self.assertEqual(0, code, err)
        self.updates.assert_called_once_with('local:h1', {
            'iops_4k': 100.0, 'bytes_sec': 4 << 20, 'form': 'max'})
        self.creates.assert_not_called()
        self.assertEqual((100.0, 4 << 20, 'max'),
                         profile_of(self.db.domain_get('local:h1')))
        target, engine, kw = self.seen
        self.assertEqual(('builtin', 3.0, 16, True),
                         (engine, kw['seconds'], kw['depth'], kw['direct']))
        self.assertTrue(self.existed)
        self.assertFalse(os.path.exists(self.path))
        self.assertIn('residual additive', out)
        self.assertIn('form: max', out)
        self.assertIn('Domain local:h1: iops_4k=100 bytes_sec=4.1943e+06 '
                      'form=max', out)

    def test_create(self):
        self.fake_measure(result(52.0, 50 * 4096 + 2 * (1 << 20)))
        code, out, err = self.manage(
            'domain', 'calibrate', 'cinder:new', '--measure', self.path,
            '--size', '64M', '--create', '--kind', 'cinder')
        self.assertEqual(0, code, err)
        # one write: the profile and its form together
        self.creates.assert_called_once_with(
            'cinder:new', 'cinder', iops_4k=100.0, bytes_sec=4 << 20,
            form='additive')
        created = self.db.domain_get('cinder:new')
        self.assertEqual('cinder', created.kind)
        self.assertEqual((100.0, 4 << 20, 'additive'), profile_of(created))

    def test_failures_write_nothing(self):
        precious = os.path.join(self.dir, 'precious')
        with open(precious, 'wb') as f:
            f.write(b'x' * 16)
            f.truncate(64 << 20)
        failing = exception.MeasureFailed(reason='a write failed in the '
                                          'small phase: Input/output error')
        cases = [
            # An unknown domain: refused before anything is written.
            (['local:other', '--measure', self.path], None,
             'domain local:other'),
            (['local:h1', '--measure', precious], None, '--yes-destroy'),
            (['local:h1', '--measure', os.path.join(self.dir, 'a', 'b')],
             None, 'cannot create'),
            (['local:h1', '--measure', self.path, '--size', '64M'],
             failing, 'Input/output error'),
            (['local:h1', '--measure', self.path, '--size', '64M'],
             result(0, 0), 'no operation completed in the mixed phase'),
        ]
        for argv, outcome, why in cases:
            if isinstance(outcome, Exception):
                self.fake_measure(error=outcome)
            else:
                self.fake_measure(res=outcome)
            code, _, err = self.manage('domain', 'calibrate', *argv)
            self.assertEqual(1, code, argv)
            self.assertIn(why, err)
            self.assertEqual(self.domains, self.db.domain_list(), argv)
            self.assertFalse(os.path.exists(self.path), argv)
        with open(precious, 'rb') as f:
            self.assertEqual(b'x' * 16, f.read(16))
