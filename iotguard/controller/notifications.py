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

"""iotguard's notifications, sent with oslo.messaging's Notifier.

Event types (publisher ``iotguard-controller.<host>``):

* ``iotguard.cap.apply`` (INFO): a cap was set or changed on a disk;
* ``iotguard.cap.release`` (INFO): a disk's cap was released;
* ``iotguard.guarantee.violation`` (WARN): a disk is below its floor with
  unmet demand, so operators can alarm;
* ``iotguard.tier.refused`` (WARN): a tier an instance's flavor or a
  volume's type names did not fit (admission) or is not usable, so its
  disks got a weaker source's tier; also a tier (any source's) whose disk
  moved to another domain where its floor does not fit, then with
  ``moved_from`` and ``moved_to`` (the domains); sent once per refusal;
* ``iotguard.tier.admitted`` (INFO): such a tier was given (at once, or
  at a later resync once capacity freed);
* ``iotguard.disk.size_refused`` (WARN): a disk grew (a volume extended)
  and its tier's floor per GiB at the new size did not fit (admission):
  the disk keeps the floor of the size it was admitted at, tried again at
  every resync; with ``instance_uuid``, ``dev``, ``tier``, ``size_gib``
  (refused), ``admitted_gib`` and ``reason``; sent once per size;
* ``iotguard.domain.overcommitted`` (WARN): the floors admitted on a
  domain cost more than ``[admission] max_commit_ratio`` of what its
  storage was learned to serve (:func:`iotguard.policy.admission.overcommit`);
  sent when it starts, with ``domain``, ``committed`` (profile in use),
  ``committed_learned`` (the fit, no margin), ``max_commit_ratio``,
  ``confidence`` and ``beyond_capacity`` (above 1.0); report only;
* ``iotguard.domain.overcommit_cleared`` (INFO): such a domain no longer
  is (same payload);
* ``iotguard.placement.usage_differs`` (WARN): Placement's usage of a
  domain's floor inventory differs from the floors iotguard committed
  there (:mod:`iotguard.controller.placement`), at two resyncs in a row;
  with ``domain``, ``provider``, ``resource_class``, ``total``,
  ``placement_used`` and ``committed`` (units); sent once until
* ``iotguard.placement.usage_matches`` (INFO): they are equal again (same
  payload).

Where they go is oslo.messaging's ``[oslo_messaging_notifications]``
(``driver = messagingv2``, ``topics``, ``transport_url``); with no driver
set nothing is sent. A notification that cannot be sent is logged and
never stops the caller.
"""

from typing import Any

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging

LOG = logging.getLogger(__name__)

CAP_APPLY = 'iotguard.cap.apply'
CAP_RELEASE = 'iotguard.cap.release'
GUARANTEE_VIOLATION = 'iotguard.guarantee.violation'
TIER_ADMITTED = 'iotguard.tier.admitted'
TIER_REFUSED = 'iotguard.tier.refused'
DISK_SIZE_REFUSED = 'iotguard.disk.size_refused'
DOMAIN_OVERCOMMITTED = 'iotguard.domain.overcommitted'
DOMAIN_OVERCOMMIT_CLEARED = 'iotguard.domain.overcommit_cleared'
PLACEMENT_USAGE_DIFFERS = 'iotguard.placement.usage_differs'
PLACEMENT_USAGE_MATCHES = 'iotguard.placement.usage_matches'


def publisher_id(service: str, host: str) -> str:
    return '%s.%s' % (service, host)


class Notifier:
    """Sends iotguard's event types; build it once per process."""

    def __init__(self, conf: cfg.ConfigOpts,
                 transport: oslo_messaging.Transport | None = None,
                 service: str = 'iotguard-controller') -> None:
        if transport is None:
            transport = oslo_messaging.get_notification_transport(conf)
        self._notifier = oslo_messaging.Notifier(
            transport, publisher_id=publisher_id(service, conf.host))

    def _send(self, method: str, event_type: str,
              payload: dict[str, Any]) -> None:
        try:
            getattr(self._notifier, method)({}, event_type, payload)
        except Exception as e:
            LOG.warning('Could not send notification %s: %s', event_type, e)

    def cap_apply(self, payload: dict[str, Any]) -> None:
        self._send('info', CAP_APPLY, payload)

    def cap_release(self, payload: dict[str, Any]) -> None:
        self._send('info', CAP_RELEASE, payload)

    def guarantee_violation(self, payload: dict[str, Any]) -> None:
        self._send('warn', GUARANTEE_VIOLATION, payload)

    def tier_admitted(self, payload: dict[str, Any]) -> None:
        self._send('info', TIER_ADMITTED, payload)

    def tier_refused(self, payload: dict[str, Any]) -> None:
        self._send('warn', TIER_REFUSED, payload)

    def disk_size_refused(self, payload: dict[str, Any]) -> None:
        self._send('warn', DISK_SIZE_REFUSED, payload)

    def domain_overcommitted(self, payload: dict[str, Any]) -> None:
        self._send('warn', DOMAIN_OVERCOMMITTED, payload)

    def domain_overcommit_cleared(self, payload: dict[str, Any]) -> None:
        self._send('info', DOMAIN_OVERCOMMIT_CLEARED, payload)

    def placement_usage_differs(self, payload: dict[str, Any]) -> None:
        self._send('warn', PLACEMENT_USAGE_DIFFERS, payload)

    def placement_usage_matches(self, payload: dict[str, Any]) -> None:
        self._send('info', PLACEMENT_USAGE_MATCHES, payload)
