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

"""/v1/domains: the admin sees everything, a project only its disks."""

from typing import Any

from oslo_config import cfg
import webob

from iotguard.api.handlers import common
from iotguard.api.handlers import disk
from iotguard.api import schemas
from iotguard.api.schemas import common as common_schema
from iotguard.api import util
from iotguard import exception
from iotguard import policy
from iotguard.policy import admission
from iotguard.policy import base


def _name(name: str) -> str:
    util.validate(name, common_schema.DOMAIN_NAME, 'domain name')
    return name


def _values(profile: base.Profile | None) -> dict[str, Any]:
    return {'iops_4k': profile and profile.iops_4k,
            'bytes_sec': profile and profile.bytes_sec,
            'form': profile and profile.form}


def _learned_view(domain: admission.Domain) -> dict[str, Any] | None:
    fit = domain.fit
    if fit is None:
        return None
    return dict(fit.to_dict(), identified=list(fit.identified),
                margined=_values(fit.margined()),
                learned_at=domain.learned_at)


def profile_view(domain: admission.Domain,
                 full: bool = False) -> dict[str, Any] | None:
    """The profile a domain's decisions and admission use, and its source.

    ``full`` (one domain's view) adds the manual profile and the
    estimator's fit. None when the domain has neither.
    """
    in_use = admission.profile_of(domain)
    if in_use is None and domain.fit is None:
        return None
    view = dict(_values(in_use), source=domain.profile_source)
    if full:
        manual = admission.manual_profile(domain)
        view.update(manual=manual and _values(manual),
                    learned=_learned_view(domain))
    return view


def _full_view(domain: admission.Domain, disks: list[dict[str, Any]],
               conf: cfg.ConfigOpts, db: Any) -> dict[str, Any]:
    max_ratio = conf.admission.max_commit_ratio
    credits = disk.bursts(db, disks)
    profile = admission.profile_of(domain)
    # None when only the margined fit is in PROFILE_RANGES.
    raw = admission.profile_of(domain, margined=False)
    tiers = [d['tier'] for d in disks if d['tier']]
    verdict = admission.overcommit(tiers, profile, domain.fit, max_ratio)
    return {
        'name': domain.name, 'kind': domain.kind,
        'policy': domain.policy or conf.controller.default_policy,
        'params': domain.params,
        'profile': profile_view(domain, full=True),
        'capacity': 1.0,
        'committed': verdict.committed,
        'committed_learned': verdict.committed_learned,
        'max_commit_ratio': max_ratio,
        'overcommitted': verdict.overcommitted,
        'beyond_capacity': verdict.beyond_capacity,
        'utilisation': (disk.load(disks, raw, conf)
                        if profile and raw else None),
        'disks': [disk.view(d, credits=credits) for d in disks],
        'created_at': domain.created_at,
        'updated_at': domain.updated_at,
    }


def list_domains(req: webob.Request) -> webob.Response:
    common.authorize(req, 'iotguard:domain:list')
    st = common.state(req)
    domains = st.db.domain_list()
    if common.allowed(req, 'iotguard:domain:all_projects'):
        default = st.conf.controller.default_policy
        return util.json_response({'domains': [{
            'name': d.name, 'kind': d.kind, 'policy': d.policy or default,
            'profile': profile_view(d)}
            for d in domains]})
    project_id = common.context(req).project_id or ''
    mine = {d['domain'] for d in st.db.disk_list(project_id=project_id)}
    topology = common.topology(req)
    return util.json_response({'domains': [
        _member_view(d, project_id, topology)
        for d in domains if d.name in mine]})


def _member_view(domain: admission.Domain, project_id: str,
                 topology: bool) -> dict[str, Any]:
    """A domain as a project sees it: its opaque ``domain_id`` and kind.

    Its name too for a caller with ``iotguard:disk:topology``.
    """
    view = {'domain_id': disk.domain_id(project_id, domain.name),
            'kind': domain.kind}
    if topology:
        view['name'] = domain.name
    return view


def resolve(req: webob.Request, name: str) -> str | None:
    """The real name of the domain ``name`` names for the caller.

    A caller without ``iotguard:disk:topology`` names a domain by the
    ``domain_id`` it was shown (:func:`disk.domain_id`), never by its real
    name: None when ``name`` is no such id.
    """
    if common.topology(req):
        return name
    project_id = common.context(req).project_id or ''
    for domain in common.state(req).db.domain_list():
        if disk.domain_id(project_id, domain.name) == name:
            return domain.name
    return None


def show_domain(req: webob.Request, name: str) -> webob.Response:
    common.authorize(req, 'iotguard:domain:show')
    st = common.state(req)
    name = _name(name)
    if common.allowed(req, 'iotguard:domain:all_projects'):
        domain = st.db.domain_get(name)
        return util.json_response({'domain': _full_view(
            domain, st.db.disk_list(domain=name),
            st.conf, st.db)})
    # An unknown domain is the same NotFound as one without the caller's
    # disks, and one named by a name the caller may not see is unknown.
    project_id = common.context(req).project_id or ''
    real = resolve(req, name)
    disks = real and st.db.disk_list(domain=real, project_id=project_id)
    if not disks:
        raise exception.NotFound(what='domain %s' % name)
    topology = common.topology(req)
    credits = disk.bursts(st.db, disks)
    return util.json_response({'domain': dict(
        _member_view(st.db.domain_get(disks[0]['domain']), project_id,
                     topology),
        disks=[disk.view(d, topology, credits) for d in disks])})


def update_domain(req: webob.Request, name: str) -> webob.Response:
    common.authorize(req, 'iotguard:domain:update')
    st = common.state(req)
    name = _name(name)
    current = st.db.domain_get(name)
    body = util.read_json(req, schemas.DOMAIN_UPDATE,
                          st.conf.api.max_request_body_bytes)
    if 'policy' in body or 'params' in body:
        name_ = (body.get('policy') or current.policy
                 or st.conf.controller.default_policy)
        try:
            policy.load(name_, **body.get('params', current.params))
        except (TypeError, ValueError) as exc:
            raise exception.Invalid(reason='policy %s: %s' % (name_, exc))
    for key in ('iops_4k', 'bytes_sec'):
        if key in body:
            body[key] = float(body[key])
    domain = st.db.domain_update(name, body)
    return util.json_response({'domain': _full_view(
        domain, st.db.disk_list(domain=name), st.conf, st.db)})
