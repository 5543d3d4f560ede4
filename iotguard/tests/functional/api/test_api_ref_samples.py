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

"""The api-ref's samples against the live API, call by call.

:data:`CALLS` walks every call of ``iotguard.api.router.ROUTES`` (and the
version document at ``/``) in an order that creates what the later calls
need, over the real application on a real database. Each answer is
compared with its sample under ``api-ref/source/samples/``: the same keys
at every level (lists item by item, as far as the shorter goes), the same
JSON types (an integer is not a number with a fraction) and the same
values, except the generated ones (ids, timestamps, request ids), which
need only have the same type and format. The static tests check that
every route has a call, every sample is used and shown, and every key a
sample holds is documented, in ``parameters.yaml``, by the section of the
api-ref that shows it.
"""

import dataclasses
import datetime
import json
import math
import os
import re

import fixtures
import testtools
import yaml

import iotguard
from iotguard.api.handlers import disk
from iotguard.api import router
from iotguard.tests import dbrows
from iotguard.tests.fixtures import database
from iotguard.tests.functional.api import base

API_REF = os.path.join(os.path.dirname(os.path.dirname(iotguard.__file__)),
                       'api-ref', 'source')
SAMPLES = os.path.join(API_REF, 'samples')

#: What the samples show: the endpoint, one project, one instance with an
#: image disk and a volume, on one compute host's local storage.
ENDPOINT = 'controller:9737'
PROJECT = 'c5f2a1e8d7b64c3a9e0f1b2d3c4a5e6f'
INSTANCE = '8c4b1e2a-5d6f-4a7b-9c8d-0e1f2a3b4c5d'
VOLUME = '3f1e9c2b-7a4d-4e8f-b6c5-1d2e3f4a5b6c'
DOMAIN = 'local:compute1'
SAMPLED_AT = datetime.datetime(2026, 11, 22, 3, 40, 5)
ADMIN = {'project': '0f9e8d7c6b5a49382716a5b4c3d2e1f0',
         'roles': 'admin,member,reader'}
MEMBER = {'project': PROJECT, 'roles': 'member,reader'}

#: Keys whose values the API (or the database) generates: their types
#: must match and strings their format (a regular expression), their
#: values may differ.
_TIME = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$')
GENERATED = {'id': None, 'decision_id': None, 'created_at': _TIME,
             'updated_at': _TIME, 'sampled_at': _TIME,
             'lease_expires_at': _TIME, 'last_heartbeat': _TIME,
             'request_id': re.compile(r'^req-[0-9a-f-]{36}$')}
#: Objects whose keys are data, not parameters (libvirt iotune keys, a
#: policy's parameters and audit numbers): key paths, matched at the end.
FREE_FORM = (('limits',), ('old_limits',), ('new_limits',), ('params',),
             ('decision', 'numbers'), ('decisions', 'numbers'))
NO_BODY = '204 No Content: neither the request nor the answer has a body.'


@dataclasses.dataclass(frozen=True)
class Call:
    """One request of the walk and the samples it is compared with.

    ``route`` is a key of ROUTES (or ``/``); ``path`` the URL requested,
    ``{decision_id}`` filled in from the decision the set-up recorded.
    ``request`` / ``response``: sample files under ``samples/``;
    ``no_sample``: why a call has neither.
    """

    method: str
    route: str
    path: str
    who: dict
    status: int
    request: str = None
    response: str = None
    no_sample: str = None


TIER_PATH = '/v1/tiers/gold'
INSTANCE_TIER = '/v1/instances/%s/tier' % INSTANCE
DOMAIN_PATH = '/v1/domains/' + DOMAIN
#: The domain as the sample's project names it (its disks' domain_id).
MEMBER_DOMAIN_PATH = '/v1/domains/' + disk.domain_id(PROJECT, DOMAIN)
RECORD_PATH = ('/v1/instances/%s/disks/vda/record?since=2026-11-22T03:40:00Z'
               '&until=2026-11-22T03:42:00Z' % INSTANCE)

CALLS = (
    Call('GET', '/', '/', None, 200,
         response='versions/versions-list-response.json'),
    Call('GET', '/v1', '/v1', MEMBER, 200,
         response='versions/version-show-response.json'),
    Call('POST', '/v1/tiers', '/v1/tiers', ADMIN, 201,
         'tiers/tier-create-request.json',
         'tiers/tier-create-response.json'),
    Call('GET', '/v1/tiers', '/v1/tiers', ADMIN, 200,
         response='tiers/tiers-list-response.json'),
    Call('GET', '/v1/tiers/{name}', TIER_PATH, MEMBER, 200,
         response='tiers/tier-show-response.json'),
    Call('PATCH', '/v1/tiers/{name}', TIER_PATH, ADMIN, 200,
         'tiers/tier-update-request.json',
         'tiers/tier-update-response.json'),
    Call('PUT', '/v1/instances/{uuid}/tier', INSTANCE_TIER, ADMIN, 200,
         'instances/instance-tier-set-request.json',
         'instances/instance-tier-set-response.json'),
    Call('PUT', '/v1/instances/{uuid}/tier', INSTANCE_TIER, MEMBER, 200,
         'instances/instance-tier-set-request.json',
         'instances/instance-tier-set-member-response.json'),
    Call('PUT', '/v1/instances/{uuid}/tier', INSTANCE_TIER, ADMIN, 409,
         'errors/admission-refused-request.json',
         'errors/admission-refused-response.json'),
    Call('GET', '/v1/instances/{uuid}', '/v1/instances/' + INSTANCE, MEMBER,
         200, response='instances/instance-show-response.json'),
    Call('GET', '/v1/instances/{uuid}/disks/{dev}/record', RECORD_PATH,
         MEMBER, 200, response='instances/disk-record-response.json'),
    Call('GET', '/v1/instances', '/v1/instances', MEMBER, 200,
         response='instances/instances-list-response.json'),
    Call('GET', '/v1/domains', '/v1/domains', ADMIN, 200,
         response='domains/domains-list-response.json'),
    Call('GET', '/v1/domains', '/v1/domains', MEMBER, 200,
         response='domains/domains-list-project-response.json'),
    Call('GET', '/v1/domains/{name}', DOMAIN_PATH, ADMIN, 200,
         response='domains/domain-show-response.json'),
    Call('GET', '/v1/domains/{name}', MEMBER_DOMAIN_PATH, MEMBER, 200,
         response='domains/domain-show-project-response.json'),
    Call('PATCH', '/v1/domains/{name}', DOMAIN_PATH, ADMIN, 200,
         'domains/domain-update-request.json',
         'domains/domain-update-response.json'),
    Call('GET', '/v1/decisions', '/v1/decisions?limit=1', MEMBER, 200,
         response='decisions/decisions-list-response.json'),
    Call('GET', '/v1/decisions/{decision_id}', '/v1/decisions/{decision_id}',
         MEMBER, 200, response='decisions/decision-show-response.json'),
    Call('GET', '/v1/agents', '/v1/agents', ADMIN, 200,
         response='agents/agents-list-response.json'),
    Call('GET', '/v1/tiers/{name}', '/v1/tiers/silver', MEMBER, 404,
         response='errors/not-found-response.json'),
    Call('DELETE', '/v1/instances/{uuid}/tier', INSTANCE_TIER, MEMBER, 204,
         no_sample=NO_BODY),
    Call('DELETE', '/v1/tiers/{name}', TIER_PATH, ADMIN, 204,
         no_sample=NO_BODY),
)


def load_sample(name):
    with open(os.path.join(SAMPLES, name)) as f:
        return json.load(f)


def json_type(value):
    return {dict: 'object', list: 'array', str: 'string', int: 'integer',
            float: 'number', bool: 'boolean', type(None): 'null'}[
                type(value)]


def _same_value(key, sample, live):
    if key in GENERATED:
        form = GENERATED[key]
        return form is None or not isinstance(live, str) or bool(
            form.match(sample) and form.match(live))
    if key == 'href':
        # A next link's marker is the id of a decision.
        sample, live = (re.sub(r'marker=\d+', 'marker=N', v)
                        for v in (sample, live))
    if isinstance(sample, float):
        return math.isclose(sample, live, rel_tol=1e-9)
    return sample == live


def differences(sample, live, where='', key=None):
    """How ``live`` differs from ``sample``, one readable line each."""
    here = where or '/'
    if type(sample) is not type(live):
        return ['%s: %s in the sample, %s live (%r)' % (
            here, json_type(sample), json_type(live), live)]
    if isinstance(sample, dict):
        found = []
        for name in sorted(set(live) - set(sample)):
            found.append('%s: the sample lacks %r (live: %r)' % (
                here, name, live[name]))
        for name in sorted(set(sample) - set(live)):
            found.append('%s: the API does not answer %r' % (here, name))
        for name in sorted(set(sample) & set(live)):
            found += differences(sample[name], live[name],
                                 '%s/%s' % (where, name), name)
        return found
    if isinstance(sample, list):
        # A sample may show fewer items than the API answers, not none.
        if bool(sample) != bool(live):
            return ['%s: %d items in the sample, %d live' % (
                here, len(sample), len(live))]
        found = []
        for i, (one, other) in enumerate(zip(sample, live)):
            found += differences(one, other, '%s/%d' % (where, i), key)
        return found
    if not _same_value(key, sample, live):
        return ['%s: %r in the sample, %r live' % (here, sample, live)]
    return []


class SamplesMatchTheAPI:
    """Every call of :data:`CALLS`, in order, against its samples."""

    def setUp(self):
        super().setUp()
        # Nova and Cinder as the base's mock: the tier sync succeeds
        # (test_tiersync runs it against the real services).
        self.flags(group='service_credentials', auth_type='password')
        self.useFixture(fixtures.MockPatch(
            'iotguard.manage.tiersync.sync'))
        db = self.db
        db.tier_create(database.tier_values(
            'platinum', description='reserved for the billing database',
            min_iops=9000.0, max_iops=12000.0, weight=8.0,
            is_public=False), projects=[PROJECT])
        db.domain_create(DOMAIN, 'local', iops_4k=10000.0, bytes_sec=400e6)
        for dev, volume, size in (('vda', None, 20), ('vdb', VOLUME, 100)):
            db.disk_upsert(INSTANCE, dev, 'compute1', DOMAIN, PROJECT,
                           volume_id=volume, size_gib=size)
        dbrows.disk_update_rates(
            db, INSTANCE, 'vda', SAMPLED_AT, read_iops=2400.0,
            write_iops=800.0, read_bytes_sec=9.8e6, write_bytes_sec=3.2e6,
            latency_ms=4.2, latency_p99_ms=9.6)
        limits = {'total_iops_sec': 2900, 'total_bytes_sec': 11878400}
        self.decision_id = dbrows.decision_create(
            db, DOMAIN, 'guarantee', INSTANCE, 'vda', PROJECT, 'cap', {},
            limits,
            'guarantee: load 0.4000 above its fair share 0.3400, capped at '
            '0.3400 (floor 0.2000)',
            {'domain_load': 0.97, 'starving': 1.0, 'capacity': 0.97,
             'level': 0.085, 'load': 0.4, 'floor': 0.2, 'share': 0.34,
             'new_cap': 0.34, 'io_size': 4096.0, 'iops': 3200.0,
             'bytes_sec': 13000000.0, 'latency_ms': 4.2},
            created_at=SAMPLED_AT + datetime.timedelta(seconds=5))
        dbrows.cap_set(db, INSTANCE, 'vda', limits,
                       SAMPLED_AT + datetime.timedelta(seconds=35),
                       self.decision_id)
        # Two minutes of vda's record: its floor kept, then capped.
        for minute, kept, capped, iops, reason, cap in (
                (0, 60.0, 0.0, 2100.0, None, {}),
                (1, 55.0, 35.0, 3150.0,
                 'capped at 2900 IOPS and 11.9 MB/s: its storage was '
                 'contended and it was doing 3200 IOPS and 13.0 MB/s, more '
                 'than its fair share', limits)):
            dbrows.minute_add(
                db, INSTANCE, 'vda', datetime.datetime(2026, 11, 22, 3,
                                                       40 + minute),
                floor_kept_s=kept, capped_s=capped, iops=iops,
                bytes_sec=iops * 4096, cap_reason=reason, floor_iops=2000.0,
                cap_iops=cap.get('total_iops_sec'),
                cap_bytes_sec=cap.get('total_bytes_sec'))
        # Heard of now, so alive.
        db.agent_heartbeat('compute1', 'libvirt', version='1.0.0', caps=1,
                           interval_s=5.0, disks=2, clock_offset_s=0.12)

    def test_samples_match_the_live_api(self):
        # The samples' rates are fresh: the API reads them a second later.
        self.at(SAMPLED_AT + datetime.timedelta(seconds=1))
        found = []
        for call in CALLS:
            who = call.who['roles'] if call.who else 'anonymous'
            found += ['%s %s as %s: %s' % (call.method, call.path, who, line)
                      for line in self.check(call)]
        if found:
            self.fail('The api-ref samples differ from the API:\n'
                      + '\n'.join(found))

    def check(self, call):
        path = call.path.replace('{decision_id}', str(self.decision_id))
        response = self.call(
            call.method, path, who=call.who,
            body=load_sample(call.request) if call.request else None,
            headers={'Host': ENDPOINT})
        if response.status_code != call.status:
            return ['status %d, expected %d: %s' % (
                response.status_code, call.status, response.text[:500])]
        if not GENERATED['request_id'].match(
                response.headers.get('x-openstack-request-id', '')):
            return ['no x-openstack-request-id header']
        if call.response is None:
            return [] if not response.body else [
                'a body the api-ref does not show: %s' % response.text[:500]]
        if response.content_type != 'application/json':
            return ['content type %s' % response.content_type]
        return differences(load_sample(call.response), response.json)


class SamplesMatchTheAPISqlite(SamplesMatchTheAPI, base.APITestCase):
    backend = 'sqlite'


class SamplesMatchTheAPIPostgresql(SamplesMatchTheAPI, base.APITestCase):
    backend = 'postgresql'


class SamplesMatchTheAPIMysql(SamplesMatchTheAPI, base.APITestCase):
    backend = 'mysql'


# -- the api-ref's own consistency -------------------------------------------

def _sections(path):
    """``{title: text}`` of each ``=``-underlined section of an .inc file."""
    with open(path) as f:
        lines = f.read().splitlines()
    sections, title = {}, None
    for i, line in enumerate(lines):
        if (i + 1 < len(lines) and re.fullmatch(r'=+', lines[i + 1])
                and line.strip() and not re.fullmatch(r'=+', line)):
            title = line.strip()
            sections[title] = []
        elif title is not None:
            sections[title].append(line)
    return {t: '\n'.join(body) for t, body in sections.items()}


def _directive_items(text, directive):
    """The ``- name: key`` items of every ``.. <directive>::`` block."""
    items, inside = [], False
    for line in text.splitlines():
        if line.startswith('.. '):
            inside = line.startswith('.. %s::' % directive)
        elif inside and line.strip() and not line[0].isspace():
            inside = False
        elif inside:
            match = re.match(r'\s+- ([\w.-]+): ([\w.-]+)\s*$', line)
            if match:
                items.append(match.groups())
    return items


def _sample_keys(body, path=()):
    """Every key of a body, not descending into free-form objects."""
    if isinstance(body, list):
        for item in body:
            yield from _sample_keys(item, path)
    elif isinstance(body, dict):
        if any(path[-len(f):] == f for f in FREE_FORM):
            return
        for key, value in body.items():
            yield key
            yield from _sample_keys(value, path + (key,))


class APIRefConsistencyTest(testtools.TestCase):
    """Routes, samples, sections and parameters.yaml agree."""

    def setUp(self):
        super().setUp()
        with open(os.path.join(API_REF, 'parameters.yaml')) as f:
            self.parameters = yaml.safe_load(f)
        self.sections = {}
        for name in sorted(os.listdir(API_REF)):
            if name.endswith('.inc'):
                for title, text in _sections(
                        os.path.join(API_REF, name)).items():
                    self.sections['%s: %s' % (name, title)] = text

    def shown(self):
        """``{sample: section}`` for each literalinclude of a sample."""
        shown = {}
        for where, text in self.sections.items():
            for sample in re.findall(
                    r'^\.\. literalinclude:: (?:\./)?samples/(\S+)$', text,
                    re.M):
                shown[sample] = where
        return shown

    def test_every_route_and_method_has_a_call(self):
        routes = {(r, m) for r, methods in router.ROUTES.items()
                  for m in methods} | {('/', 'GET')}
        called = {(c.route, c.method) for c in CALLS}
        self.assertEqual(set(), routes - called, 'calls nobody walks')
        self.assertEqual(set(), called - routes, 'calls of no route')
        for call in CALLS:
            pattern = router._compile(call.route)
            self.assertTrue(pattern.match(call.path.split('?')[0]), call)
            has_sample = bool(call.request or call.response)
            self.assertNotEqual(has_sample, bool(call.no_sample), call)

    def test_every_sample_is_walked_and_shown(self):
        files = set()
        for root, _dirs, names in os.walk(SAMPLES):
            files |= {os.path.relpath(os.path.join(root, n), SAMPLES)
                      for n in names}
        walked = {s for c in CALLS for s in (c.request, c.response) if s}
        self.assertEqual(files, walked)
        self.assertEqual(files, set(self.shown()))

    def test_sample_keys_are_documented_where_shown(self):
        missing = []
        for sample, where in sorted(self.shown().items()):
            documented = {name for name, _key in _directive_items(
                self.sections[where], 'rest_parameters')}
            for key in sorted(set(_sample_keys(load_sample(sample)))):
                if key not in documented:
                    missing.append('%s: %s (shown in %s)' % (sample, key,
                                                             where))
        self.assertEqual([], missing)

    def test_parameters_yaml_is_complete_and_used(self):
        used = {key for text in self.sections.values()
                for _name, key in _directive_items(text, 'rest_parameters')}
        self.assertEqual(set(), used - set(self.parameters), 'undefined')
        self.assertEqual(set(), set(self.parameters) - used, 'unused')
        for key, value in self.parameters.items():
            self.assertTrue({'in', 'type', 'required', 'description'}
                            <= set(value), key)
