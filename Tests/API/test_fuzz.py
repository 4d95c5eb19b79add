"""API fuzzing: schemathesis (PyPI) runs every operation of Orchard's OpenAPI document against a live
`orchard serve` (a real process, SQLite, the record-only processor, the catalogue from Config/, an API
key made with `orchard keys create`, the admin token, a platform integrator) whose Apple gateway is
`orchard-sandbox mock-gateway` on loopback (live_server.py, shared with test_type_swap.py). It generates
data in positive and negative mode (schemathesis.toml): requests the schemas allow and requests that break
them, which may rightly be refused with a 4xx. In both it needs no server error and no answer that differs
from the document; afterwards the server must still be up and its log must hold no card data.

Loopback only; bounded in time (ORCHARD_FUZZ_SECONDS, default 170, under CI's 3 minutes).
ORCHARD_FUZZ_SEED changes the seed (default fixed, so a run can be repeated; any failure prints the
request that reproduces it)."""

import json
import os
import subprocess
import sys
import time
import unittest
from pathlib import Path

from live_server import DPAN, ROOT, FuzzedServer, card_data

REPORTS = Path(os.environ.get("ORCHARD_FUZZ_REPORTS", ROOT / ".ci" / "artifacts" / "schemathesis"))


# Where each dictionary of seeded identifiers is offered (half of the generated values come from it).
BINDINGS = {"path.id": "ids", "path.event": "events", "path.key": "keys", "body.clientSecret": "secrets",
            "body.orderId": "orders"}


def with_dictionaries(config, dictionaries):
    """The committed settings plus this run's seeded identifiers as schemathesis dictionaries."""
    lines = [config.rstrip("\n"), ""]
    for name, values in dictionaries.items():
        lines += [f"[dictionaries.{name}]", "values = " + json.dumps(values), ""]
    lines.append("[parameters]")
    lines += [f'"{key}" = {{ dictionary = "{name}", probability = 0.5 }}' for key, name in BINDINGS.items()]
    return "\n".join(lines) + "\n"


class APIFuzzTests(unittest.TestCase):
    def test_the_card_data_check_finds_card_data(self):
        secrets_seen = [DPAN, "AOEBAgME"]
        self.assertEqual(card_data("payment authorized lastFour=1111\nid=12345678901234567890", secrets_seen), [])
        leaked = "dpan=4111111111111111\ncryptogram AOEBAgME\npan 5555555555554444 x"
        self.assertEqual(len(card_data(leaked, secrets_seen)), 3)
        self.assertEqual(card_data("order 4111111111111112 (not Luhn)", []), [])

    def test_schemathesis_finds_no_server_error_and_no_schema_mismatch(self):
        server = FuzzedServer()
        self.addCleanup(server.remove)
        self.addCleanup(server.stop)
        card_secrets, dictionaries = server.seed()
        budget = int(os.environ.get("ORCHARD_FUZZ_SECONDS", "170"))
        REPORTS.mkdir(parents=True, exist_ok=True)
        config = server.folder / "schemathesis.toml"
        config.write_text(with_dictionaries((Path(__file__).parent / "schemathesis.toml").read_text(), dictionaries))
        command = [
            sys.executable, "-m", "schemathesis.cli", "--config-file", str(config),
            "run", server.url + "/openapi.json",
            "--checks", "not_a_server_error,response_schema_conformance",
            "--max-examples", "30", "--seed", os.environ.get("ORCHARD_FUZZ_SEED", "22"),
            "--report", "junit", "--report-dir", str(REPORTS), "--no-color",
        ]
        environment = {**os.environ, "ORCHARD_FUZZ_API_KEY": server.api_key, "ORCHARD_FUZZ_ADMIN_TOKEN": server.admin_token}
        started = time.monotonic()
        run = subprocess.run(command, cwd=server.folder, env=environment, capture_output=True, text=True,
                             timeout=budget + 10)
        elapsed = time.monotonic() - started
        print(run.stdout[-20000:], run.stderr[-5000:], sep="\n", file=sys.stderr)
        self.assertEqual(run.returncode, 0, "schemathesis found failures (see its report above)")
        self.assertLess(elapsed, budget, "the fuzzing run took longer than its budget")
        self.assertRegex(run.stdout, r"\b\d+ passed\b")
        # Still up and answering after every operation was fuzzed.
        self.assertTrue(server.server.alive(), server.server.text()[-5000:])
        self.assertEqual(server.status("/health"), 200)
        self.assertEqual(server.stop(), 0, "orchard serve exits 0 on SIGTERM")
        log = server.log_text()
        self.assertIn("merchant configured", log)
        self.assertEqual(card_data(log, card_secrets), [], "card data in the server's log")


if __name__ == "__main__":
    unittest.main()
