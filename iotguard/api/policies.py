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

"""The API's policy rules, in code: ``iotguard:<resource>:<action>``.

Three personas: the cloud ``admin``, a ``member`` of the project that
owns an instance (may change its tier), and a ``reader`` of it (may look).
Keystone tokens carry implied roles, so a member is also a reader. Rules
ending in ``:all_projects`` decide whether a caller sees every project's
data or only its own; a caller never sees another project's data.
"""

from oslo_policy import policy

ADMIN = 'role:admin'
PROJECT_MEMBER = 'role:member and project_id:%(project_id)s'
PROJECT_READER = 'role:reader and project_id:%(project_id)s'

BASE = [
    policy.RuleDefault('admin', ADMIN, 'The cloud administrator.'),
    policy.RuleDefault('project_member', PROJECT_MEMBER,
                       'A member of the project that owns the resource.'),
    policy.RuleDefault('project_reader', PROJECT_READER,
                       'A reader of the project that owns the resource.'),
    policy.RuleDefault('admin_or_member',
                       'rule:admin or rule:project_member',
                       'The admin or a project member.'),
    policy.RuleDefault('admin_or_reader',
                       'rule:admin or rule:project_reader',
                       'The admin or a project reader.'),
]


def _rule(name: str, check: str, description: str, method: str, path: str,
          *more: tuple[str, str]) -> policy.DocumentedRuleDefault:
    """A project-scoped rule; ``more``: further ``(method, path)``."""
    operations: list[policy.Operation] = [
        {'method': m, 'path': p} for m, p in ((method, path),) + more]
    return policy.DocumentedRuleDefault(
        name=name, check_str=check, description=description,
        operations=operations, scope_types=['project'])


RULES = [
    _rule('iotguard:tier:list', 'rule:admin_or_reader',
          'List the tiers the caller may use (the admin: every tier).',
          'GET', '/v1/tiers'),
    _rule('iotguard:tier:show', 'rule:admin_or_reader',
          'Show a tier the caller may use.', 'GET', '/v1/tiers/{name}'),
    _rule('iotguard:tier:all_projects', 'rule:admin',
          "See every tier, other projects' private ones included, and "
          "the project lists of private tiers.", 'GET', '/v1/tiers'),
    _rule('iotguard:tier:create', 'rule:admin', 'Create a tier.',
          'POST', '/v1/tiers'),
    _rule('iotguard:tier:update', 'rule:admin',
          'Change a tier (floors, ceilings, weight, visibility).',
          'PATCH', '/v1/tiers/{name}'),
    _rule('iotguard:tier:delete', 'rule:admin',
          'Delete a tier no disk uses.', 'DELETE', '/v1/tiers/{name}'),
    _rule('iotguard:instance:list', 'rule:admin_or_reader',
          "List the instances of the caller's project that iotguard "
          "knows, with their disks' tiers and caps.",
          'GET', '/v1/instances'),
    _rule('iotguard:instance:show', 'rule:admin_or_reader',
          "Show an instance's disks: tier, floor, domain, rates, cap.",
          'GET', '/v1/instances/{uuid}'),
    _rule('iotguard:instance:all_projects', 'rule:admin',
          "See and change every project's instances, not only the "
          "caller's (GET /v1/instances?all_projects=true or "
          "project_id=...).", 'GET', '/v1/instances/{uuid}',
          ('GET', '/v1/instances'), ('PUT', '/v1/instances/{uuid}/tier'),
          ('DELETE', '/v1/instances/{uuid}/tier')),
    _rule('iotguard:instance:tier:update', 'rule:admin_or_member',
          "Choose the tier of an instance's disks (with admission).",
          'PUT', '/v1/instances/{uuid}/tier'),
    _rule('iotguard:instance:tier:delete', 'rule:admin_or_member',
          "Drop the tier chosen through the API for an instance's disks: "
          "they fall back to their flavor's, volume type's or the default "
          "tier.", 'DELETE', '/v1/instances/{uuid}/tier'),
    _rule('iotguard:disk:topology', 'rule:admin',
          "See where a disk is: its compute host and its contention "
          "domain's real name (a local host or a storage back end). Others "
          "see only an opaque per-project domain_id, as Nova's hostId.",
          'GET', '/v1/instances/{uuid}', ('GET', '/v1/instances'),
          ('PUT', '/v1/instances/{uuid}/tier'),
          ('GET', '/v1/decisions'), ('GET', '/v1/decisions/{decision_id}')),
    _rule('iotguard:domain:list', 'rule:admin_or_reader',
          'List contention domains (a project: those holding its disks).',
          'GET', '/v1/domains'),
    _rule('iotguard:domain:show', 'rule:admin_or_reader',
          'Show a domain (a project: only its own disks in it).',
          'GET', '/v1/domains/{name}'),
    _rule('iotguard:domain:all_projects', 'rule:admin',
          "See a domain's capacity, load, commitments and every disk.",
          'GET', '/v1/domains/{name}'),
    _rule('iotguard:domain:update', 'rule:admin',
          "Change a domain's capacity profile, policy or parameters.",
          'PATCH', '/v1/domains/{name}'),
    _rule('iotguard:decision:list', 'rule:admin_or_reader',
          'List the decision audit trail (a project: its own disks).',
          'GET', '/v1/decisions'),
    _rule('iotguard:decision:show', 'rule:admin_or_reader',
          'Show one decision (a project: on its own disks).',
          'GET', '/v1/decisions/{decision_id}'),
    _rule('iotguard:decision:all_projects', 'rule:admin',
          "See every project's decisions.", 'GET', '/v1/decisions',
          ('GET', '/v1/decisions/{decision_id}')),
    _rule('iotguard:agent:list', 'rule:admin',
          'List the agents: host, driver, version, last heartbeat, disks '
          'and caps reported, and whether each is alive.',
          'GET', '/v1/agents'),
]


def list_rules() -> list[policy.RuleDefault]:
    """Every rule, for the enforcer and the oslopolicy tools."""
    return BASE + RULES
