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

"""iotguard-status upgrade check (oslo.upgradecheck).

Deployment tools run it with the new code before ``iotguard-manage db
sync``: what the sync fixes is a warning; a failure is what the services of
this release would not work with.
"""

from collections.abc import Iterator
import contextlib
import sys
from typing import Any
from urllib import parse

from keystoneauth1 import exceptions as ks_exc
from kombu import connection as kombu_connection
import kombu.exceptions
from oslo_config import cfg
from oslo_db import exception as db_exc
import oslo_messaging
from oslo_upgradecheck import common_checks
from oslo_upgradecheck import upgradecheck
from oslo_utils import timeutils
from pbr import version as pbr_version
import sqlalchemy as sa

from iotguard import clients
from iotguard import conf as iotguard_conf
from iotguard.db import agents as db_agents
from iotguard.db import api as db_api
from iotguard.db import migration
from iotguard import exception
from iotguard import version

Code = upgradecheck.Code
Result = upgradecheck.Result

#: The oldest iotguard whose agents speak this controller's RPC APIs
#: (:mod:`iotguard.wire.rpcapi`, agent and controller API 1.x): every
#: release so far. Raise it with a new major version of either API.
OLDEST_AGENT = '0.0.0'

_DB_ERRORS = (sa.exc.SQLAlchemyError, db_exc.DBError)


def _semver(text: str | None) -> pbr_version.SemanticVersion | None:
    try:
        return pbr_version.SemanticVersion.from_pip_string(text or '')
    except ValueError:
        return None


def _why(exc: Exception) -> str:
    """A database error's first line (the driver's words, not the SQL)."""
    return (str(exc).splitlines() or [''])[0]


def _broker_urls(url: oslo_messaging.TransportURL) -> list[str]:
    vhost = parse.quote(url.virtual_host or '', safe='')
    return ['amqp://%s:%s@%s:%s/%s' % (
        parse.quote(host.username or 'guest', safe=''),
        parse.quote(host.password or 'guest', safe=''),
        host.hostname, host.port or 5672, vhost) for host in url.hosts]


def _declared(broker: Any, kind: str, name: str) -> bool:
    """Whether the exchange or queue ``name`` exists (a passive declare)."""
    channel = broker.channel()
    try:
        if kind == 'exchange':
            channel.exchange_declare(name, 'topic', passive=True)
        else:
            channel.queue_declare(name, passive=True)
        return True
    except kombu.exceptions.ChannelError as e:
        if getattr(e, 'code', None) == 404:   # the broker closed the channel
            return False
        raise
    finally:
        if channel.is_open:
            channel.close()


class Checks(upgradecheck.UpgradeCommands):
    """What must hold before iotguard services of this release start."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        self._upgrade_checks = (
            ('Database schema', Checks._check_schema),
            ('Default tier', Checks._check_default_tier),
            ('Service credentials', Checks._check_credentials),
            ('Nova and Cinder notifications', Checks._check_notifications),
            ('Agents', Checks._check_agents),
            ('Policy File JSON to YAML Migration',
             (common_checks.check_policy_json, {'conf': conf})),
        )

    @contextlib.contextmanager
    def _db(self) -> Iterator[db_api.Connection]:
        db = db_api.Connection(self.conf)
        try:
            yield db
        finally:
            db.dispose()

    def _check_schema(self) -> Result:
        try:
            with self._db() as db:
                current = migration.version(db.get_engine())
        except _DB_ERRORS as exc:
            return Result(Code.FAILURE,
                          'Cannot read the database schema version: %s'
                          % _why(exc))
        head = migration.head()
        if current != head:
            return Result(
                Code.WARNING,
                'The database schema is at %s, this release needs %s: run '
                '"iotguard-manage db sync" before starting its services.'
                % (current or 'nothing', head))
        return Result(Code.SUCCESS)

    def _check_default_tier(self) -> Result:
        name = self.conf.tiers.default_tier
        if not name:
            return Result(Code.SUCCESS, 'No [tiers] default_tier: disks '
                          'without a tier have no floor.')
        try:
            with self._db() as db:
                db.tier_get(name)
        except exception.NotFound:
            return Result(
                Code.FAILURE,
                '[tiers] default_tier is %s, which is not a tier: disks '
                'without a tier of their own would have no floor. Create it '
                '("openstack iotguard tier create %s ...") or unset the '
                'option.' % (name, name))
        except _DB_ERRORS as exc:
            return Result(Code.WARNING, 'Cannot check that [tiers] '
                          'default_tier %s exists (run "iotguard-manage db '
                          'sync" first): %s' % (name, _why(exc)))
        return Result(Code.SUCCESS)

    def _check_credentials(self) -> Result:
        if not self.conf.service_credentials.auth_type:
            return Result(
                Code.WARNING,
                'No [service_credentials]: the controller cannot read '
                "Nova's servers and Cinder's volumes (it finds no disks to "
                'guard), nor read Gnocchi, and tier changes do not reach '
                'flavors and volume types.')
        try:
            clients.get_session(self.conf).get_token()
        except ks_exc.ClientException as exc:
            return Result(Code.FAILURE, 'Cannot get a token with '
                          '[service_credentials]: %s' % exc)
        return Result(Code.SUCCESS)

    def _check_notifications(self) -> Result:
        """Evidence on the broker that Nova and Cinder notify iotguard.

        iotguard cannot read nova.conf or cinder.conf. On RabbitMQ, each
        ``[membership] notification_exchanges`` exchange exists once a
        service used it, and oslo.messaging's notifier declares the queue
        ``<topic>.info`` on its first notification (passive declares,
        nothing is created).
        """
        try:
            oslo_messaging.get_notification_transport(self.conf).cleanup()
        except oslo_messaging.MessagingException as exc:
            return Result(Code.FAILURE, 'The notifications transport cannot '
                          'be used: %s' % exc)
        url = oslo_messaging.TransportURL.parse(
            self.conf, self.conf.oslo_messaging_notifications.transport_url)
        if url.transport not in ('rabbit', 'kombu'):
            return Result(Code.SUCCESS, 'Not checked on the %s transport.'
                          % url.transport)
        options = self.conf.membership
        try:
            with kombu_connection.Connection(  # type: ignore[no-untyped-call]
                    _broker_urls(url), connect_timeout=10,
                    ssl=self.conf.oslo_messaging_rabbit.ssl) as broker:
                missing = [name for name in options.notification_exchanges
                           if not _declared(broker, 'exchange', name)]
                queues = [topic + '.info'
                          for topic in options.notification_topics]
                seen = [q for q in queues if _declared(broker, 'queue', q)]
        except (OSError, kombu.exceptions.KombuError,
                kombu.exceptions.ChannelError) as exc:
            return Result(Code.WARNING, 'Cannot look at the notifications '
                          'broker: %s' % exc)
        resync = ('iotguard then sees servers and volumes change only at '
                  'the full resync, every %g s.'
                  % options.resync_interval)
        if missing:
            return Result(
                Code.WARNING,
                'No service ever used the exchange(s) %s of [membership] '
                'notification_exchanges on this broker: Nova publishes on '
                'its [DEFAULT] control_exchange (nova), Cinder on its own '
                '(openstack unless set). %s' % (', '.join(missing), resync))
        if not seen:
            return Result(
                Code.WARNING,
                'No notification was ever sent on this broker (no queue %s):'
                ' set [oslo_messaging_notifications] driver = messagingv2 in '
                'nova.conf and cinder.conf. %s' % (' or '.join(queues),
                                                   resync))
        return Result(Code.SUCCESS)

    def _check_agents(self) -> Result:
        try:
            with self._db() as db:
                agents = db.agent_list()
        except _DB_ERRORS as exc:
            return Result(Code.WARNING, 'Cannot read the agents (run '
                          '"iotguard-manage db sync" first): %s' % _why(exc))
        now = timeutils.utcnow()
        alive = [a for a in agents if db_agents.alive(
            a, now, self.conf.agent.sample_interval)]
        if not alive:
            return Result(Code.WARNING, 'No agent reported recently (%d '
                          'known): nothing is measured or capped.'
                          % len(agents))
        oldest = _semver(OLDEST_AGENT)
        ours = version.version_info.semantic_version()
        found = {a['host']: _semver(a['version']) for a in alive}
        too_old = [h for h, v in found.items() if v is not None and v < oldest]
        if too_old:
            return Result(
                Code.FAILURE,
                'Agent(s) on %s are older than %s, the oldest whose RPC API '
                'this release speaks: upgrade them.'
                % (', '.join(too_old), OLDEST_AGENT))
        unknown = [h for h, v in found.items() if v is None]
        newer = [h for h, v in found.items() if v is not None and v > ours]
        if unknown or newer:
            return Result(
                Code.WARNING,
                'Agents whose version is unknown: %s; newer than this '
                'release (%s; upgrade the controllers first, a newer agent '
                'may call them at an RPC version they cannot take): %s.'
                % (', '.join(unknown) or 'none',
                   ours.release_string(), ', '.join(newer) or 'none'))
        return Result(Code.SUCCESS)


def main(argv: list[str] | None = None) -> int:
    conf = cfg.ConfigOpts()
    iotguard_conf.register_opts(conf)
    return upgradecheck.main(conf, 'iotguard', Checks(conf),
                             argv=sys.argv[1:] if argv is None else argv)
