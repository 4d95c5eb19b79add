"""Sends test_type_swap.py's mutants to a live server and checks each answer against the OpenAPI document: no
5xx but the 503s the document lists for the operation; a 4xx answers JSON of the error shape the document
gives for that status (the Error schema when it gives none); the process is alive and /health answers 200
after every request. Each problem is printed with the request that reproduces it and the server's last log
lines, and written to the findings file; a crashed server is restarted and the run goes on."""

import http.client
import json
import re
import secrets
import sys
import time
import urllib.parse
from pathlib import Path

from type_swap import Mutant, body_mutants, fill, parameter_mutants, query_text, render, whole_body_mutants

# When a mutant was accepted and used up its object (an order paid), the operation's seed is renewed this
# many times at most: each renewal mints a token, which costs more than a hundred mutants.
RENEWALS = 6


def resolve(document, node):
    while isinstance(node, dict) and "$ref" in node:
        target = document
        for step in node["$ref"].lstrip("#/").split("/"):
            target = target[step]
        node = target
    return node


def mismatch(document, value, schema, where="$"):
    """Where `value` differs from `schema` (the subset of JSON Schema the error shapes use), or None."""
    schema = resolve(document, schema)
    kinds = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
    kind = schema.get("type")
    if kind == "integer" and (not isinstance(value, int) or isinstance(value, bool)):
        return f"{where}: not an integer"
    if kind in kinds and not isinstance(value, kinds[kind]):
        return f"{where}: not {kind}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where}: {value!r} is not one of the documented values"
    if isinstance(value, dict):
        missing = [key for key in schema.get("required", []) if key not in value]
        if missing:
            return f"{where}: {', '.join(missing)} missing"
        for key, sub in schema.get("properties", {}).items():
            if key in value and (found := mismatch(document, value[key], sub, f"{where}.{key}")):
                return found
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            if found := mismatch(document, item, schema["items"], f"{where}[{index}]"):
                return found
    return None


class Operation:
    """What the document says of one operation: its statuses, their error shapes and the credential it takes."""

    def __init__(self, document, name, method, template):
        self.document, self.name, self.method, self.template = document, name, method, template
        spec = document["paths"].get(template, {}).get(method.lower(), {})
        self.responses = {status: resolve(document, answer) for status, answer in spec.get("responses", {}).items()}
        security = [key for entry in spec.get("security", []) for key in entry]
        self.credential = security[0] if security else None
        self.idempotent = any(resolve(document, p).get("name") == "Idempotency-Key" for p in spec.get("parameters", []))

    def problems(self, status, content_type, body):
        """(failure, note): what is wrong with the answer; a note is a status the document does not list."""
        if status is None:
            return "no answer (connection closed or timed out)", None
        if status >= 500 and not (status == 503 and "503" in self.responses):
            return f"{status}: a server error the document does not allow here", None
        if status < 400:
            return None, None
        schema = self.responses.get(str(status), {}).get("content", {}).get("application/json", {}).get("schema")
        listed = str(status) in self.responses or not self.responses  # no responses: a route outside the document
        note = None if listed else f"{status} is not among the statuses the document lists"
        shape = schema or {"$ref": "#/components/schemas/Error"}
        if not content_type.startswith("application/json"):
            return f"{status} answered {content_type or 'no Content-Type'}, not the JSON error shape", note
        try:
            decoded = json.loads(body)
        except ValueError:
            return f"{status} answered a body that is not JSON: {body[:200]!r}", note
        found = mismatch(self.document, decoded, shape)
        return (f"{status} does not have the documented error shape ({found}): {body[:300]!r}" if found else None), note


class Findings:
    """The findings file (Markdown, for whoever fixes the server) and each request's body beside it."""

    def __init__(self, path):
        self.path = Path(path)
        self.bodies = self.path.with_suffix("")
        self.bodies.mkdir(parents=True, exist_ok=True)
        self.count = 0
        self.seen = {}

    def start(self, title):
        with self.path.open("a") as out:
            out.write(f"\n## {title} ({time.strftime('%Y-%m-%d %H:%M:%S')})\n\n")

    def add(self, heading, mutant, url, answer, log_tail, guess):
        """Writes one finding; after three of the same kind on one operation, only counts them."""
        self.count += 1
        self.seen[heading] = self.seen.get(heading, 0) + 1
        if self.seen[heading] > 3:
            return
        body_file = self.bodies / f"{self.count:04d}.body"
        body_file.write_bytes(mutant.body or b"")
        body = (mutant.body or b"")[:400]
        more = f" … ({len(mutant.body)} bytes in all)" if mutant.body and len(mutant.body) > 400 else ""
        with self.path.open("a") as out:
            out.write(f"### {self.count}. {heading}\n\n- mutant: {mutant.what}\n- request: `{mutant.method} {mutant.path[:300]}`"
                      f"{' …' if len(mutant.path) > 300 else ''} (Content-Type: {mutant.content_type})\n"
                      f"- body: `{body!r}`{more}\n- replay: `curl -sS -X {mutant.method} '{url}{mutant.path[:300]}' "
                      f"-H 'Content-Type: {mutant.content_type}' -H 'Authorization: Bearer <key or admin token>' "
                      f"--data-binary @{body_file}`\n- answer: {answer}\n- guess: {guess}\n\n"
                      f"```\n{log_tail}\n```\n\n")


def send(target, mutant, timeout=30):
    """(status, Content-Type, body) of one request on a connection of its own; status None when none came."""
    connection = http.client.HTTPConnection("127.0.0.1", target.port, timeout=timeout, source_address=target.source())
    try:
        connection.putrequest(mutant.method, mutant.path, skip_host=True, skip_accept_encoding=True)
        headers = {"Host": target.host, **mutant.headers}
        if mutant.body is not None:
            headers.update({"Content-Type": mutant.content_type, "Content-Length": str(len(mutant.body))})
        for name, value in headers.items():
            if value is not None:
                connection.putheader(name, value)
        connection.endheaders(mutant.body)
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type", ""), response.read()
    except (OSError, http.client.HTTPException):
        return None, "", b""
    finally:
        connection.close()


def guess_file(log_tail, template):
    """Where the fault is likely: the Swift file a crash names, else the controller that registers the route."""
    named = re.findall(r"([\w/+-]+\.swift):\d+", log_tail.split("the log's last lines:)")[0])
    if named:
        return f"{named[-1]} (named in the crash)"
    tail = template.split("}")[-1].strip("/") or template
    sources = Path(__file__).resolve().parents[2] / "Sources" / "OrchardServer"
    for path in sorted(sources.rglob("*.swift")):
        if f'"{tail}' in path.read_text() or f'/{tail}"' in path.read_text():
            return f"{path.relative_to(sources.parents[1])} (registers the route)"
    return "unknown"


class Run:
    """Fuzzes operations one by one on `target` (port, host, credentials, source(), alive(), logs(), restart()),
    within `seconds` in all and `cap` mutants per operation."""

    def __init__(self, target, document, findings, seconds, cap, limit):
        self.target, self.document, self.findings = target, document, findings
        self.deadline = time.monotonic() + seconds
        self.cap, self.limit = cap, limit
        self.counts, self.failures, self.notes, self.bases, self.statuses = {}, [], [], {}, {}

    def mutants(self, seed):
        """The operation's mutants from its seed, whole-body ones first, then interleaved by field and parameter."""
        path = fill(seed.template, {name: _quote(value) for name, value in seed.path_values.items()})
        path += query_text([(name, _quote(value)) for name, value in seed.query.items()])
        made = [Mutant(what, seed.method, path, body, kind)
                for what, body, kind in whole_body_mutants(seed.body, self.limit)]
        if seed.body is None:
            made = [mutant for mutant in made if mutant.what in ("invalid UTF-8", "not JSON", "100,000 nested [")]
        else:
            made += [Mutant(what, seed.method, path, body) for what, body in body_mutants(seed.body)]
        body = None if seed.body is None else render(seed.body)
        made += [Mutant(what, seed.method, changed, body, routed=routed)
                 for what, changed, routed in parameter_mutants(seed.template, seed.path_values, seed.query, seed.avoid)]
        base = Mutant("the valid request", seed.method, path, body)
        return base, made

    def headers(self, operation):
        headers = {}
        if operation.credential:
            headers["Authorization"] = "Bearer " + self.target.credentials[operation.credential]
        if operation.idempotent:
            headers["Idempotency-Key"] = "type-swap-" + secrets.token_hex(8)
        return headers

    def planned(self, seed):
        """How many requests an operation will send at most: its share of the time is in proportion."""
        return 1 + min(len(self.mutants(seed)[1]), self.cap)

    def fuzz(self, name, seed, work_left):
        """Sends the operation's valid request, then its mutants until the cap or its share of the time left:
        its planned requests out of `work_left`, those of the operations not fuzzed yet, this one included."""
        operation = Operation(self.document, name, seed.method, seed.template)
        base, made = self.mutants(seed)
        share = max(0.0, self.deadline - time.monotonic()) * (1 + min(len(made), self.cap)) / work_left
        stop_at = time.monotonic() + share
        status = self.bases[name] = self.exchange(operation, base)[0]
        sent, renewals, index = 1, 0, 0
        while True:
            # An accepted request may have used the object up (an order paid): the next mutants get a fresh one.
            if status is not None and status < 300 and seed.renew and renewals < RENEWALS:
                renewals += 1
                seed.path_values, seed.body = seed.renew()
                base, made = self.mutants(seed)
            if index >= min(len(made), self.cap) or time.monotonic() >= stop_at:
                break
            status = self.exchange(operation, made[index])[0]
            sent, index = sent + 1, index + 1
        self.counts[name] = (sent, len(made) + 1)
        return sent

    def log_size(self):
        return sum(path.stat().st_size for path in self.target.logs() if path.exists())

    def log_since(self, mark):
        """What the server logged since `mark` (a log_size), else its last lines: the request's own lines."""
        text = b"".join(path.read_bytes() for path in self.target.logs() if path.exists())
        lines = text[mark:].decode(errors="replace").splitlines()
        if not lines:
            last = text.decode(errors="replace").splitlines()[-8:]
            lines = ["(nothing logged for this request; the log's last lines:)"] + last
        return "\n".join(line[:2000] for line in lines[-15:])

    def exchange(self, operation, mutant):
        mutant.headers = {**self.headers(operation), **mutant.headers}
        mark = self.log_size()
        status, content_type, body = send(self.target, mutant)
        seen = self.statuses.setdefault(operation.name, {})
        seen[status] = seen.get(status, 0) + 1
        failure, note = operation.problems(status, content_type, body)
        if not mutant.routed and status is not None and status < 500:
            # Answered outside the operation (no route, or the HTTP layer): any refusal but a server error.
            answered = f"{status} {content_type or 'without Content-Type'}, answered before routing"
            failure, note = None, (answered if failure else None)
        alive = self.target.alive()
        healthy = alive and send(self.target, Mutant("health", "GET", "/health"))[0] == 200
        if not healthy:
            down = "the server died" if not alive else "/health did not answer 200"
            failure = (failure + "; " if failure else "") + down
        if failure:
            if not healthy:
                time.sleep(0.3)  # a crashing process may still be writing its last lines
            self.report(operation, mutant, status, failure, body, self.log_since(mark))
            if not healthy:
                self.target.restart()
        elif note:
            self.notes.append((operation.name, note, mutant))
        return status, body

    def report(self, operation, mutant, status, failure, body, tail):
        heading = f"{operation.name}: {failure.split(':')[0] if status else failure}"
        self.failures.append((operation.name, failure, mutant))
        answer = f"{status} {body[:300]!r}" if status else failure
        self.findings.add(heading, mutant, f"http://{self.target.host}", answer, tail, guess_file(tail, operation.template))
        print(f"\nFAIL {operation.name}: {failure}\n  {mutant.what}\n  {mutant.method} {mutant.path[:300]}\n"
              f"  body ({len(mutant.body or b'')} bytes): {(mutant.body or b'')[:400]!r}\n  server log:\n{tail}\n",
              file=sys.stderr)

    def summary(self, title, elapsed):
        lines = [f"{title}: requests per operation (sent / mutants made, status of the valid request):"]
        for name, (sent, made) in self.counts.items():
            answers = sorted(self.statuses[name].items(), key=lambda item: str(item[0]))
            seen = " ".join(f"{status}×{count}" for status, count in answers)
            lines.append(f"  {name:30} {sent:5} / {made:<5} valid: {self.bases.get(name)}  answers: {seen}")
        lines.append(f"  total: {sum(sent for sent, _ in self.counts.values())} requests (and as many GET /health) in "
                     f"{elapsed:.0f} s; {len(self.failures)} failures, {len(self.notes)} notes")
        return "\n".join(lines)


def _quote(value):
    return urllib.parse.quote(str(value), safe="")
