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

"""The local flake8 checks (iotguard/hacking/checks.py)."""

import testtools

from iotguard.hacking import checks


def codes(check, line, filename):
    return [text.split(':')[0] for _, text in check(line, filename)]


class PureImportsTest(testtools.TestCase):

    def test_pure_core_refuses_oslo(self):
        for filename in ('./iotguard/policy/guarantee.py',
                         './iotguard/engine/plan.py',
                         './iotguard/sim/loop.py', './iotguard/wire/caps.py',
                         './iotguard/wire/rates.py',
                         'iotguard/policy/admission.py'):
            self.assertEqual(['I301'], codes(
                checks.check_pure_imports, 'from oslo_log import log',
                filename), filename)

    def test_services_and_tests_may_use_oslo(self):
        for filename in ('./iotguard/agent/manager.py',
                         './iotguard/wire/rpcapi.py',
                         './iotguard/tests/unit/policy/test_ntt.py',
                         './iotguard/tests/unit/test_caps.py'):
            self.assertEqual([], codes(
                checks.check_pure_imports, 'from oslo_log import log',
                filename), filename)


class NoClockTest(testtools.TestCase):

    def test_policies_and_the_engine_read_no_clock(self):
        for filename in ('./iotguard/policy/ntt.py',
                         './iotguard/engine/plan.py'):
            self.assertEqual(['I304'], codes(
                checks.check_no_clock_in_policy, 'now = time.time()',
                filename), filename)

    def test_the_services_read_their_clock(self):
        self.assertEqual([], codes(
            checks.check_no_clock_in_policy, 'now = time.time()',
            './iotguard/controller/loop.py'))


class ServiceBoundariesTest(testtools.TestCase):

    def assertRefused(self, line, filename):
        self.assertEqual(['I306'], codes(checks.check_service_boundaries,
                                         line, filename), (line, filename))

    def assertAllowed(self, line, filename):
        self.assertEqual([], codes(checks.check_service_boundaries,
                                   line, filename), (line, filename))

    def test_agent_imports_no_controller_api_or_db(self):
        for line in ('from iotguard.controller import rpcapi',
                     'from iotguard.controller.sources import gnocchi',
                     'import iotguard.api.app',
                     'from iotguard.db import api as db_api',
                     'from iotguard import db',
                     'from iotguard import wire, controller as ctl'):
            self.assertRefused(line, './iotguard/agent/service.py')
        self.assertRefused('from iotguard.controller import rpcapi',
                           '/src/iotguard/agent/virt/libvirt.py')

    def test_agent_imports_the_contract_and_the_core(self):
        for line in ('from iotguard.wire import caps',
                     'from iotguard.wire import rates',
                     'from iotguard.wire import rpcapi',
                     'from iotguard.agent import manager',
                     'from iotguard.sim import world',
                     'import oslo_messaging'):
            self.assertAllowed(line, './iotguard/agent/service.py')

    def test_controller_imports_no_agent_or_api(self):
        for line in ('from iotguard.agent import rates',
                     'from iotguard.agent import rpcapi as agent_rpcapi',
                     'from iotguard.api.handlers import domain',
                     'from iotguard import agent'):
            self.assertRefused(line, './iotguard/controller/sources/ceilo.py')

    def test_controller_imports_the_database(self):
        for line in ('from iotguard.db import api as db_api',
                     'from iotguard.wire import rpcapi',
                     'from iotguard.policy import base'):
            self.assertAllowed(line, './iotguard/controller/service.py')

    def test_core_imports_no_service(self):
        for filename in ('./iotguard/policy/base.py',
                         './iotguard/engine/plan.py',
                         './iotguard/sim/loop.py', './iotguard/wire/caps.py',
                         './iotguard/wire/rates.py',
                         './iotguard/wire/rpcapi.py',
                         './iotguard/policy/admission.py'):
            for service in ('agent', 'controller', 'api', 'db'):
                self.assertRefused('from iotguard.%s import x' % service,
                                   filename)
                self.assertRefused('from iotguard import %s' % service,
                                   filename)
            self.assertAllowed('from iotguard.policy import costmodel',
                               filename)

    def test_a_deferred_import_is_checked_too(self):
        self.assertRefused('    from iotguard.controller import samples',
                           './iotguard/sim/report.py')

    def test_composition_roots_and_tests_import_anything(self):
        line = 'from iotguard.controller import service'
        for filename in ('./iotguard/cmd/allinone.py',
                         './iotguard/cmd/agent.py',
                         './iotguard/api/app.py',
                         './iotguard/tests/unit/agent/test_service.py',
                         './iotguard/tests/unit/policy/test_ntt.py'):
            self.assertAllowed(line, filename)

    def test_similar_names_are_not_services(self):
        for line in ('from iotguard.policy import admission',
                     'from iotguard import apidoc',
                     'from iotguard.dbx import y'):
            self.assertAllowed(line, './iotguard/policy/base.py')


class BenchNotImportedTest(testtools.TestCase):

    def test_runtime_code_refuses_the_benchmarks(self):
        for line, filename in (
                ('from benchmarks import agent', './iotguard/agent/x.py'),
                ('import benchmarks.controller',
                 './iotguard/controller/service.py'),
                ('import benchmarks', './iotguard/cmd/sim.py')):
            self.assertEqual(['I307'], codes(
                checks.check_bench_not_imported, line, filename), filename)

    def test_benchmarks_and_tests_may_import_them(self):
        for filename in ('./benchmarks/partition.py',
                         './iotguard/tests/unit/bench/test_partition.py'):
            self.assertEqual([], codes(
                checks.check_bench_not_imported,
                'from benchmarks import controller', filename), filename)
        for line in ('from iotguard.wire import caps',
                     'from iotguard.sim import bench'):
            self.assertEqual([], codes(
                checks.check_bench_not_imported, line,
                './iotguard/agent/manager.py'))
