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

"""A domain's capacity profile, measured on a test file or volume.

What ``iotguard-manage domain calibrate NAME --measure PATH`` runs: three
phases of writes on ``PATH``, each ``seconds`` long with ``depth``
operations in flight:

``small``
    random 4 KiB writes: the profile's ``iops_4k``;
``large``
    sequential writes of ``large_size`` bytes (1 MiB), one stripe of the
    target per writer: its ``bytes_sec``;
``mixed``
    both at once: random 4 KiB writes paced together at :data:`MIX_SHARE`
    of the measured ``iops_4k`` (:func:`mixed_writers` writers) beside
    one unpaced writer of large sequential writes. Where that point lands
    tells the form (:func:`residuals`): a disk that seeks and transfers
    serves the large writes only in the time the small ones leave it
    (``iops / iops_4k + bytes_sec / bytes_sec_capacity`` is 1: additive),
    a token bucket serves both until one of its two buckets is empty
    (``max(iops / iops_4k, bytes_sec / bytes_sec_capacity)`` is 1: max).
    A point that does not saturate the storage reads below 1 in both
    forms, where the additive one (never below the max one) is the
    closer: the choice falls back to the form that charges more.

The operations are counted as the storage sees them from here (a 1 MiB
write is one operation, whatever the layers below split it into), after
the first :data:`RAMP_SHARE` of a phase (a token bucket's burst, queues
filling up: fio's ``ramp_time``).

Two engines run the phases: fio (:func:`run_fio`, when it is installed,
``psync`` writers as threads) and a built-in generator
(:func:`run_builtin`: Python threads doing ``os.pwrite`` from page-aligned
``mmap`` buffers of random bytes). Both open the target with ``O_DIRECT``
(or, with ``direct=False``, ``O_DSYNC``: through the page cache, each
write on the storage before it returns).

Errors are :class:`iotguard.exception.MeasureFailed`, raised before
anything is stored. Nothing is printed or logged here: the caller reports
the figures (``progress`` and :func:`report_lines`).
"""

import collections.abc
import dataclasses
import errno
import json
import math
import mmap
import os
import random
import re
import shutil
import stat
import subprocess
import threading
import time
from typing import Any

from iotguard import exception
from iotguard.policy import admission
from iotguard.policy import base
from iotguard.policy import costmodel

SMALL_SIZE = 4096
LARGE_SIZE = 1 << 20
DEPTH = 16
SECONDS = 10.0
#: Size of the file created when the path does not exist.
CREATE_SIZE = 1 << 30
#: The 4 KiB writes of the mixed phase, together, at this share of the
#: measured ``iops_4k``: half the storage's time on an additive one.
MIX_SHARE = 0.5
#: The share of each phase not counted. The built-in generator's rate is
#: the writes completed after the first one past it to the last one within
#: the phase, over that time: few large writes are not rounded to whole.
RAMP_SHARE = 0.25
#: A paced writer that falls behind catches up at most this long.
PACE_SLACK_S = 0.1
#: The mixed phase's paced 4 KiB writers: at most this many.
MAX_MIX_WRITERS = 256
#: The alignment O_DIRECT asks for of offsets, sizes and buffers.
ALIGN = 4096
ENGINES = ('auto', 'fio', 'builtin')
PHASES = ('small', 'large', 'mixed')

_SIZE = re.compile(r'^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$', re.I)


def parse_size(text: str) -> int:
    """Bytes from ``4096``, ``4k``, ``1M``, ``1GiB`` (binary units)."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError('not a size: %r (bytes, or with K, M, G, T)' % text)
    scale = 1024 ** ' kmgt'.index(match.group(2).lower() or ' ')
    return int(float(match.group(1)) * scale)


def _failed(reason: str) -> exception.MeasureFailed:
    return exception.MeasureFailed(reason=reason)


@dataclasses.dataclass(frozen=True)
class Phase:
    name: str
    ops: int
    nbytes: int
    seconds: float

    @property
    def iops(self) -> float:
        return self.ops / self.seconds if self.seconds > 0 else 0.0

    @property
    def bytes_sec(self) -> float:
        return self.nbytes / self.seconds if self.seconds > 0 else 0.0


Clock = collections.abc.Callable[[], float]
Progress = collections.abc.Callable[[Phase], object] | None


def residuals(iops: float, bytes_sec: float,
              profile: base.Profile) -> dict[str, float]:
    """How far a saturated point is from each form's ``load = 1``.

    ``profile`` gives ``iops_4k`` and ``bytes_sec`` (its form is
    ignored); the point is the operations (of any size) and bytes per
    second the storage served. Positive: above that form's capacity.
    """
    return {form: costmodel.domain_load(
        iops, bytes_sec, dataclasses.replace(profile, form=form)) - 1.0
        for form in base.FORMS}


def choose_form(residual: collections.abc.Mapping[str, float]) -> str:
    """The form whose residual is the smallest; additive on a tie."""
    return min(base.FORMS, key=lambda form: (abs(residual[form]),
                                             form != base.ADDITIVE))


@dataclasses.dataclass(frozen=True)
class Result:
    """The three phases of a measurement and the profile they give."""

    engine: str
    direct: bool
    small: Phase
    large: Phase
    mixed: Phase

    def _base(self) -> base.Profile:
        for phase in (self.small, self.large, self.mixed):
            if phase.ops <= 0 or phase.seconds <= 0:
                raise _failed('no operation completed in the %s phase'
                              % phase.name)
        low_iops = admission.PROFILE_RANGES['iops_4k'][0]
        low_bytes = admission.PROFILE_RANGES['bytes_sec'][0]
        if self.small.iops < low_iops or self.large.bytes_sec < low_bytes:
            raise _failed('measured iops_4k=%g and bytes_sec=%g, below what '
                          'a profile can hold (%g, %g)' % (
                              self.small.iops, self.large.bytes_sec,
                              low_iops, low_bytes))
        return base.Profile(iops_4k=self.small.iops,
                            bytes_sec=self.large.bytes_sec)

    def check(self) -> None:
        """MeasureFailed unless every phase gave a usable figure."""
        if not all(math.isfinite(v) for v in self.residuals.values()):
            raise _failed('the mixed phase gave no usable point')

    @property
    def residuals(self) -> dict[str, float]:
        return residuals(self.mixed.iops, self.mixed.bytes_sec,
                         self._base())

    @property
    def profile(self) -> base.Profile:
        """The measured profile (MeasureFailed if a phase did nothing)."""
        return dataclasses.replace(self._base(),
                                   form=choose_form(self.residuals))


def _human(value: float, unit: str) -> str:
    for scale, prefix in ((1 << 30, 'Gi'), (1 << 20, 'Mi'), (1 << 10, 'Ki')):
        if value >= scale:
            return '%.3g %s%s' % (value / scale, prefix, unit)
    return '%.3g %s' % (value, unit)


def phase_line(phase: Phase) -> str:
    """One phase's figures, for a person."""
    return ('%-5s %10.1f IOPS %14.0f bytes/s (%s/s): %d operations, %s in '
            '%.2f s' % (phase.name, phase.iops, phase.bytes_sec,
                        _human(phase.bytes_sec, 'B'), phase.ops,
                        _human(phase.nbytes, 'B'), phase.seconds))


def report_lines(result: Result) -> list[str]:
    """The mixed point against both forms and the form chosen."""
    profile = result.profile
    lines = ['mixed point: %.1f IOPS and %.0f bytes/s against iops_4k=%.1f, '
             'bytes_sec=%.0f' % (result.mixed.iops, result.mixed.bytes_sec,
                                 profile.iops_4k, profile.bytes_sec)]
    for form, value in result.residuals.items():
        rule = ('iops/iops_4k + bytes/bytes_sec' if form == base.ADDITIVE
                else 'max(iops/iops_4k, bytes/bytes_sec)')
        lines.append('residual %-8s %+.3f (%s - 1)' % (form, value, rule))
    lines.append('form: %s' % profile.form)
    return lines


# -- the target -----------------------------------------------------------

@dataclasses.dataclass
class Target:
    """The file or device written, its size, and whether it was created."""

    path: str
    size: int
    created: bool = False
    block: bool = False

    def cleanup(self) -> None:
        if self.created:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass


def _device_size(path: str) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)


def prepare(path: str, size: int = CREATE_SIZE, destroy: bool = False,
            depth: int = DEPTH, large_size: int = LARGE_SIZE) -> Target:
    """Check (or create) the target; a Target, or MeasureFailed.

    The writes destroy what the target holds: a block device or a
    non-empty file is refused unless ``destroy``. A path that does not
    exist is created (sparse, ``size`` bytes), for :meth:`Target.cleanup`
    to remove.
    """
    check_sizes(depth, large_size)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise _failed('cannot read %s: %s' % (path, exc.strerror))
    if st is None:
        if size % ALIGN or size < depth * large_size:
            raise _failed('--size must be a multiple of %d bytes and at '
                          'least depth x large size (%d bytes)'
                          % (ALIGN, depth * large_size))
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as exc:
            raise _failed('cannot create %s: %s' % (path, exc.strerror))
        try:
            os.ftruncate(fd, size)
        except OSError as exc:
            os.close(fd)
            os.unlink(path)
            raise _failed('cannot size %s to %d bytes: %s'
                          % (path, size, exc.strerror))
        os.close(fd)
        return Target(path, size, created=True)
    if stat.S_ISBLK(st.st_mode):
        if not destroy:
            raise _failed('%s is a block device: the measurement writes '
                          'over all of it; give --yes-destroy to accept'
                          % path)
        try:
            found = _device_size(path)
        except OSError as exc:
            raise _failed('cannot open %s: %s' % (path, exc.strerror))
        target = Target(path, found, block=True)
    elif stat.S_ISREG(st.st_mode):
        if st.st_size and not destroy:
            raise _failed('%s exists and holds %d bytes: the measurement '
                          'writes over them; give --yes-destroy to accept, '
                          'or name a file that does not exist'
                          % (path, st.st_size))
        target = Target(path, st.st_size)
    else:
        raise _failed('%s is neither a regular file nor a block device'
                      % path)
    if not os.access(path, os.R_OK | os.W_OK):
        raise _failed('cannot write %s: permission denied' % path)
    usable = target.size - target.size % ALIGN
    if usable < depth * large_size:
        raise _failed('%s has %d bytes, fewer than depth x large size (%d)'
                      % (path, target.size, depth * large_size))
    target.size = usable
    return target


def check_sizes(depth: int, large_size: int) -> None:
    if depth < 2:
        raise _failed('--depth must be at least 2 (the mixed phase runs a '
                      'large writer beside small ones)')
    if large_size < 2 * SMALL_SIZE or large_size % ALIGN:
        raise _failed('--large-size must be a multiple of %d bytes and at '
                      'least %d' % (ALIGN, 2 * SMALL_SIZE))


def mixed_writers(depth: int, pace: float, large_iops: float) -> int:
    """How many writers share the mixed phase's paced 4 KiB writes.

    ``depth - 1``, or more where the storage serves one write at a time (a
    disk, QEMU's FUSE export): there a paced write waits behind the large
    write in service and the small ones queued before it, a cycle of
    ``1 / large_iops`` stretched by the small writes' share. A writer
    blocked that long loses the slots it missed after
    :data:`PACE_SLACK_S`, and with too few writers the phase falls short
    of its pace (a 4 MiB/s bucket over FUSE, 15 writers: 40 of 50 writes a
    second). Twice the writes paced through a cycle keeps it, at most
    :data:`MAX_MIX_WRITERS`; paced together, more never write more. The
    built-in generator's only: see :func:`fio_args`.
    """
    cycle = 1.0 / large_iops / (1.0 - MIX_SHARE)
    return max(depth - 1, min(MAX_MIX_WRITERS,
                              math.ceil(2.0 * pace * cycle)))


# -- the built-in generator ------------------------------------------------

def open_target(path: str, direct: bool) -> int:
    """A descriptor for writing ``path`` bypassing (or syncing) the cache."""
    flags = os.O_RDWR | (os.O_DIRECT if direct else os.O_DSYNC)
    try:
        return os.open(path, flags)
    except OSError as exc:
        if direct and exc.errno == errno.EINVAL:
            raise _failed('%s does not take O_DIRECT (its file system '
                          'refused it); --no-direct measures with O_DSYNC '
                          'writes through the page cache instead' % path)
        raise _failed('cannot open %s: %s' % (path, exc.strerror))


class _Pacer:
    """Issue times ``1 / rate`` apart, shared by a stream's writers."""

    def __init__(self, rate: float, start: float) -> None:
        self.interval, self.next = 1.0 / rate, start
        self.lock = threading.Lock()

    def slot(self, now: float) -> float:
        with self.lock:
            issue = max(self.next, now - PACE_SLACK_S)
            self.next = issue + self.interval
            return issue


@dataclasses.dataclass
class _Stream:
    """Writers of one size: random (4 KiB) or sequential (striped)."""

    size: int
    writers: int
    sequential: bool
    rate: float | None = None


class _Tally:
    """Writes completed after the ramp, counted from the first of them."""

    def __init__(self, start: float, ramp: float, deadline: float) -> None:
        self.ramp_end, self.deadline = start + ramp, deadline
        self.ops = self.nbytes = 0
        self.first: float | None = None
        self.last = 0.0
        self.error: BaseException | None = None
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def done(self, nbytes: int, when: float) -> None:
        with self.lock:
            if when < self.ramp_end or when > self.deadline:
                return
            if self.first is None:
                self.first = self.last = when
            else:
                self.ops += 1
                self.nbytes += nbytes
                self.last = max(self.last, when)

    def fail(self, exc: BaseException) -> None:
        with self.lock:
            if self.error is None:
                self.error = exc
        self.stop.set()


def _writer(fd: int, span: int, stream: _Stream, index: int, tally: _Tally,
            pacer: _Pacer | None, clock: Clock) -> None:
    buf = mmap.mmap(-1, stream.size)
    try:
        buf.write(os.urandom(stream.size))
        rng = random.Random(index)
        if stream.sequential:
            stripe = span // stream.writers
            stripe -= stripe % stream.size
            first = index * stripe
            offsets = ((first + (n * stream.size) % stripe)
                       for n in range(1 << 62))
        else:
            blocks = span // stream.size
            offsets = (rng.randrange(blocks) * stream.size
                       for _ in range(1 << 62))
        for offset in offsets:
            now = clock()
            if pacer is not None:
                issue = pacer.slot(now)
                if issue >= tally.deadline:
                    return
                if issue > now:
                    if tally.stop.wait(issue - now):
                        return
            if tally.stop.is_set() or clock() >= tally.deadline:
                return
            written = os.pwrite(fd, buf, offset)
            if written <= 0:
                raise OSError(errno.EIO, 'wrote nothing at offset %d'
                              % offset)
            tally.done(written, clock())
    except OSError as exc:
        tally.fail(exc)
    finally:
        buf.close()


def _run_streams(fd: int, span: int, name: str,
                 streams: list[_Stream], seconds: float,
                 clock: Clock = time.monotonic) -> Phase:
    start = clock()
    tally = _Tally(start, RAMP_SHARE * seconds, start + seconds)
    threads: list[threading.Thread] = []
    for stream in streams:
        pacer = _Pacer(stream.rate, start) if stream.rate else None
        for index in range(stream.writers):
            threads.append(threading.Thread(
                target=_writer, name='measure-%s-%d' % (name, len(threads)),
                args=(fd, span, stream, index, tally, pacer, clock),
                daemon=True))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if tally.error is not None:
        error = tally.error
        reason = getattr(error, 'strerror', None) or str(error)
        if isinstance(error, OSError) and error.errno == errno.EINVAL:
            reason += (' (the storage refused an aligned O_DIRECT write; '
                       'try --no-direct)')
        raise _failed('a write failed in the %s phase: %s' % (name, reason))
    return Phase(name, tally.ops, tally.nbytes,
                 tally.last - tally.first if tally.first is not None
                 else 0.0)


def run_builtin(target: Target, seconds: float = SECONDS, depth: int = DEPTH,
                large_size: int = LARGE_SIZE, direct: bool = True,
                progress: Progress = None) -> Result:
    phases: dict[str, Phase] = {}

    def run(name: str, *streams: _Stream) -> Phase:
        phases[name] = _run_streams(fd, target.size, name, list(streams),
                                    seconds)
        if progress:
            progress(phases[name])
        return phases[name]

    fd = open_target(target.path, direct)
    try:
        small = run('small', _Stream(SMALL_SIZE, depth, False))
        large = run('large', _Stream(large_size, depth, True))
        pace = MIX_SHARE * small.iops
        if not (pace > 0 and large.iops > 0):
            raise _failed('no operation completed in the %s phase'
                          % ('small' if not pace > 0 else 'large'))
        run('mixed', _Stream(SMALL_SIZE, mixed_writers(depth, pace,
                                                       large.iops),
                             False, pace), _Stream(large_size, 1, True))
    finally:
        os.close(fd)
    return Result('builtin', direct, **phases)


# -- fio ------------------------------------------------------------------

def fio_path() -> str | None:
    return shutil.which('fio')


def fio_args(target: Target, name: str, seconds: float, depth: int,
             large_size: int, direct: bool,
             small_iops: float | None = None) -> list[str]:
    """fio's command line for one phase (JSON on stdout).

    The mixed phase's paced 4 KiB writes stay with ``depth - 1`` jobs
    (not :func:`mixed_writers`): fio paces each job on its own, and more
    jobs at a lower rate issue in bursts that hold up the large writes.
    """
    common = ['--output-format=json', '--filename=%s' % target.path,
              '--ioengine=psync', '--thread', '--time_based',
              '--ramp_time=%gs' % (RAMP_SHARE * seconds),
              '--runtime=%gs' % ((1 - RAMP_SHARE) * seconds),
              '--randrepeat=0', '--fallocate=none', '--allow_file_create=0',
              '--direct=%d' % direct, '--sync=%s' % ('none' if direct
                                                     else 'dsync'),
              '--size=%d' % target.size]

    def small(writers: int, *extra: str) -> list[str]:
        return ['--name=small', '--rw=randwrite', '--bs=%d' % SMALL_SIZE,
                '--numjobs=%d' % writers, *extra]

    def large(writers: int) -> list[str]:
        stripe = target.size // writers
        stripe -= stripe % large_size
        return ['--name=large', '--rw=write', '--bs=%d' % large_size,
                '--numjobs=%d' % writers, '--size=%d' % stripe,
                '--offset_increment=%d' % stripe]

    if name == 'small':
        return common + small(depth)
    if name == 'large':
        return common + large(depth)
    assert small_iops
    per_writer = max(1, int(round(MIX_SHARE * small_iops / (depth - 1))))
    return (common + small(depth - 1, '--rate_iops=%d' % per_writer)
            + large(1))


def parse_fio(text: str, name: str) -> Phase:
    """One phase from fio's JSON output (all its jobs' writes together).

    fio may print notices before the JSON document; they are skipped.
    """
    start = text.find('{')
    try:
        report = json.loads(text[start:]) if start >= 0 else None
    except ValueError as exc:
        raise _failed('cannot read fio output: %s' % exc)
    if not isinstance(report, dict) or not report.get('jobs'):
        raise _failed('fio output has no jobs')
    ops = nbytes = 0
    runtime_ms = 0.0
    for job in report['jobs']:
        if job.get('error'):
            raise _failed('fio job %s failed: error %s' % (
                job.get('jobname'), job['error']))
        write = job.get('write') or {}
        ops += int(write.get('total_ios', 0))
        nbytes += int(write.get('io_bytes', 0))
        runtime_ms = max(runtime_ms, float(write.get('runtime', 0)))
    return Phase(name, ops, nbytes, runtime_ms / 1000.0)


def run_fio(target: Target, seconds: float = SECONDS, depth: int = DEPTH,
            large_size: int = LARGE_SIZE, direct: bool = True,
            progress: Progress = None, fio: str | None = None) -> Result:
    fio = fio or fio_path()
    if not fio:
        raise _failed('fio is not installed')
    phases: dict[str, Phase] = {}
    for name in PHASES:
        small_iops = phases['small'].iops if name == 'mixed' else None
        if name == 'mixed' and not small_iops:
            raise _failed('no operation completed in the small phase')
        argv = [fio] + fio_args(target, name, seconds, depth, large_size,
                                direct, small_iops)
        try:
            proc = subprocess.run(argv, capture_output=True, text=True,
                                  timeout=seconds * 3 + 60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise _failed('fio did not run: %s' % exc)
        if proc.returncode:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise _failed('fio failed in the %s phase (exit %d): %s' % (
                name, proc.returncode, ' / '.join(tail)))
        phases[name] = parse_fio(proc.stdout, name)
        if progress:
            progress(phases[name])
    return Result('fio', direct, **phases)


def measure(target: Target, engine: str = 'auto', **kw: Any) -> Result:
    """Run the phases on a prepared target with ``engine``; a Result.

    ``auto`` is fio when it is installed, the built-in generator
    otherwise. ``kw``: seconds, depth, large_size, direct, progress.
    """
    if engine not in ENGINES:
        raise _failed('unknown engine %r' % engine)
    if engine == 'fio' or (engine == 'auto' and fio_path()):
        result = run_fio(target, **kw)
    else:
        result = run_builtin(target, **kw)
    result.check()
    return result
