"""Mutants for test_type_swap.py: from one valid request, requests that each change ONE thing. A JSON body's
values (each field, recursively) are swapped for every other JSON type, empty and huge values, numbers no
64-bit integer or double holds, a lone surrogate escape and deep nesting; each key is dropped, and written
twice. Whole bodies are empty, not UTF-8, not JSON, or of another type; path and query parameters get the
same treatment as text. No randomness: the same request always gives the same mutants, in the same order.

Bodies are written as raw JSON text, not through json.dumps, so that duplicate keys, `-0`, `1e400` and
`"\\ud800"` reach the server exactly as written."""

import json
import urllib.parse
from dataclasses import dataclass, field

HUGE_STRING = b'"' + b"x" * 100_000 + b'"'
HUGE_ARRAY = b"[" + b",".join([b"0"] * 10_000) + b"]"
HUGE_OBJECT = b"{" + b",".join(b'"k%d":0' % index for index in range(10_000)) + b"}"
DEEP_ARRAY = b"[" * 100_000 + b"]" * 100_000
DEEP_OBJECT = b'{"a":' * 50_000 + b"0" + b"}" * 50_000

# One value of each JSON type; a field's own type is skipped (its empty and huge values stand for it).
TYPE_SWAPS = [("string", "str", b'"fuzz"'), ("number", "int", b"7"), ("fraction", "float", b"0.5"),
              ("bool", "bool", b"true"), ("null", "NoneType", b"null"), ("array", "list", b'["fuzz"]'),
              ("object", "dict", b'{"fuzz":1}')]
# Values past what decoders hold, then empty, huge and deep ones: the first to go when an operation's cap cuts.
EDGE_SWAPS = [("-0", b"-0"), ("1e400", b"1e400"), ("2^63", b"9223372036854775808"),
              ("-2^63-1", b"-9223372036854775809"), ("lone surrogate", b'"\\ud800"'), ("false", b"false"),
              ("empty string", b'""'), ("empty array", b"[]"), ("empty object", b"{}"),
              ("100,000-character string", HUGE_STRING), ("10,000-element array", HUGE_ARRAY),
              ("10,000-key object", HUGE_OBJECT), ("100,000 nested [", DEEP_ARRAY),
              ("50,000 nested {", DEEP_OBJECT), ("unclosed 100,000 [", b"[" * 100_000)]


@dataclass
class Mutant:
    """One request to send: `what` says which value was changed and how (it names the mutant in reports)."""
    what: str
    method: str
    path: str
    body: bytes = None
    content_type: str = "application/json"
    headers: dict = field(default_factory=dict)
    # False when the change makes the request miss the operation's route (UNROUTED).
    routed: bool = True


def encode(value):
    """Compact JSON text of a decoded value, as bytes (non-ASCII escaped, as most clients send it)."""
    return json.dumps(value, separators=(",", ":")).encode()


def render(value, target=(), action=None, where=()):
    """The JSON text of `value` with one change at the path `target` (keys and indices): ("replace", raw
    bytes), ("drop",) the key, or ("twice", raw bytes) to write the key first with the raw value, then with
    its own. Without an action, the text as is."""
    if action is not None and where == target and action[0] == "replace":
        return action[1]
    if isinstance(value, dict):
        parts = []
        for key, item in value.items():
            here = where + (key,)
            if action is not None and here == target and action[0] == "drop":
                continue
            if action is not None and here == target and action[0] == "twice":
                parts.append(encode(key) + b":" + action[1])
            parts.append(encode(key) + b":" + render(item, target, action, here))
        return b"{" + b",".join(parts) + b"}"
    if isinstance(value, list):
        return b"[" + b",".join(render(item, target, action, where + (index,)) for index, item in enumerate(value)) + b"]"
    return encode(value)


def paths(value, where=()):
    """Every value's path in a decoded JSON document, parents before children (the root excluded)."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append(where + (key,))
            found += paths(item, where + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.append(where + (index,))
            found += paths(item, where + (index,))
    return found


def lookup(value, path):
    for step in path:
        value = value[step]
    return value


def label(path):
    return "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in path) or "."


def field_mutants(body, path):
    """Every change of the value at `path`, type swaps first, then the edge values rotated by the path's
    length and first key, so that when an operation's cap cuts, different fields lose different edges."""
    original = lookup(body, path)
    own = type(original).__name__
    swaps = [(name, raw) for name, kind, raw in TYPE_SWAPS if kind != own]
    shift = (len(path) * 7 + sum(map(ord, str(path[0])))) % len(EDGE_SWAPS)
    edges = EDGE_SWAPS[shift:] + EDGE_SWAPS[:shift]
    changes = [(f"{label(path)} = {name}", ("replace", raw)) for name, raw in swaps + edges if raw != encode(original)]
    if isinstance(path[-1], str):
        changes.insert(len(swaps), (f"{label(path)} dropped", ("drop",)))
        changes.insert(len(swaps) + 1, (f"{label(path)} twice (same value)", ("twice", encode(original))))
        changes.append((f"{label(path)} twice ({{}} first)", ("twice", b"{}")))
    return [(what, render(body, path, action)) for what, action in changes]


def interleave(lists):
    """The first item of each list, then the second of each, and so on."""
    merged = []
    for round_index in range(max(map(len, lists), default=0)):
        merged += [items[round_index] for items in lists if round_index < len(items)]
    return merged


def body_mutants(body):
    """(what, bytes) for each one-value change of a JSON body, interleaved field by field."""
    return interleave([field_mutants(body, path) for path in paths(body)])


def whole_body_mutants(body, limit):
    """(what, bytes, content type) for bodies that are wrong as a whole; `limit` is server.maxBodyBytes."""
    text = render(body) if body is not None else b"{}"
    json_type = "application/json"
    return [
        ("empty body", b"", json_type), ("invalid UTF-8", b"\xff\xfe\xfd", json_type),
        ("invalid UTF-8 in a string", text.replace(b'"', b'"\xc3\x28', 1) if b'"' in text else b'["\xc3\x28"]', json_type),
        ("not JSON", b"not json", json_type), ("half of the body", text[:len(text) // 2], json_type),
        ("body, then garbage", text + b" }x", json_type), ("byte-order mark, then the body", b"\xef\xbb\xbf" + text, json_type),
        ("null", b"null", json_type), ("array", b"[]", json_type), ("string", b'"fuzz"', json_type),
        ("number", b"1e400", json_type), ("NUL in a key", b'{"\x00":0}', json_type),
        ("100,000 nested [", DEEP_ARRAY, json_type), ("unclosed 100,000 {", b'{"a":' * 100_000, json_type),
        ("over server.maxBodyBytes", b"[" + b" " * limit + b"]", json_type),
        ("the body as text/plain", text, "text/plain"), ("the body as form data", text, "application/x-www-form-urlencoded"),
    ]


# Path and query values, percent-encoded as they go on the wire.
PARAM_VALUES = [("number", "7"), ("-0", "-0"), ("1e400", "1e400"), ("2^63", "9223372036854775808"), ("bool", "true"),
                ("null", "null"), ("array", "%5B%5D"), ("object", "%7B%22a%22%3A1%7D"), ("empty", ""),
                ("invalid UTF-8", "%FF%FE"), ("lone surrogate", "%ED%A0%80"), ("NUL", "%00"), ("encoded slash", "a%2Fb"),
                ("dot-dot", ".."), ("non-ASCII", "%E2%82%AC"), ("10,000 characters", "x" * 10_000),
                ("100,000 characters", "x" * 100_000)]
# Values after which the request reaches no router at all: a 100,000-character request line is refused by the
# HTTP layer (a bare 400) before routing. Its answer needs no 5xx, but not the operation's error shape (see
# Mutant.routed). An empty segment or `..` does reach the router, whose 404 and 400 are JSON like every route's.
UNROUTED = {"x" * 100_000}


def fill(template, values):
    """The path with its {parameters} replaced by `values`, already percent-encoded."""
    for name, value in values.items():
        template = template.replace("{" + name + "}", value)
    return template


def query_text(pairs):
    return ("?" + "&".join(f"{name}={value}" for name, value in pairs)) if pairs else ""


def parameter_mutants(template, path_values, query, avoid=()):
    """(what, path, routed) for each one-parameter change: path parameters and query values swapped for
    PARAM_VALUES (those in `avoid` left out: values that would reach outside loopback), query parameters
    dropped or written twice, and an unknown one added."""
    encoded = {name: urllib.parse.quote(value, safe="") for name, value in path_values.items()}
    query = [(name, urllib.parse.quote(value, safe="")) for name, value in query.items()]
    made = []
    for name in path_values:
        for what, value in PARAM_VALUES:
            changed = fill(template, {**encoded, name: value}) + query_text(query)
            made.append((f"path {name} = {what}", changed, value not in UNROUTED))
    base = fill(template, encoded)
    for index, (name, _) in enumerate(query):
        for what, value in PARAM_VALUES:
            if value not in avoid:
                changed = query[:index] + [(name, value)] + query[index + 1:]
                made.append((f"query {name} = {what}", base + query_text(changed), len(value) < 100_000))
        made.append((f"query {name} dropped", base + query_text(query[:index] + query[index + 1:]), True))
        made.append((f"query {name} twice", base + query_text(query + [(name, "x")]), True))
    made.append(("unknown query parameter", base + query_text(query + [("fuzz", "%7B%7D")]), True))
    return made
