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

"""``.. iotguard-params:: <policy>``: a policy's parameters as a table.

Made from the policy's declaration (:func:`iotguard.policy.param`), the
one the policy checks and the API's schema are made from.
"""

from docutils import nodes
from docutils.parsers.rst import Directive
from docutils.statemachine import StringList

from iotguard import policy


class ParamsTable(Directive):
    required_arguments = 1

    def run(self):
        params = policy.params_of(self.arguments[0])
        if not params:
            raise self.error('policy %s declares no parameters'
                             % self.arguments[0])
        rows = ['.. list-table::', '   :header-rows: 1',
                '   :widths: 22 8 10 60', '',
                '   * - Parameter', '     - Default', '     - Bounds',
                '     - Meaning']
        for p in params:
            rows += ['   * - ``%s``' % p.name,
                     '     - %s' % ('(none)' if p.default is None
                                    else '%g' % p.default),
                     '     - ``%s``' % p.bounds, '     - %s' % p.meaning]
        node = nodes.container()
        self.state.nested_parse(StringList(rows, 'iotguard-params'),
                                self.content_offset, node)
        return node.children


def setup(app):
    app.add_directive('iotguard-params', ParamsTable)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}
