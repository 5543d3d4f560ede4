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

"""Unit tests of the REST client (the HTTP adapter replaced by a fake)."""

import json
from unittest import mock

import requests

from iotguard.osc import client
from iotguard.tests import base


def response(status, body=None, text=''):
    resp = requests.Response()
    resp.status_code = status
    resp.reason = 'Some Reason'
    resp._content = (json.dumps(body) if body is not None else text).encode()
    return resp


class TestClient(base.TestCase):

    def setUp(self):
        super().setUp()
        self.client = client.Client(mock.Mock())
        self.client.http = mock.Mock()

    def answer(self, status, body=None, text=''):
        self.client.http.request.return_value = response(status, body, text)

    def sent(self):
        args, kwargs = self.client.http.request.call_args
        return args, kwargs

    def test_urls_bodies_and_answers(self):
        cases = [
            ('tier_list', (), {}, 'GET', '/v1/tiers', None, {'tiers': [1]},
             [1]),
            ('tier_create', ('gold',), {'min_iops': 5.0}, 'POST',
             '/v1/tiers', {'name': 'gold', 'min_iops': 5.0},
             {'tier': {'name': 'gold'}}, {'name': 'gold'}),
            ('tier_update', ('gold',), {'weight': 2.0}, 'PATCH',
             '/v1/tiers/gold', {'weight': 2.0}, {'tier': 't'}, 't'),
            ('instance_set_tier', ('u-1', 'gold'), {}, 'PUT',
             '/v1/instances/u-1/tier', {'tier': 'gold'},
             {'instance': 'i'}, 'i'),
            ('instance_list', (), {}, 'GET', '/v1/instances', None,
             {'instances': [1]}, [1]),
            ('decision_show', (12,), {}, 'GET', '/v1/decisions/12', None,
             {'decision': {'id': 12}}, {'id': 12}),
            ('domain_show', ('ceph/pool#1',), {}, 'GET',
             '/v1/domains/ceph%2Fpool%231', None, {'domain': 'd'}, 'd'),
            ('domain_update', ('local:c1',), {'policy': 'ntt'}, 'PATCH',
             '/v1/domains/local%3Ac1', {'policy': 'ntt'}, {'domain': 'd'},
             'd'),
        ]
        for method, args, kwargs, verb, path, body, answer, wanted in cases:
            self.answer(200, answer)
            got = getattr(self.client, method)(*args, **kwargs)
            self.assertEqual(wanted, got, method)
            (url, sent_verb), options = self.sent()
            self.assertEqual((path, verb), (url, sent_verb), method)
            self.assertEqual(body, options.get('json'), method)
            self.assertFalse(options['raise_exc'])

    def test_delete_no_content(self):
        self.answer(204)
        self.assertIsNone(self.client.tier_delete('gold'))
        self.assertEqual(('/v1/tiers/gold', 'DELETE'), self.sent()[0])
        self.assertIsNone(self.client.instance_unset_tier('u-1'))
        self.assertEqual(('/v1/instances/u-1/tier', 'DELETE'),
                         self.sent()[0])

    def test_instance_list_query(self):
        for kwargs, params in (({}, {}),
                               ({'all_projects': True},
                                {'all_projects': 'true'}),
                               ({'project_id': 'p1'}, {'project_id': 'p1'})):
            self.answer(200, {'instances': []})
            self.assertEqual([], self.client.instance_list(**kwargs))
            self.assertEqual(params, self.sent()[1]['params'])

    def test_agent_list_query(self):
        for kwargs, params in (({}, {}),
                               ({'host': 'cn1'}, {'host': 'cn1'}),
                               ({'alive': True}, {'alive': 'true'}),
                               ({'alive': False, 'host': 'cn1'},
                                {'alive': 'false', 'host': 'cn1'})):
            self.answer(200, {'agents': [{'host': 'cn1'}]})
            self.assertEqual([{'host': 'cn1'}],
                             self.client.agent_list(**kwargs))
            self.assertEqual(('/v1/agents', 'GET'), self.sent()[0])
            self.assertEqual(params, self.sent()[1]['params'])

    def test_decision_page_and_marker(self):
        self.answer(200, {'decisions': [{'id': 9}, {'id': 7}],
                          'links': [{'rel': 'next', 'href': 'x'}]})
        decisions, marker = self.client.decision_list(
            limit=2, domain='d', instance=None)
        self.assertEqual([9, 7], [d['id'] for d in decisions])
        self.assertEqual(7, marker)
        self.assertEqual({'limit': 2, 'domain': 'd'},
                         self.sent()[1]['params'])
        self.answer(200, {'decisions': [{'id': 3}]})
        self.assertEqual(([{'id': 3}], None),
                         self.client.decision_list(marker=7))

    def test_api_error_with_numbers(self):
        self.answer(409, {'error': {
            'code': 409, 'title': 'Conflict',
            'message': 'Tier huge refused on domain d1.',
            'numbers': {'committed_after': 1.03, 'max_commit_ratio': 0.9}}})
        exc = self.assertRaises(client.APIError, self.client.instance_set_tier,
                                'u-1', 'huge')
        self.assertEqual(409, exc.code)
        self.assertEqual(
            'iotguard-api answered 409: Tier huge refused on domain d1.\n'
            '  committed_after: 1.03\n  max_commit_ratio: 0.9', str(exc))

    def test_error_without_json(self):
        self.answer(502, text='<html>Bad Gateway</html>')
        exc = self.assertRaises(client.APIError, self.client.tier_list)
        self.assertEqual(502, exc.code)
        self.assertIn('Bad Gateway', str(exc))
        self.answer(503)
        exc = self.assertRaises(client.APIError, self.client.tier_list)
        self.assertEqual('iotguard-api answered 503: Some Reason', str(exc))
