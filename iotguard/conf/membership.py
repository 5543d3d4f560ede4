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

"""Options of the controller's membership: which disk is in which domain."""

from oslo_config import cfg

GROUP = 'membership'

OPTS: list[cfg.Opt] = [
    cfg.StrOpt('ephemeral_domain',
               help='The domain of every compute host\'s image-backed '
                    'disks when they all live on one shared storage (e.g. '
                    '``ceph`` for hosts with ``[libvirt] images_type = '
                    'rbd`` on one Ceph cluster). Name the same domain in '
                    '``volume_domains`` for the Cinder back ends on that '
                    'storage: their volumes and the ephemeral disks then '
                    'share one capacity, admitted and decided once. Hosts '
                    'in ``ephemeral_domains`` keep theirs. Unset: '
                    '``local:<host>``.'),
    cfg.DictOpt('ephemeral_domains',
                default={},
                help='Compute hosts whose image-backed disks are not in '
                     '``ephemeral_domain``, as host:domain pairs (e.g. '
                     '``compute-9:ceph-2`` for a host on another '
                     'cluster).'),
    cfg.DictOpt('volume_domains',
                default={},
                help='Cinder back ends whose volumes are in a domain of '
                     'the operator\'s naming, as backend:domain pairs. A '
                     'key is a back end (the ``backend`` of the volume\'s '
                     '``host@backend#pool``), one of its pools '
                     '(``backend#pool``) or one pool of one volume service '
                     '(``host@backend#pool``); the most precise match '
                     'wins. E.g. ``ceph:ceph`` with ``ephemeral_domain = '
                     'ceph``. Other volumes are in their pool, '
                     '``host@backend#pool``.'),
    cfg.FloatOpt('resync_interval',
                 default=600.0, min=10.0,
                 help='Seconds between two full resyncs of membership '
                      'with Nova and Cinder (every server and every '
                      'volume). Nova and Cinder notifications keep it '
                      'current in between.'),
    cfg.ListOpt('notification_topics',
                default=['notifications', 'versioned_notifications'],
                help="Topics of Nova's and Cinder's notifications: "
                     'unversioned (``notifications``) and versioned '
                     '(``versioned_notifications``); either format is '
                     'understood.'),
    cfg.ListOpt('notification_exchanges',
                default=['nova', 'openstack'],
                help="Exchanges Nova and Cinder publish their "
                     "notifications on: their [DEFAULT] control_exchange. "
                     "Nova sets its own (``nova``); Cinder does not and "
                     "publishes on oslo.messaging's default, "
                     "``openstack``, unless its configuration names "
                     "another. Each topic is read on each exchange."),
    cfg.StrOpt('pool',
               help='Listener pool for those notifications. Unset: '
                    'iotguard-membership.<[DEFAULT] host>, so every '
                    'controller sees every event and does not take them '
                    "from Ceilometer's own queues."),
]
