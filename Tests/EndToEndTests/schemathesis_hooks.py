# Loaded by schemathesis (SCHEMATHESIS_HOOKS) in the end-to-end OpenAPI test: the few rules of the
# document that JSON Schema cannot state, applied the way the apps and the gateway apply them.
import itertools
import json
import re
from datetime import datetime, timezone
from urllib.parse import quote_plus

import schemathesis

# The session and users routes (the default map's, and the same under a class map's base URL) start
# every JSON body with the five bytes `)]}'` and a newline (the contract; clients strip them). The
# document describes the JSON after them: read those bodies as the apps do, with the prefix required
# there and refused everywhere else.
PREFIX = b")]}'\n"
PREFIXED_PATHS = re.compile(r"^(/maps/\{slug\})?/(v1|api)/(session|users/)")


@schemathesis.deserializer("application/json")
def deserialize_json(ctx, response):
    body = response.content
    if PREFIXED_PATHS.match(ctx.operation.path):
        if not body.startswith(PREFIX):
            raise ValueError(f"{ctx.operation.path} answered without the )]}}' prefix: {body[:40]!r}")
        body = body[len(PREFIX):]
    elif body.startswith(PREFIX):
        raise ValueError(f"{ctx.operation.path} answered with the )]}}' prefix, which only session and users answers carry")
    return json.loads(body)


# Limits in bytes, where JSON Schema's maxLength counts characters: a value within maxLength whose bytes
# are over the limit is neither valid (the service refuses it) nor invalid (the schema allows it), so it
# is not generated. Values over maxLength still are.
LIST_QUERY_BYTES = {"order": 256, "uniqueKey": 512}  # as sent, percent-encoded
PASSWORD_BYTES = 72  # UTF-8, all bcrypt reads


def is_list(operation):
    return operation.method.upper() == "GET" and operation.path.endswith(("/StudentLocation", "/StudentLocation.geojson"))


def is_future(value):
    """Whether `at` names a moment after now: the document asks for a past one, which JSON Schema cannot say."""
    if not isinstance(value, str):
        return False
    try:
        moment = datetime.fromisoformat(value.replace("z", "Z").replace("t", "T"))
    except (TypeError, ValueError):
        return False
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment > datetime.now(timezone.utc)


@schemathesis.hook
def filter_query(ctx, query):
    if ctx.operation is None or not is_list(ctx.operation) or not isinstance(query, dict):
        return True
    if is_future(query.get("at")):
        return False
    for name, limit in LIST_QUERY_BYTES.items():
        value = query.get(name)
        if isinstance(value, str) and len(value) <= limit < len(quote_plus(value)):
            return False
    return True


@schemathesis.hook
def filter_body(ctx, body):
    if ctx.operation is None or ctx.operation.path != "/v1/accounts" or not isinstance(body, dict):
        return True
    password = body.get("password")
    return not (isinstance(password, str) and len(password) <= PASSWORD_BYTES < len(password.encode("utf-8", "surrogatepass")))


CALLS = itertools.count()


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    """Each request's `Idempotency-Key` is made its own. The generator repeats short keys, which would make
    a later post the retry of an earlier one: answered with that pin, which another step may have deleted
    since, and the stateful checks would read it as a created pin not found. Retries under one key are
    `WriteSafetyTests`' (and the gateway's `WriteLimitTests`')."""
    headers = case.headers or {}
    for name in list(headers):
        if name.lower() == "idempotency-key" and isinstance(headers[name], str):
            headers[name] = f"{headers[name][:200]}-{next(CALLS)}"
