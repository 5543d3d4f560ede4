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

"""iotguard's commands.

iotguard runs on threads and never uses eventlet, but oslo.messaging still
imports it (and oslo.utils' eventletutils) at import time, and eventlet then
warns on every command's stderr that it is deprecated. That warning is about
a library iotguard does not use, so the commands silence it.
"""

import warnings

warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
warnings.filterwarnings('ignore',
                        message=r'eventletutils module is deprecated')
