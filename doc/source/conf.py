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

"""Sphinx configuration of iotguard's documentation."""

import os
import sys

# our own extensions: the policies' parameter tables
sys.path.insert(0, os.path.join(os.path.dirname(__file__), '_exts'))

extensions = [
    'iotguard_params',
    'openstackdocstheme',
    'oslo_config.sphinxext',
    'oslo_config.sphinxconfiggen',
    'oslo_policy.sphinxext',
]

config_generator_config_file = [
    ('../../etc/iotguard/iotguard-config-generator.conf',
     '_static/iotguard'),
]

openstackdocs_repo_name = 'openstack/iotguard'
openstackdocs_bug_project = 'iotguard'
openstackdocs_bug_tag = 'doc'
openstackdocs_auto_name = False

project = 'iotguard'
copyright = '2026, OpenStack Foundation'
source_suffix = '.rst'
master_doc = 'index'
exclude_patterns = []
pygments_style = 'native'
html_theme = 'openstackdocs'
html_static_path = ['_static']
