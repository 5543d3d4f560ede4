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

"""Parameters declared once: the check and the API's schema agree."""

import math

import jsonschema

from iotguard.api import schemas
from iotguard.api import util
from iotguard import exception
from iotguard import policy
from iotguard.policy import guarantee
from iotguard.policy import ntt
from iotguard.tests import base


class ParamTest(base.TestCase):

    def test_bounds_and_message(self):
        ratio = policy.Param('ratio', 0.5, '(0, 1]', 'a fraction')
        self.assertEqual(1.0, ratio.check('p', 1))
        self.assertEqual(0.25, ratio.check('p', '0.25'))   # a stored text
        for bad in (0, 1.5, math.nan, math.inf, True, 'x', None, [1]):
            err = self.assertRaises(ValueError, ratio.check, 'p', bad)
            self.assertEqual('p: ratio must be a number in (0, 1], not %r'
                             % (bad,), str(err))
        err = self.assertRaises(ValueError, policy.Param(
            'depth', 0, '[0, inf)', '').check, 'p', -1)
        self.assertEqual('p: depth must be a number >= 0, not -1', str(err))
        err = self.assertRaises(ValueError, policy.Param(
            'f', 2, '(1, inf)', '').check, 'p', 1)
        self.assertEqual('p: f must be a number > 1, not 1', str(err))

    def test_unknown_named_and_defaults_filled(self):
        values = policy.check_params('guarantee', guarantee.PARAMS,
                                     {'headroom': 0.5})
        self.assertEqual(dict(guarantee.DEFAULTS, headroom=0.5), values)
        err = self.assertRaises(ValueError, policy.check_params, 'guarantee',
                                guarantee.PARAMS, {'zz': 1, 'headroom': 0})
        self.assertIn('unknown parameter zz; known: at_cap_ratio, '
                      'border_max', str(err))
        err = self.assertRaises(ValueError, policy.load, 'static', rate=1)
        self.assertEqual('static: unknown parameter rate; it takes none',
                         str(err))

    def test_every_policy_declares_its_parameters(self):
        self.assertEqual(
            ['border_ratio', 'cap_interval', 'cap_time', 'io_size', 'rate'],
            sorted(p.name for p in policy.params_of('ntt')))
        self.assertEqual((), policy.params_of('none'))
        self.assertEqual((), policy.params_of('static'))
        self.assertEqual(19, len(guarantee.PARAMS))
        for p in guarantee.PARAMS + ntt.NttPolicy.PARAMS:
            self.assertTrue(p.meaning.endswith('.'), p.name)
            if p.default is not None:
                self.assertEqual(p.default, p.check('p', p.default))

    def test_schema_agrees_with_the_check(self):
        """At and beside each bound, the schema and the check agree."""
        for name in ('guarantee', 'ntt'):
            schema = policy.params_schema(policy.params_of(name))
            for p in policy.params_of(name):
                low, high, _, _ = p.limits
                for value in (low - 1e-9, low, low + 1e-9, 0.5, 2.0,
                              min(high, 1e15) - 1e-9, min(high, 1e15),
                              high + 1e-9):
                    try:
                        p.check(name, value)
                        checked = True
                    except ValueError:
                        checked = False
                    self.assertEqual(checked, jsonschema.Draft202012Validator(
                        schema).is_valid({p.name: value}), (p.name, value))

    def test_the_api_checks_the_named_policys_parameters(self):
        def check(body):
            util.validate(body, schemas.DOMAIN_UPDATE, 'body')

        check({'policy': 'ntt', 'params': {'rate': 0.3, 'io_size': 4096}})
        check({'policy': 'guarantee', 'params': {'headroom': 0}})
        for body, message in (
                ({'policy': 'guarantee', 'params': {'rate': 0.3}},
                 "body/params: Additional properties are not allowed "
                 "('rate' was unexpected)"),
                ({'policy': 'none', 'params': {'rate': 0.3}}, "'rate'"),
                ({'policy': 'ntt', 'params': {'rate': 1}},
                 'body/params/rate: 1 is greater than or equal to the '
                 'maximum of 1.0'),
                ({'policy': 'guarantee', 'params': {'headroom': '0.3'}},
                 "body/params/headroom: '0.3' is not of type 'number'")):
            err = self.assertRaises(exception.Invalid, check, body)
            self.assertIn(message, str(err))
        # without a policy, the domain's: policy.load checks the parameters
        check({'params': {'rate': 0.3}})
