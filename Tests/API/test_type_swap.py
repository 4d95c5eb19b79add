"""Type-swap fuzzing of every HTTP route (schemathesis, in test_fuzz.py, sends only what the document's schemas
allow). From one valid request per operation of the OpenAPI document (type_swap_seeds.py), each mutant
changes ONE thing (type_swap.py): a JSON body's value, at any depth, swapped for every other JSON type, empty
and huge values (100,000 characters, 10,000 elements), -0, 1e400, 2^63, a lone surrogate escape, 100,000
nested arrays; each key dropped or written twice; the whole body empty, not UTF-8, not JSON; path and query
parameters alike. For every answer (type_swap_runner.py): no 5xx but the 503s the document lists for the
operation; a 4xx is JSON of the documented error shape; the server process is alive and /health answers
200. At the end the server's log holds no card data. First on `orchard serve` (live_server.FuzzedServer,
with server.maxBodyBytes at its 1 MiB maximum so that huge values reach the decoders), then the checkout
routes, the simulated sheet's `POST /demo/token` and the Google Pay stand-in's `POST /demo/google-pay-token` on
`orchard-sandbox demo --google-pay` (its Google Pay payments from minted tokens).

A failure prints the request that reproduces it and the server's last log lines, and is written to
ORCHARD_TYPE_FUZZ_FINDINGS (default /tmp/type-fuzz-findings.md, each body in the folder beside it); a
crashed server is restarted and the run goes on. Written there too, as notes that do not fail the test:
statuses the document does not list, and refusals answered before any route (an empty path segment, `..`,
a 100,000-character request line: the HTTP layer's, not the operation's, so only a 5xx counts there).

Loopback only (sent to the demo from 127.0.0.2–254, so that its default per-client rate limits stay out of
the way); deterministic (no randomness: the same mutants in the same order). Bounded:
ORCHARD_TYPE_FUZZ_SECONDS (default 120) of sending in all, four fifths on `serve` and the rest on the demo,
shared among operations in proportion to their mutants, and at most ORCHARD_TYPE_FUZZ_CAP mutants per
operation (default 800, more than any operation has now). A run sends about 4,800 requests in about 30 s;
starting and seeding the servers take a few seconds more."""

import json
import os
import sys
import time
import unittest
from pathlib import Path

from live_server import DPAN, ROOT, DemoServer, FuzzedServer, card_data
from type_swap import body_mutants, paths, render, whole_body_mutants
from type_swap_runner import Findings, Run
from type_swap_seeds import demo_seeds, serve_seeds

DOCUMENT = json.loads((ROOT / "Sources" / "OrchardServer" / "OpenAPI" / "openapi.json").read_text())
SECONDS = float(os.environ.get("ORCHARD_TYPE_FUZZ_SECONDS", "120"))
CAP = int(os.environ.get("ORCHARD_TYPE_FUZZ_CAP", "800"))
FINDINGS = Path(os.environ.get("ORCHARD_TYPE_FUZZ_FINDINGS", "/tmp/type-fuzz-findings.md"))
MAX_BODY = 1 << 20


def setUpModule():
    FINDINGS.write_text("# Type-swap fuzzing findings (Tests/API/test_type_swap.py)\n\n"
                        "Each finding: the mutant, the request, a curl command that replays it (its body is in the "
                        "file named), the answer, the server's last log lines and a guess at the Swift file.\n")


def operations():
    """operationId: (method, path) for every operation of the document."""
    return {spec["operationId"]: (method.upper(), path) for path, item in DOCUMENT["paths"].items()
            for method, spec in item.items() if isinstance(spec, dict) and "operationId" in spec}


class Target:
    """What the runner needs of a live server: where, which credentials, and how to watch and restart it."""

    def __init__(self, server, host, rotate=False):
        self.server, self.port, self.host, self.rotate, self.sent = server, server.port, host, rotate, 0
        self.credentials = {"apiKey": server.api_key, "adminToken": server.admin_token}

    def source(self):
        """The client address: with `rotate`, each request from the next of 127.0.0.2–127.0.0.254 (all loopback),
        so that the demo's per-client rate limits, which its configuration keeps at their defaults, do not
        answer 429 in place of the operation."""
        self.sent += 1
        return (f"127.0.0.{2 + self.sent % 253}", 0) if self.rotate else None

    def alive(self):
        return self.server.server.alive()

    def logs(self):
        """The server's log files (stdout and stderr), one per start."""
        return self.server.logs

    def restart(self):
        self.server.restart()


class TypeSwapMutantTests(unittest.TestCase):
    def test_one_change_per_mutant_as_raw_json_text(self):
        body = {"a": {"b": [1, "x"]}, "c": None}
        self.assertEqual(render(body), b'{"a":{"b":[1,"x"]},"c":null}')
        made = dict(body_mutants(body))
        self.assertEqual(made[".a.b[1] = lone surrogate"], b'{"a":{"b":[1,"\\ud800"]},"c":null}')
        self.assertEqual(made[".c dropped"], b'{"a":{"b":[1,"x"]}}')
        self.assertEqual(made[".a twice (same value)"], b'{"a":{"b":[1,"x"]},"a":{"b":[1,"x"]},"c":null}')
        self.assertEqual(made[".a.b[0] = -0"], b'{"a":{"b":[-0,"x"]},"c":null}')
        self.assertNotIn(".c = null", made, "a value is not swapped for its own type")
        self.assertEqual(len(paths(body)), 5)

    def test_whole_bodies_and_their_limit(self):
        made = {what: body for what, body, _ in whole_body_mutants({"a": 1}, 2048)}
        self.assertEqual(made["empty body"], b"")
        self.assertGreater(len(made["over server.maxBodyBytes"]), 2048)
        self.assertRaises(UnicodeDecodeError, made["invalid UTF-8 in a string"].decode)


class TypeSwapFuzzTests(unittest.TestCase):
    def fuzz(self, title, target, seeds, seconds):
        findings = Findings(FINDINGS)
        findings.start(title)
        run = Run(target, DOCUMENT, findings, seconds, CAP, MAX_BODY)
        started = time.monotonic()
        work_left = sum(run.planned(seed) for seed in seeds.values())
        for name, seed in seeds.items():
            planned = run.planned(seed)
            run.fuzz(name, seed, work_left)
            work_left -= planned
        elapsed = time.monotonic() - started
        summary = run.summary(title, elapsed)
        print("\n" + summary, file=sys.stderr)
        with FINDINGS.open("a") as out:
            out.write(f"{'No failures. ' if not run.failures else ''}Requests sent:\n\n```\n{summary}\n```\n")
        self.write_notes(run.notes)
        self.assertLess(elapsed, seconds + 30, "the run took longer than its budget")
        return run

    def write_notes(self, notes):
        """Statuses the document does not list and refusals answered before routing, once per kind, with the
        operations that got them and one request: notes for whoever keeps the document, not failures."""
        kinds = {}
        for name, note, mutant in notes:
            names = kinds.setdefault(note, ({}, mutant))[0]
            names[name] = names.get(name, 0) + 1
        if kinds:
            with FINDINGS.open("a") as out:
                out.write("\n### Notes, not failures: statuses the document does not list (the server may be right: the "
                          "document then needs them), and refusals answered before routing\n\n")
                for note, (names, mutant) in sorted(kinds.items()):
                    path = mutant.path if len(mutant.path) < 120 else mutant.path[:120] + "…"
                    out.write(f"- {note}: {sum(names.values())}× on {', '.join(sorted(names))}; e.g. {mutant.what}: "
                              f"`{mutant.method} {path}`\n")

    def assert_no_failures(self, run):
        """None, or one line per failure: which operation, what went wrong, and the mutant."""
        lines = [f"{name}: {failure[:160]} ({mutant.what})" for name, failure, mutant in run.failures]
        self.assertEqual(len(lines), 0, f"{len(lines)} failures (details above and in {FINDINGS}):\n" + "\n".join(lines[:40]))

    def check_log(self, server, card_secrets):
        log = server.log_text()
        self.assertEqual(card_data(log, card_secrets), [], "card data in the server's log")

    def test_every_operation_answers_type_swaps_without_a_server_error(self):
        server = FuzzedServer(server_settings={"maxBodyBytes": MAX_BODY})
        self.addCleanup(server.remove)
        self.addCleanup(server.stop)
        card_secrets, _ = server.seed()
        seeds = serve_seeds(server, DOCUMENT)
        self.assertEqual(sorted(set(operations()) - set(seeds)), [], "operations of the document without a seed")
        run = self.fuzz("orchard serve", Target(server, f"127.0.0.1:{server.port}"), seeds, SECONDS * 0.8)
        self.assertTrue(server.server.alive())
        self.check_log(server, card_secrets)
        self.assert_no_failures(run)

    def test_the_demo_checkout_answers_type_swaps_without_a_server_error(self):
        demo = DemoServer()
        self.addCleanup(demo.remove)
        self.addCleanup(demo.stop)
        seeds = demo_seeds(demo)
        run = self.fuzz("orchard-sandbox demo", Target(demo, f"localhost:{demo.port}", rotate=True), seeds, SECONDS * 0.2)
        self.assertTrue(demo.server.alive())
        self.check_log(demo, [DPAN])
        self.assert_no_failures(run)


if __name__ == "__main__":
    unittest.main()
