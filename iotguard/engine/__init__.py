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

"""The engine: what the controller and the simulator share around a policy.

A policy answers what each disk should have; the engine turns those
answers into what is actually done, the same way on a real cloud and on
simulated storage (:mod:`iotguard.engine.plan`). Pure like the policies:
no clock, no I/O, no service import.
"""
