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

"""Schemathesis against the live API, from the document it serves.

:func:`fuzz` loads ``/openapi.json`` from the application and, for every
operation, draws requests that fit its schemas (positive) and requests
that break them (negative), half of them aimed at resources that exist,
sent by an admin, members and a reader of two projects, and checks each
answer: below 500; a status code and a content type the document names;
a schema-breaking request refused with a 4xx; and a refused request
writes nothing (every table read after each call, compared with the
previous call's reading).

The long run, whose figures are in the API reference page of the docs::

    python -m iotguard.tests.functional.api.schemafuzz \\
        --backend postgresql --examples 650
"""

import argparse
import collections
import dataclasses
import os
import sys
import tempfile
import time

import hypothesis
from hypothesis import strategies as st
import schemathesis
from schemathesis import checks as st_checks
from schemathesis.generation import GenerationMode
import webob

from iotguard.api import app
from iotguard.tests.functional.api import base

#: Who sends the requests (noauth headers).
CALLERS = (base.ADMIN, base.MEMBER_A, base.READER_A, base.MEMBER_B)
CHECKS = ('not_a_server_error', 'status_code_conformance',
          'content_type_conformance', 'negative_data_rejection')


@dataclasses.dataclass
class Result:
    """What one fuzz run sent and saw."""

    requests: int = 0
    statuses: collections.Counter = dataclasses.field(
        default_factory=collections.Counter)
    #: ``(method path, status, what failed)``, the first few.
    failures: list = dataclasses.field(default_factory=list)
    failed: int = 0
    seconds: float = 0.0

    @property
    def server_errors(self):
        return sum(n for code, n in self.statuses.items() if code >= 500)

    def fail(self, case, status, what):
        self.failed += 1
        if len(self.failures) < 20:
            self.failures.append(('%s %s' % (case.method, case.formatted_path),
                                  status, str(what)[:2000]))


def _headers(who):
    return {'X-User-Id': 'user-%s' % who['project'],
            'X-Project-Id': who['project'], 'X-Roles': who['roles']}


def load(application):
    """The document ``application`` serves, for schemathesis to call it.

    Without its Keystone security requirement: the application under
    test runs noauth (the callers' identity is in the headers), so a
    missing token is no fault of the request here.
    """
    response = webob.Request.blank('/openapi.json').get_response(
        application)
    assert response.status_code == 200, response.status
    doc = response.json
    doc.pop('security')
    schema = schemathesis.openapi.from_dict(doc)
    schema.app = application
    return schema


def _strategies(operation, mode, existing):
    """Cases for ``operation``: path parameters drawn, or ones that exist."""
    drawn = operation.as_strategy(generation_mode=mode)
    names = {p.name for p in operation.path_parameters}
    known = [params for (name, prefix), found in existing.items()
             if name in names and operation.path.startswith(prefix)
             for params in found]
    if not names or not known:
        return drawn
    fixed = st.sampled_from(known).flatmap(
        lambda params: operation.as_strategy(generation_mode=mode,
                                             path_parameters=params))
    return st.one_of(drawn, fixed)


def _has_inputs(operation):
    return bool(operation.path_parameters or operation.query
                or operation.body)


def fuzz(application, engine, existing, examples, seed=None):
    """Fuzz every operation ``examples`` times per mode; a :class:`Result`.

    ``existing`` maps ``(parameter name, path prefix)`` to path parameters
    of resources that exist (e.g. ``{('name', '/v1/tiers'): {'name':
    'gold'}}``).
    """
    schema = load(application)
    checks = [getattr(st_checks, name) for name in CHECKS]
    dump = base.Dump(engine)
    result = Result()
    state = {'rows': dump()}
    started = time.monotonic()

    def one(case, who):
        response = case.call(headers=_headers(who))
        result.requests += 1
        result.statuses[response.status_code] += 1
        try:
            case.validate_response(response, checks=checks)
        except (Exception, BaseExceptionGroup) as exc:
            result.fail(case, response.status_code, exc)
        rows = dump()
        if response.status_code >= 400 and rows != state['rows']:
            result.fail(case, response.status_code,
                        'a refused request changed the database')
        state['rows'] = rows

    settings = hypothesis.settings(
        max_examples=examples, deadline=None, database=None,
        derandomize=seed is None, phases=[hypothesis.Phase.generate],
        suppress_health_check=list(hypothesis.HealthCheck))
    for operation in schema.get_all_operations():
        operation = operation.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            test = hypothesis.given(
                case=_strategies(operation, mode, existing),
                who=st.sampled_from(CALLERS))(one)
            if seed is not None:
                test = hypothesis.seed(seed)(test)
            try:
                settings(test)()
            except hypothesis.errors.Unsatisfiable:
                # Nothing in the request to break (GET /v1).
                if mode.is_positive or _has_inputs(operation):
                    raise
    result.seconds = time.monotonic() - started
    return result


def report(result, backend, examples):
    """The figures of one run, one per line."""
    lines = ['backend %s, %d examples per operation and mode: %d requests '
             'in %.1f s (%.0f req/s)' % (
                 backend, examples, result.requests, result.seconds,
                 result.requests / max(result.seconds, 1e-9)),
             'statuses: %s' % ', '.join(
                 '%d x%d' % (code, n)
                 for code, n in sorted(result.statuses.items())),
             'responses >= 500: %d; failed checks: %d' % (
                 result.server_errors, result.failed)]
    lines += ['  %s -> %s: %s' % f for f in result.failures]
    return '\n'.join(lines)


def main(argv=None):
    from iotguard.tests.fixtures import database
    from iotguard.tests.functional.api import loadtest
    from iotguard.tests.functional.api import test_api

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--backend', choices=database.BACKENDS,
                        default='sqlite')
    parser.add_argument('--examples', type=int, default=650,
                        help='examples per operation and mode')
    parser.add_argument('--seed', type=int, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as workdir:
        conf, _path = loadtest.noauth_conf(workdir)
        with database.Database(args.backend, conf) as fixture:
            test_api.seed(fixture.db)
            application = app.deploy(conf, db=fixture.db)
            load = os.getloadavg()
            result = fuzz(application, fixture.engine, test_api.EXISTING,
                          args.examples, args.seed)
            after = os.getloadavg()
    print(report(result, args.backend, args.examples))
    print('load average before %.2f %.2f %.2f, after %.2f %.2f %.2f; %s' % (
        load + after + (loadtest.cpu_model(),)))
    return 1 if result.server_errors or result.failed else 0


if __name__ == '__main__':
    sys.exit(main())
