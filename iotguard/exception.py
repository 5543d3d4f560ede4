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

"""The exceptions iotguard raises, one tree, with HTTP codes for the API."""

from typing import Any


class IotguardException(Exception):
    """Base class: ``msg_fmt`` is formatted with the keyword arguments."""

    msg_fmt = 'An unknown error occurred.'
    code = 500

    def __init__(self, message: str | None = None, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.message = self.msg_fmt % kwargs if message is None else message
        super().__init__(self.message)


class Invalid(IotguardException):
    msg_fmt = 'Invalid input: %(reason)s'
    code = 400


class InvalidScenario(Invalid):
    msg_fmt = 'Invalid scenario %(source)s: %(field)s: %(reason)s'


class InvalidCap(Invalid):
    msg_fmt = 'Invalid cap: %(reason)s'


class TierSyncFailed(IotguardException):
    msg_fmt = 'tier sync failed: %(reason)s'
    done: list[str]     # what the sync changed before it failed


class Forbidden(IotguardException):
    msg_fmt = 'Policy does not allow %(action)s.'
    code = 403


class NotFound(IotguardException):
    msg_fmt = 'Resource could not be found: %(what)s'
    code = 404


class Conflict(IotguardException):
    msg_fmt = 'Conflict: %(reason)s'
    code = 409


class Unavailable(IotguardException):
    """A service iotguard needs for this request is away (503)."""
    msg_fmt = '%(service)s is unreachable; try again later.'
    code = 503


class AdmissionRejected(Conflict):
    msg_fmt = ('Tier %(tier)s refused on domain %(domain)s: committed floors '
               'would be %(committed).3f of capacity, above the allowed '
               '%(max_ratio).3f.')

    def for_member(self) -> str:
        """The refusal as a project member may read it.

        The committed floors of a domain add up other projects' floors and
        the domain's capacity profile is the operator's: only an admin sees
        those numbers.
        """
        if 'committed' not in self.kwargs:
            return self.message
        return ('Tier %s does not fit in domain %s now: the floors already '
                'promised there leave no room for it. Choose a lower tier '
                'or ask the cloud operator.'
                % (self.kwargs.get('tier'), self.kwargs.get('domain')))


class LatencyRejected(AdmissionRejected):
    msg_fmt = ('Tier %(tier)s refused on domain %(domain)s: its latency '
               'objective of %(objective).4g ms would be missed, the '
               'predicted p99 at the committed floors (%(committed).3f of '
               'capacity) being %(predicted_p99_ms).4g ms.')

    def for_member(self) -> str:
        """The refusal with the predicted p99, not the domain's load."""
        return ('Tier %s cannot keep its latency objective of %.4g ms in '
                'domain %s now: the predicted p99 there is %.4g ms. Choose '
                'another tier or ask the cloud operator.'
                % (self.kwargs['tier'], self.kwargs['objective'],
                   self.kwargs['domain'], self.kwargs['predicted_p99_ms']))


class AllInOneFailed(IotguardException):
    msg_fmt = 'The all-in-one failed: %(reason)s'


class MeasureFailed(IotguardException):
    msg_fmt = 'Measurement failed: %(reason)s'
    code = 400
