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

"""JSON in and out, validation and the error format of the API.

Errors are ``{"error": {"code": 409, "title": "Conflict", "message":
"..."}}``, with ``numbers`` added to admission refusals.
"""

import datetime
import functools
import json
import math
import re
import typing
from typing import Any
import urllib.parse

import jsonschema
import webob
import webob.exc

from iotguard.api.schemas import common
from iotguard import exception

JSON = 'application/json'
#: Seconds a client is asked to wait when the database or Keystone is
#: unreachable.
RETRY_AFTER_S = 10
#: How deep a request body may nest arrays and objects.
MAX_DEPTH = 32
#: What no string of a request may hold: NUL (PostgreSQL cannot store it)
#: and lone surrogates (not UTF-8).
_BAD_CHARS = re.compile('[\x00\ud800-\udfff]')
#: A handler: the request and the path's ``{parameters}``.
Handler = typing.Callable[..., webob.Response]


class RequestTooLarge(exception.IotguardException):
    msg_fmt = 'Request body larger than %(limit)d bytes.'
    code = 413


class UnsupportedMediaType(exception.IotguardException):
    msg_fmt = 'Content type %(content_type)s is not supported: use ' + JSON
    code = 415


class MethodNotAllowed(exception.IotguardException):
    msg_fmt = 'Method %(method)s not allowed here; allowed: %(allowed)s.'
    code = 405

    @property
    def headers(self) -> dict[str, str]:
        return {'Allow': self.kwargs['allowed']}


def handler_for(req: webob.Request,
                methods: typing.Mapping[str, Handler]) -> Handler:
    """The handler of ``req.method`` among ``methods`` (HEAD: GET's).

    OPTIONS gets a handler that answers 204 with ``Allow``; a method the
    resource does not have raises :class:`MethodNotAllowed`. webob drops
    the body of a HEAD response and keeps its headers.
    """
    answered = list(methods)
    if 'GET' in methods:
        answered.append('HEAD')
    allowed = ', '.join(answered + ['OPTIONS'])
    if req.method == 'OPTIONS':
        def options(req: webob.Request, **_kw: str) -> webob.Response:
            response = json_response(None, status=204)
            response.headers['Allow'] = allowed
            return response
        return options
    handler = methods.get('GET' if req.method == 'HEAD' else req.method)
    if handler is None:
        raise MethodNotAllowed(method=req.method[:16], allowed=allowed)
    return handler


def _default(value: object) -> str:
    if isinstance(value, datetime.datetime):
        return value.isoformat() + 'Z'
    raise TypeError('%r is not JSON serialisable' % type(value))


def json_response(body: object, status: int = 200) -> webob.Response:
    """A JSON response (``body=None``: no content)."""
    response = webob.Response(status=status)
    if body is not None:
        response.content_type = JSON
        response.charset = 'utf-8'
        response.body = json.dumps(body, default=_default,
                                   allow_nan=False).encode('utf-8')
    else:
        response.content_type = None
    return response


def error_response(code: int, message: str, request_id: str | None = None,
                   headers: typing.Mapping[str, str] | None = None,
                   **extra: Any) -> webob.Response:
    title = webob.exc.status_map[code].title
    error = {'code': code, 'title': title, 'message': message}
    if request_id:
        error['request_id'] = request_id
    error.update(extra)
    response = json_response({'error': error}, status=code)
    response.headers.update(**(headers or {}))
    return response


def exception_response(exc: exception.IotguardException,
                       request_id: str | None) -> webob.Response:
    """The JSON error of one of iotguard's exceptions, with its headers."""
    extra = {k: v for k, v in exc.kwargs.items() if k == 'numbers'}
    return error_response(exc.code, exc.message, request_id,
                          headers=getattr(exc, 'headers', None), **extra)


def _reject(reason: str) -> typing.NoReturn:
    raise exception.Invalid(reason=reason)


def _check_media_type(req: webob.Request) -> None:
    """``application/json`` (any case), UTF-8 if a charset is named."""
    header = req.headers.get('Content-Type', '')
    mimetype, _sep, params = header.partition(';')
    if mimetype.strip().lower() != JSON:
        raise UnsupportedMediaType(content_type=mimetype.strip()[:64]
                                   or 'none')
    for param in params.split(';'):
        name, _sep, value = param.partition('=')
        if (name.strip().lower() == 'charset'
                and value.strip().strip('"').lower() not in ('utf-8',
                                                             'utf8')):
            raise UnsupportedMediaType(
                content_type='%s with charset %s' % (
                    JSON, value.strip()[:32]))


def retry_later(message: str, request_id: str | None) -> webob.Response:
    """503 with ``Retry-After``: a service iotguard needs is away."""
    return error_response(503, message, request_id,
                          headers={'Retry-After': str(RETRY_AFTER_S)})


def check_text(text: str, what: str) -> None:
    """Invalid (400) if ``text`` holds a character nothing can store."""
    bad = _BAD_CHARS.search(text)
    if bad is not None:
        _reject('%s holds the character U+%04X at %d' % (
            what, ord(bad.group()), bad.start()))


def check_request_line(environ: dict[str, Any]) -> None:
    """The path and query string must be UTF-8 text (Invalid if not).

    Servers hand them over as latin-1 strings of the raw bytes (the path
    percent-decoded); webob decodes them as UTF-8 where it first needs
    them, so this runs before anything else does.
    """
    for key in ('SCRIPT_NAME', 'PATH_INFO'):
        try:
            text = environ.get(key, '').encode('latin-1').decode('utf-8')
        except UnicodeError:
            _reject('the path is not UTF-8')
        check_text(text, 'the path')
    try:
        query = urllib.parse.parse_qsl(
            environ.get('QUERY_STRING', '').encode('latin-1').decode(
                'utf-8'), keep_blank_values=True, errors='strict')
    except UnicodeError:
        _reject('the query string is not UTF-8')
    for key, value in query:
        check_text(key + '=' + value, 'the query string')


def _check_tree(body: object) -> None:
    """Depth, strings and numbers of a parsed body, without recursion."""
    stack = [(body, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            _reject('the body nests deeper than %d levels' % MAX_DEPTH)
        if isinstance(value, dict):
            for key, item in value.items():
                check_text(key, 'a key of the body')
                stack.append((item, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)
        elif isinstance(value, str):
            check_text(value, 'a string of the body')
        elif isinstance(value, float) and not math.isfinite(value):
            _reject('the body holds a number out of range')


def read_json(req: webob.Request, schema: dict[str, Any],
              max_bytes: int) -> Any:
    """The request body, parsed and checked against ``schema``."""
    if req.content_length is not None and req.content_length > max_bytes:
        raise RequestTooLarge(limit=max_bytes)
    raw = req.body_file.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise RequestTooLarge(limit=max_bytes)
    _check_media_type(req)
    try:
        body = json.loads(raw.decode('utf-8'), parse_constant=_reject)
    except (UnicodeDecodeError, ValueError) as exc:
        _reject('the body is not valid JSON: %s' % exc)
    except RecursionError:
        _reject('the body nests deeper than %d levels' % MAX_DEPTH)
    _check_tree(body)
    validate(body, schema, 'body')
    return body


@functools.lru_cache(maxsize=None)
def _regex(pattern: str) -> re.Pattern[str]:
    """A JSON schema ``pattern`` as ECMA 262 reads it.

    There ``$`` matches at the end of the text only; Python's ``$`` also
    matches before a final newline (``"gold\\n"`` would be a name).
    """
    return re.compile(re.sub(r'(?<!\\)\$', r'\\Z', pattern))


def _pattern(validator: Any, pattern: str, instance: Any,
             schema: object) -> typing.Iterator[jsonschema.ValidationError]:
    if (validator.is_type(instance, 'string')
            and not _regex(pattern).search(instance)):
        yield jsonschema.ValidationError(
            '%r does not match %r' % (instance, pattern))


# types-jsonschema leaves extend() unannotated.
_Validator = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    jsonschema.Draft202012Validator, {'pattern': _pattern})


def validate(value: object, schema: dict[str, Any], what: str) -> None:
    """Check ``value`` against a JSON schema; Invalid (400) if it fails."""
    validator = _Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is not None:
        where = '/'.join(str(p) for p in error.absolute_path)
        _reject('%s%s: %s' % (what, '/' + where if where else '',
                              error.message[:300]))


def read_query(req: webob.Request, schema: dict[str, Any]) -> dict[str, str]:
    """The query string as a dict of strings, checked against ``schema``."""
    query = {}
    for key, value in req.GET.items():
        if key in query:
            _reject('query parameter %s given more than once' % key[:64])
        query[key] = value
    validate(query, schema, 'query')
    return query


def check_uuid(value: str) -> str:
    if not _regex(common.UUID['pattern']).search(value):
        _reject('instance %r is not a UUID' % value[:64])
    return value.lower()


def utc_time(text: str, what: str) -> datetime.datetime:
    """An ISO 8601 time of a query as a naive UTC datetime (400 if not)."""
    try:
        moment = datetime.datetime.fromisoformat(text)
        if moment.tzinfo is not None:
            moment = moment.astimezone(datetime.timezone.utc).replace(
                tzinfo=None)
    except (ValueError, OverflowError) as exc:
        # An offset at the calendar's edges is out of range in UTC.
        raise exception.Invalid(reason='%s: %s' % (what, exc))
    return moment
