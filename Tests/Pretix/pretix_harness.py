"""A real pretix (PyPI's pretix==2026.8.0, on SQLite, its own `runserver`) with the pretix-orchard
plugin, behind real nginx that also serves Orchard under /orchard/ with the snippet Orchard ships;
`orchard-sandbox demo` with its mock Worldpay; a relay in front of pretix's webhook URL that the
tests can make drop deliveries; and an SMTP sink for pretix's mails. Loopback only.

Run inside .venv-pretix (scripts/pretix-test makes it). Not a test module."""

import contextlib
import hashlib
import http.server
import json
import os
import shutil
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "PythonSupport"))
sys.path.insert(0, str(ROOT / "Tests" / "Browser"))
from nginx_front import write_config  # noqa: E402
from sandbox_demo import exit_status  # noqa: E402

PLUGIN = ROOT / "integrations" / "pretix-orchard"
ORCHARD = Path(os.environ.get("ORCHARD_BINARY", ROOT / ".build" / "debug" / "orchard"))
NGINX = os.environ.get("NGINX", shutil.which("nginx") or "/usr/sbin/nginx")
MERCHANT = "merchant.dev.orchard.demo"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


#: Checks run on every poll: each raises, with the child's exit status and output, once it has died.
WATCHED = []


def watch_demo(demo, name):
    """Makes every wait fail at once, with its exit status and output, if `orchard-sandbox demo` dies."""
    def check():
        if demo.process.poll() is not None:
            raise RuntimeError(f"{name} {exit_status(demo.process.returncode)}; its output:\n" + "".join(demo.output)[-12000:])
    WATCHED.append(check)


def wait_until(condition, timeout, what, interval=0.05):
    """Polls `condition` until it returns something true, or fails naming `what` after `timeout` s;
    a watched child process that dies meanwhile fails it at once."""
    deadline = time.monotonic() + timeout
    while True:
        for check in WATCHED:
            check()
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def wait_for_port(port, timeout, what, process=None, log=None):
    def listening():
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{what} {exit_status(process.returncode)}:\n{log() if log else ''}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            return False
    wait_until(listening, timeout, f"{what} on port {port}")


class Child:
    """A child process whose output goes to a file; a death shows its exit status and that output."""

    def __init__(self, name, command, env=None, cwd=None):
        self.name = name
        self.log_path = Path(tempfile.mkstemp(prefix=f"pretix-test-{name}-", suffix=".log")[1])
        self.log_file = open(self.log_path, "w")
        self.process = subprocess.Popen(command, env=env, cwd=cwd, stdout=self.log_file, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
        self.stopping = False
        WATCHED.append(self.check_alive)

    def output(self, tail=12000):
        self.log_file.flush()
        text = self.log_path.read_text(errors="replace")
        return text[-tail:]

    def check_alive(self):
        if self.process.poll() is not None and not self.stopping:
            raise RuntimeError(f"{self.name} {exit_status(self.process.returncode)}; its output:\n{self.output()}")

    def stop(self):
        self.stopping = True
        if self.check_alive in WATCHED:
            WATCHED.remove(self.check_alive)
        if self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait()
        self.log_file.close()
        self.log_path.unlink(missing_ok=True)


class SmtpSink:
    """Enough SMTP for pretix's mails: accepts every message and keeps it."""

    def __init__(self):
        sink = self
        self.messages = []

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                self.wfile.write(b"220 sink ready\r\n")
                data, recipients = None, []
                while True:
                    line = self.rfile.readline()
                    if not line:
                        return
                    if data is not None:
                        if line in (b".\r\n", b".\n"):
                            sink.messages.append({"to": recipients, "data": b"".join(data).decode(errors="replace")})
                            data, recipients = None, []
                            self.wfile.write(b"250 queued\r\n")
                        else:
                            data.append(line[1:] if line.startswith(b"..") else line)
                        continue
                    command = line.strip().upper()
                    if command.startswith((b"EHLO", b"HELO")):
                        self.wfile.write(b"250 sink\r\n")
                    elif command.startswith(b"RCPT TO"):
                        recipients.append(line.strip()[8:].decode(errors="replace"))
                        self.wfile.write(b"250 ok\r\n")
                    elif command == b"DATA":
                        data = []
                        self.wfile.write(b"354 go on\r\n")
                    elif command == b"QUIT":
                        self.wfile.write(b"221 bye\r\n")
                        return
                    else:
                        self.wfile.write(b"250 ok\r\n")

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class WebhookRelay:
    """Orchard's webhook URL in the tests: passes each delivery on to pretix's /_orchard/webhook/ as
    it came (body and headers), and records it with pretix's answer. `dropping` answers 503 instead,
    passing nothing on, as a pretix that is down would: Orchard keeps the event and retries."""

    def __init__(self):
        relay = self
        self.target = None  # pretix's webhook URL, set once pretix runs
        self.target_host = None
        self.dropping = False
        self.deliveries = []  # {"headers", "body", "status", "dropped"}
        self.lock = threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = {key: value for key, value in self.headers.items()
                           if key.lower() not in ("host", "content-length", "connection")}
                if relay.dropping or relay.target is None:
                    status, answer = 503, b""
                else:
                    status, answer = relay.post(body, headers)
                with relay.lock:
                    relay.deliveries.append({"headers": headers, "body": body, "status": status,
                                             "dropped": relay.dropping})
                self.send_response(status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/orchard-webhooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def post(self, body, headers):
        """POSTs to pretix's webhook URL: `(status, body)`."""
        request = urllib.request.Request(self.target, data=body, method="POST",
                                         headers={**headers, "Host": self.target_host})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()
        except (urllib.error.URLError, OSError) as error:  # pretix is not there (any more)
            return 502, str(error).encode()

    def of_type(self, event_type, payment_request=None):
        with self.lock:
            found = []
            for delivery in self.deliveries:
                event = json.loads(delivery["body"])
                data = event.get("data") or {}
                request_id = (data.get("paymentRequest") or {}).get("id") or (data.get("payment") or {}).get("paymentRequestId")
                if event.get("type") == event_type and (payment_request is None or request_id == payment_request):
                    found.append(delivery)
            return found

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class Nginx:
    """nginx on a free loopback port: / to pretix, Orchard through the snippet it ships, unchanged."""

    def __init__(self, port, pretix_port, orchard_port):
        self.folder = tempfile.TemporaryDirectory(prefix="pretix-nginx-")
        prefix = Path(self.folder.name)
        self.port = port
        write_config(prefix, port, orchard_port, "pretix", pretix_port, " ".join([
            "proxy_pass http://pretix;", "proxy_set_header Host $http_host;",
            "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;", "proxy_read_timeout 120s;"]))
        self.prefix = prefix
        check = subprocess.run([NGINX, "-t", "-p", str(prefix), "-c", str(prefix / "nginx.conf")],
                               capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError("nginx refused the configuration:\n" + check.stderr)
        self.child = Child("nginx", [NGINX, "-p", str(prefix), "-c", str(prefix / "nginx.conf"), "-g", "daemon off;"])
        wait_for_port(port, 10, "nginx", self.child.process, self.child.output)
        self.url = f"http://localhost:{port}"

    def access_log(self):
        return (self.prefix / "access.log").read_text()

    def stop(self):
        self.child.stop()
        self.folder.cleanup()


def template_database(python):
    """A migrated pretix database made once per pretix version and plugin migrations, kept beside the
    virtual environment (pretix's ~300 migrations take a minute on SQLite): each run copies it."""
    import pretix
    digest = hashlib.sha256(pretix.__version__.encode())
    for migration in sorted((PLUGIN / "pretix_orchard" / "migrations").glob("*.py")):
        digest.update(migration.name.encode() + migration.read_bytes())
    return Path(sys.prefix) / "orchard-test" / f"pretix-{pretix.__version__}-{digest.hexdigest()[:12]}.sqlite3"


class Pretix:
    """pretix's own configuration file, database, and `runserver` on loopback (`--insecure`: it
    serves pretix's and the plugin's static files itself; DEBUG stays off, as in production)."""

    def __init__(self, url, smtp_port, orchard_url, reconcile_after=0):
        self.folder = tempfile.TemporaryDirectory(prefix="pretix-test-")
        self.dir = Path(self.folder.name)
        (self.dir / "data").mkdir()
        self.url = url
        self.config = self.dir / "pretix.cfg"
        self.config.write_text(f"""[pretix]
instance_name=pretix (Orchard test)
url={url}
datadir={self.dir / "data"}
currency=EUR
ecb_rates=off
registration=off
password_reset=off

[locale]
default=en
timezone=Europe/Berlin

[database]
backend=sqlite3

[mail]
from=tickets@localhost
host=127.0.0.1
port={smtp_port}

[django]
debug=off

[orchard]
url={orchard_url}
reconcile_after={reconcile_after}
""")
        # pretix's settings with SQLite's transactions IMMEDIATE (pretix_test_settings.py says why).
        path = os.pathsep.join(filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")]))
        self.env = {**os.environ, "PRETIX_CONFIG_FILE": str(self.config), "DJANGO_SETTINGS_MODULE": "pretix_test_settings",
                    "PYTHONPATH": path, "PYTHONUNBUFFERED": "1"}
        self.server = None
        self.port = None

    def manage(self, *arguments, timeout=600):
        """`python -m pretix ARGUMENTS…`; its output, or an error with its exit status and output."""
        done = subprocess.run([sys.executable, "-m", "pretix", *arguments], env=self.env, cwd=self.dir,
                              capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"pretix {' '.join(arguments)} {exit_status(done.returncode)}:\n{done.stdout}\n{done.stderr}")
        return done.stdout + done.stderr

    def migrate(self):
        template = template_database(sys.executable)
        database = self.dir / "data" / "db.sqlite3"
        if template.exists():
            shutil.copyfile(template, database)
        self.manage("migrate", "-v", "0")
        if not template.exists():
            template.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(database, template.with_suffix(".partial"))
            os.replace(template.with_suffix(".partial"), template)

    def start(self, port):
        # As pretix's installation guide has it after installing a plugin: its static files into
        # pretix's manifest (a few seconds; files that did not change are kept).
        self.manage("collectstatic", "--noinput", "-v", "0")
        self.port = port
        self.server = Child("pretix", [sys.executable, "-m", "pretix", "runserver", f"127.0.0.1:{port}",
                                       "--noreload", "--insecure"], env=self.env, cwd=self.dir)
        wait_for_port(port, 60, "pretix runserver", self.server.process, self.server.output)

    def stop(self):
        if self.server:
            self.server.stop()
        self.folder.cleanup()


class HoldingRelay:
    """A TCP relay in front of a TLS server (the demo's mock Worldpay), passing bytes through
    unchanged. While `holding`, once a client has sent an application-data record larger than the TLS
    handshake's Finished (an HTTP request), the server's bytes back on that connection are kept until
    `release()`: Orchard has sent the authorization and waits for the processor's answer, as on a
    slow processor, for as long as the test wants."""

    def __init__(self, upstream_port):
        self.upstream = ("127.0.0.1", upstream_port)
        self.holding = False
        self.held = 0  # requests whose answers were held
        self.released = threading.Event()
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.relay, args=(client,), daemon=True).start()

    def relay(self, client):
        try:
            server = socket.create_connection(self.upstream, timeout=10)
            server.settimeout(None)
        except OSError:
            client.close()
            return
        held = {"on": False}
        record = {"header": b"", "skip": 0}  # where the client's TLS records stand (headers read, bodies skipped)

        def read_records(data):
            """Holds the answer when the client starts a request (an application-data record larger than
            the handshake's Finished) while the relay is holding; before passing the bytes on."""
            at = 0
            while at < len(data):
                if record["skip"]:
                    step = min(record["skip"], len(data) - at)
                    record["skip"] -= step
                    at += step
                    continue
                taken = data[at:at + 5 - len(record["header"])]
                record["header"] += taken
                at += len(taken)
                if len(record["header"]) == 5:
                    kind, length = record["header"][0], int.from_bytes(record["header"][3:5], "big")
                    record["header"], record["skip"] = b"", length
                    if kind == 0x17 and length > 100 and self.holding:
                        held["on"] = True
                        self.held += 1

        def upstream():
            try:
                while data := client.recv(65536):
                    read_records(data)
                    server.sendall(data)
            except OSError:
                pass
            finally:
                with contextlib.suppress(OSError):
                    server.shutdown(socket.SHUT_WR)

        def downstream():
            try:
                while data := server.recv(65536):
                    if held["on"]:
                        self.released.wait()
                        held["on"] = False
                    client.sendall(data)
            except OSError:
                pass
            finally:
                with contextlib.suppress(OSError):
                    client.shutdown(socket.SHUT_WR)

        threads = [threading.Thread(target=upstream, daemon=True), threading.Thread(target=downstream, daemon=True)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        client.close()
        server.close()

    def hold(self):
        self.released.clear()
        self.holding = True

    def release(self):
        self.holding = False
        self.released.set()

    def stop(self):
        self.release()
        self.listener.close()


class HeldOrchard:
    """`orchard serve` for the first demo's merchant, with the demo's certificates, keys and webhook
    secret but a store of its own, whose webhooks go to `webhook_url` and whose processor (the demo's
    mock Worldpay) it reaches through a HoldingRelay: a test holds the processor's answer to have a
    payment at the processor for as long as it needs (up to the processor timeout, 24 s here)."""

    def __init__(self, demo, webhook_url):
        config = json.loads((demo.state_dir / "orchard.json").read_text())
        merchant = config["merchants"][0]
        processor_port = int(merchant["processor"]["baseURL"].rsplit(":", 1)[1].strip("/"))
        self.relay = HoldingRelay(processor_port)
        self.port = free_port()
        config["server"]["port"] = self.port
        config["stateDirectory"] = "state-held"
        merchant.pop("merchantTokenUsage", None)
        merchant["processor"]["baseURL"] = f"https://127.0.0.1:{self.relay.port}"
        merchant["processor"]["timeoutMilliseconds"] = 24000
        merchant["webhook"]["url"] = webhook_url
        # Beside the demo's own configuration: its relative paths name the same files.
        self.config = demo.state_dir / "orchard-held.json"
        self.config.write_text(json.dumps(config, indent=2))
        self.child = Child("orchard-held", [str(ORCHARD), "serve", "--config", str(self.config)])
        wait_for_port(self.port, 60, "orchard serve (held)", self.child.process, self.child.output)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.relay.stop()
        self.child.stop()


def create_api_key(state_dir, config="orchard.json"):
    """The merchant's secret API key, as `orchard keys create` prints it once."""
    done = subprocess.run(
        [str(ORCHARD), "keys", "create", "--config", str(Path(state_dir) / config), "--merchant", MERCHANT],
        capture_output=True, text=True, timeout=120, env={**os.environ, "ORCHARD_TOOLS": "1"})
    if done.returncode != 0:
        raise RuntimeError(f"orchard keys create {exit_status(done.returncode)}:\n{done.stdout}\n{done.stderr}")
    return next(line for line in done.stdout.splitlines() if line.startswith("osk_"))


def orchard_api(base_url, api_key, method, path, body=None, idempotency_key=None):
    """`(status, json)` from Orchard's payments API, as a shop's backend would call it."""
    headers = {"Authorization": f"Bearer {api_key}", "Accept": "application/json"}
    data = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        data = json.dumps(body).encode()
    if idempotency_key:
        headers["Idempotency-Key"] = idempotency_key
    request = urllib.request.Request(base_url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


@contextlib.contextmanager
def django_ready(env):
    """Django set up in this process on pretix's settings, for the ORM (fixtures, reading state)."""
    os.environ.update({key: env[key] for key in ("PRETIX_CONFIG_FILE", "DJANGO_SETTINGS_MODULE")})
    import django
    from urllib3 import HTTPConnectionPool, HTTPSConnectionPool
    # pretix guards urllib3 against private addresses when it starts; this process is not pretix's
    # server but the test driving it, whose WebDriver talks to chromedriver on loopback through urllib3.
    connections = HTTPConnectionPool.ConnectionCls, HTTPSConnectionPool.ConnectionCls
    django.setup()
    HTTPConnectionPool.ConnectionCls, HTTPSConnectionPool.ConnectionCls = connections
    yield
