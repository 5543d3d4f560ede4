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

"""iotguard-status upgrade check (oslo.upgradecheck)."""

import sys

from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_upgradecheck import common_checks
from oslo_upgradecheck import upgradecheck
import sqlalchemy as sa

from iotguard import conf as iotguard_conf
from iotguard.db import api as db_api
from iotguard.db import migration


class Checks(upgradecheck.UpgradeCommands):
    """What must hold before iotguard services of this release start."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        self._upgrade_checks = (
            ('Database schema', Checks._check_schema),
            ('Policy File JSON to YAML Migration',
             (common_checks.check_policy_json, {'conf': conf})),
        )

    def _check_schema(self) -> upgradecheck.Result:
        db = db_api.Connection(self.conf)
        try:
            current = migration.version(db.get_engine())
        except (sa.exc.SQLAlchemyError, db_exc.DBError) as exc:
            return upgradecheck.Result(
                upgradecheck.Code.FAILURE,
                'Cannot read the database schema version: %s' % exc)
        finally:
            db.dispose()
        head = migration.head()
        if current != head:
            return upgradecheck.Result(
                upgradecheck.Code.FAILURE,
                'The database schema is at %s, this release needs %s: run '
                '"iotguard-manage db sync".' % (current or 'nothing', head))
        return upgradecheck.Result(upgradecheck.Code.SUCCESS)


def main(argv: list[str] | None = None) -> int:
    conf = cfg.ConfigOpts()
    iotguard_conf.register_opts(conf)
    return upgradecheck.main(conf, 'iotguard', Checks(conf),
                             argv=sys.argv[1:] if argv is None else argv)
