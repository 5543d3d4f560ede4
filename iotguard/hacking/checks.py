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

"""iotguard's local flake8 checks (I3xx).

I301: no oslo, SQLAlchemy, libvirt or openstack imports in the pure core
      (iotguard/policy, iotguard/engine, iotguard/sim and the records of
      iotguard/wire: caps.py, rates.py, batch.py).
I302: options are declared only in iotguard/conf/.
I303: no eventlet.
I304: no clock reads in iotguard/policy/ and iotguard/engine/.
I305: DB sessions (enginefacade, sqlalchemy.orm) stay in iotguard/db/.
I306: the services keep to their side: the agent imports nothing from the
      controller, the API or the database; the controller nothing from the
      agent or the API; the core (policy, engine, sim, wire) nothing from
      any service (agent, controller, api, db). What the agent and the
      controller share is the contract, iotguard.wire.
I307: only the tests import the benchmarks (``benchmarks/`` beside the
      package, not installed): nothing installed depends on them.
"""

from collections.abc import Iterator
import re

from hacking import core

_PURE = re.compile(
    r'(^|/)iotguard/(policy/|engine/|sim/|wire/(caps|rates|batch)\.py$)')
_IMPURE_IMPORT = re.compile(
    r'^\s*(import|from)\s+(oslo_\w+|sqlalchemy|libvirt|openstack)\b')
_OPT = re.compile(r'\bcfg\.\w*Opt\(')
_EVENTLET = re.compile(r'^\s*(import|from)\s+eventlet\b')
_DB_SESSION = re.compile(
    r'^\s*(import|from)\s+(oslo_db\.sqlalchemy(\.enginefacade)?|'
    r'sqlalchemy\.orm)\b.*|.*\benginefacade\b')
#: (files, the iotguard packages they must not import, who they are).
_BOUNDARIES = (
    (re.compile(r'(^|/)iotguard/agent/'),
     frozenset(('controller', 'api', 'db')), 'the agent'),
    (re.compile(r'(^|/)iotguard/controller/'),
     frozenset(('agent', 'api')), 'the controller'),
    (re.compile(r'(^|/)iotguard/(policy|engine|sim|wire)/'),
     frozenset(('agent', 'controller', 'api', 'db')), 'the core'),
)
_FROM_PACKAGE = re.compile(r'^\s*(from|import)\s+iotguard\.(\w+)')
_FROM_TOP = re.compile(r'^\s*from\s+iotguard\s+import\s+\(?([^)]*)')
_PACKAGE = re.compile(r'(^|/)iotguard/')
_BENCH_USERS = re.compile(r'(^|/)iotguard/tests/')
_BENCH_IMPORT = re.compile(r'^\s*(import|from)\s+benchmarks\b')
#: Where ``now`` is an argument, never read (I304).
_NO_CLOCK = re.compile(r'(^|/)iotguard/(policy|engine)/')
_CLOCK = re.compile(r'\b(time\.time|time\.monotonic|utcnow|datetime\.now)\(')
_Problems = Iterator[tuple[int, str]]


@core.flake8ext
def check_pure_imports(logical_line: str, filename: str) -> _Problems:
    if _PURE.search(filename) and _IMPURE_IMPORT.match(logical_line):
        yield 0, 'I301: no oslo/sqlalchemy/libvirt/openstack import here'


@core.flake8ext
def check_opts_in_conf(logical_line: str, filename: str) -> _Problems:
    if ('iotguard/conf/' not in filename and '/tests/' not in filename
            and _OPT.search(logical_line)):
        yield 0, 'I302: declare options in iotguard/conf/'


@core.flake8ext
def check_no_eventlet(logical_line: str) -> _Problems:
    if _EVENTLET.match(logical_line):
        yield 0, 'I303: do not use eventlet'


@core.flake8ext
def check_no_clock_in_policy(logical_line: str, filename: str) -> _Problems:
    if _NO_CLOCK.search(filename) and _CLOCK.search(logical_line):
        yield 0, 'I304: policies and the engine take now as an argument'


@core.flake8ext
def check_db_session_in_db(logical_line: str, filename: str) -> _Problems:
    if ('iotguard/db/' not in filename and '/tests/' not in filename
            and _DB_SESSION.match(logical_line)):
        yield 0, 'I305: DB sessions stay in iotguard/db/'


def _imported_packages(logical_line: str) -> set[str]:
    """The iotguard subpackages (or modules) one import line names."""
    match = _FROM_PACKAGE.match(logical_line)
    if match:
        return {match.group(2)}
    match = _FROM_TOP.match(logical_line)
    if match:
        return {name.split()[0] for name in match.group(1).split(',')
                if name.strip()}
    return set()


@core.flake8ext
def check_service_boundaries(logical_line: str, filename: str) -> _Problems:
    for files, forbidden, who in _BOUNDARIES:
        if files.search(filename):
            for name in sorted(_imported_packages(logical_line) & forbidden):
                yield 0, ('I306: %s must not import iotguard.%s (share '
                          'iotguard.wire instead)' % (who, name))


@core.flake8ext
def check_bench_not_imported(logical_line: str, filename: str) -> _Problems:
    if (_PACKAGE.search(filename) and not _BENCH_USERS.search(filename) and
            _BENCH_IMPORT.match(logical_line)):
        yield 0, ('I307: the benchmarks are a measuring harness, not '
                  'installed; iotguard must not import them')
