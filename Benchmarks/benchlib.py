"""What Orchard's benchmark scripts share: ports, processes, wrk runs and their parsing, memory.

Not a script: the benchmarks beside it and scripts/otel-check import it.
"""
import glob, json, os, re, secrets, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELEASE = os.path.join(ROOT, ".build", "release")
# Package.swift adds the fuzzer and benchmark targets only when this is set.
TOOLS_ENV = {**os.environ, "ORCHARD_TOOLS": "1"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"bench: nothing listens on {port}")


def wait_for_health(port, timeout=30, interval=0.005):
    """Seconds until GET /health answers 200 (polled every `interval`)."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as answer:
                if answer.status == 200:
                    return time.perf_counter() - started
        except OSError:
            pass
        time.sleep(interval)
    sys.exit(f"bench: /health on {port} did not answer 200 within {timeout} s")


def require_tools(*tools):
    for tool in tools:
        if not shutil.which(tool):
            sys.exit(f"bench: {tool} is missing (apt-get install {tool})")


def build(*products):
    """Release builds of `products`, the benchmark tools among them: they are in the package only with ORCHARD_TOOLS=1."""
    for product in products:
        subprocess.run(["swift", "build", "-c", "release", "--product", product], cwd=ROOT, check=True, env=TOOLS_ENV)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def parse_ms(text):
    number, unit = re.match(r"([\d.]+)(us|ms|s)", text).groups()
    return float(number) * {"us": 0.001, "ms": 1, "s": 1000}[unit]


def run_wrk(url, concurrency, duration, lua=None, script_args=(), headers=(), allow_non2xx=False):
    """One wrk run (one thread: the other core stays with the server). Returns (req/s, p50 ms, p99 ms, requests)."""
    command = ["wrk", "-t1", f"-c{concurrency}", f"-d{duration}s", "--latency"]
    for header in headers:
        command += ["-H", header]
    if lua:
        command += ["-s", lua]
    command.append(url)
    if script_args:
        command += ["--", *script_args]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    p50 = parse_ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1))
    p99 = parse_ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    if (non2xx and not allow_non2xx) or errors:
        sys.exit(f"bench: wrk saw failures at c={concurrency} on {url}:\n{out}")
    return rps, p50, p99, requests


def cpu_seconds(pid):
    """User + system CPU time a process has used so far, from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_per_request_us(pid, run):
    """(what `run` returned, the process's CPU µs per request): robust where req/s is not, on a busy machine.
    `run` returns a tuple whose last element is the number of requests."""
    before = cpu_seconds(pid)
    result = run()
    return result, 1e6 * (cpu_seconds(pid) - before) / max(1, result[-1])


def memory_kib(pid):
    """(VmRSS, VmHWM, RssAnon) of a process in KiB, from /proc/<pid>/status. RssAnon is the process's
    own memory; the rest of VmRSS is mapped files (the binary and shared libraries, shared with other processes)."""
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return tuple(int(fields[name].split()[0]) for name in ("VmRSS", "VmHWM", "RssAnon"))


def stop(*processes):
    for process in processes:
        if process and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def load_average():
    return os.getloadavg()[0]


def configure_store(config_path, state, cluster):
    """Points the configuration at `cluster` (None: SQLite, the configuration's default), with the
    vault key `store.postgres` requires in a file of its own. The order rate limits are off: the
    orders are the benchmark's setup, made from one address far faster than a shopper would, and so are
    the payment attempts the benchmark measures."""
    with open(config_path) as f:
        config = json.load(f)
    off = {"perClientIP": {"perMinute": 0}, "perMerchant": {"perMinute": 0}}
    config.setdefault("limits", {})["orders"] = off
    config["limits"]["authorizations"] = off
    if cluster is None:
        with open(config_path, "w") as f:
            json.dump(config, f, indent=2)
        return
    key_file = os.path.join(state, "vault.key")
    with open(key_file, "w") as f:
        f.write(secrets.token_hex(32))
    config.setdefault("payments", {})["vaultKey"] = key_file
    config["store"] = {"postgres": {"host": "127.0.0.1", "port": cluster.port, "database": "orchard", "user": "orchard",
                                    "password": os.path.join(cluster.folder, "password")}}
    with open(config_path, "w") as f:
        json.dump(config, f, indent=2)


def record(path, measured, baseline, ratio, target=None, holds=None):
    """One row for `Benchmarks/bench-all`'s table: appended as a JSON line to the file named by
    ORCHARD_BENCH_RESULTS when bench-all runs this script (nothing otherwise). `ratio` is a
    percentage of `baseline`, measured in the same run; `target` the issue's bound in words and
    `holds` whether this run meets it (None: no target)."""
    results = os.environ.get("ORCHARD_BENCH_RESULTS")
    if not results:
        return
    with open(results, "a") as f:
        f.write(json.dumps({"path": path, "measured": measured, "baseline": baseline, "ratio": ratio, "target": target,
                            "holds": holds}) + "\n")


class PrivateCluster:
    """A PostgreSQL cluster of its own on a free loopback port (Debian's binaries; run as `postgres`
    when this script runs as root), fsync on, removed at the end."""

    def __init__(self, statements=False):
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(p.split("/")[4]))
        if not found:
            sys.exit("PostgreSQL is not installed (apt-get install postgresql), or use --store sqlite")
        self.bin = os.path.dirname(found[-1])
        self.folder = tempfile.mkdtemp(prefix="orchard-bench-pg-")
        self.password = secrets.token_hex(16)
        self.port = free_port()
        with open(os.path.join(self.folder, "password"), "w") as f:
            f.write(self.password)
        os.chmod(self.folder, 0o755)  # the orchard process (this user) reads the password file
        self.as_owner = []
        if os.geteuid() == 0:  # initdb refuses root
            shutil.chown(self.folder, "postgres")
            self.as_owner = ["runuser", "-u", "postgres", "--"]
        data = os.path.join(self.folder, "data")
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "check": True}
        subprocess.run(self.as_owner + [f"{self.bin}/initdb", "-D", data, "-U", "orchard", f"--pwfile={self.folder}/password",
                                        "-A", "scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"], **quiet)
        subprocess.run(self.as_owner + [f"{self.bin}/pg_ctl", "-D", data, "-l", f"{self.folder}/log", "-w", "-o",
                                        f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=on "
                                        "-c synchronous_commit=on"
                                        + (" -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all -c pg_stat_statements.track_planning=on"
                                           if statements else ""), "start"], **quiet)
        self.psql("postgres", "CREATE DATABASE orchard")
        self.statements = statements
        if statements:
            self.psql("orchard", "CREATE EXTENSION pg_stat_statements")

    def psql(self, database, sql):
        """Runs `sql` as the cluster's owner role; returns its rows, tab-separated."""
        return subprocess.run([f"{self.bin}/psql", "-X", "-q", "-A", "-t", "-F", "\t", "-h", "127.0.0.1", "-p", str(self.port),
                               "-U", "orchard", "-d", database, "-c", sql],
                              env={"PGPASSWORD": self.password, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                              check=True).stdout

    def reset_statements(self):
        if self.statements:
            self.psql("orchard", "SELECT pg_stat_statements_reset()")

    def report_statements(self, requests, concurrency):
        """Every statement the measured run made, per authorization: calls, server time (planning and
        execution, with planning also apart) and rows, the costliest first (pg_stat_statements; the
        round trip is not in it)."""
        if not self.statements:
            return
        rows = self.psql("orchard", "SELECT calls, total_exec_time + total_plan_time, total_plan_time, rows, regexp_replace(query, '\\s+', ' ', 'g') "
                                    "FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'orchard') "
                                    "ORDER BY total_exec_time DESC")
        print(f"PostgreSQL statements at c={concurrency}, per authorization ({requests} authorizations):")
        print(f"  {'calls':>6} {'µs':>7} {'plan µs':>7} {'rows':>6}  statement")
        total_calls = total_time = 0
        for line in rows.splitlines():
            calls, time_ms, plan_ms, count, query = line.split("\t", 4)
            total_calls += int(calls)
            total_time += float(time_ms)
            if int(calls) >= requests / 100:
                print(f"  {int(calls) / requests:>6.2f} {1000 * float(time_ms) / requests:>7.1f} {1000 * float(plan_ms) / requests:>7.1f} "
                      f"{int(count) / requests:>6.2f}  {query[:140]}")
        print(f"  {total_calls / requests:>6.2f} {1000 * total_time / requests:>7.1f} {'':>7}         all statements")

    def commits(self):
        """Transactions committed in the orchard database so far (pg_stat_database.xact_commit): an
        autocommitted statement counts one, a BEGIN … COMMIT one. The statistics reach the view when
        backend reports them (at most a second late while it works, ten once it is idle), so a
        reading waits out that delay first, then asks for a fresh snapshot."""
        time.sleep(11)
        row = self.psql("orchard", "SELECT pg_stat_clear_snapshot(); SELECT xact_commit FROM pg_stat_database WHERE datname = 'orchard'")
        return int(row.split()[-1])

    def idle_commits(self):
        """Commits per second while no payment comes (the loops' polls, these readings), over
        about 11 s: ``commits`` waits for the statistics before each reading."""
        first, start = self.commits(), time.monotonic()
        return (self.commits() - first) / (time.monotonic() - start)

    def round_trips(self, requests):
        """Top-level statements per authorization (pg_stat_statements, BEGIN and COMMIT included;
        the foreign-key checks a statement runs inside are not round trips): each is one round trip
        from Orchard, as nothing is pipelined. None without --statements."""
        if not self.statements:
            return None
        row = self.psql("orchard", "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE toplevel "
                                   "AND dbid = (SELECT oid FROM pg_database WHERE datname = 'orchard')")
        return int(row.strip()) / requests

    def cpu_seconds(self):
        """The cluster's CPU time so far: the postmaster's own and its ended children's (which it has
        waited for), plus each live backend's and background process's."""
        with open(os.path.join(self.folder, "data", "postmaster.pid")) as f:
            postmaster = int(f.readline())
        with open(f"/proc/{postmaster}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total = sum(int(n) for n in fields[11:15]) / os.sysconf("SC_CLK_TCK")
        for child in subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout.split():
            try:
                total += cpu_seconds(int(child))
            except (FileNotFoundError, ProcessLookupError):
                pass  # ended meanwhile: counted by the postmaster once it has waited for it
        return total

    def commit_floor(self, concurrency, seconds=3):
        """PostgreSQL's own cost of an authorization's two commits on this cluster and machine, the
        baseline for its CPU per authorization: the cluster's CPU µs per pair of autocommitted one-row
        UPDATEs (a claim's commit, then an outcome's), from pgbench (prepared statements,
        `concurrency` clients, `seconds` of load). In a database of its own, so the orchard
        database's statistics stay Orchard's."""
        if not getattr(self, "floor_script", None):
            self.psql("postgres", "CREATE DATABASE floor")
            self.psql("floor", "CREATE TABLE t (id bigint PRIMARY KEY, n bigint NOT NULL); "
                               "INSERT INTO t SELECT g, 0 FROM generate_series(1, 100000) g")
            self.psql("floor", "VACUUM ANALYZE t")  # not in the statement above: psql -c sends one transaction
            self.floor_script = os.path.join(self.folder, "floor.sql")
            with open(self.floor_script, "w") as f:
                f.write("\\set id random(1, 100000)\nUPDATE t SET n = n + 1 WHERE id = :id;\nUPDATE t SET n = n + 1 WHERE id = :id;\n")
        before = self.cpu_seconds()
        out = subprocess.run([f"{self.bin}/pgbench", "-n", "-M", "prepared", "-h", "127.0.0.1", "-p", str(self.port), "-U", "orchard",
                              "-c", str(concurrency), "-j", str(min(concurrency, os.cpu_count() or 1)), "-T", str(seconds),
                              "-f", self.floor_script, "floor"],
                             env={"PGPASSWORD": self.password, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, check=True).stdout
        pairs = int(re.search(r"number of transactions actually processed: (\d+)", out).group(1))
        # pgbench's backends have ended: their CPU counts once the postmaster has reaped them.
        deadline = time.monotonic() + 10
        while self.has_child_of("floor") and time.monotonic() < deadline:
            time.sleep(0.05)
        return 1e6 * (self.cpu_seconds() - before) / max(1, pairs)

    def has_child_of(self, database):
        """Whether a backend connected to `database` is still alive (its title names the database)."""
        with open(os.path.join(self.folder, "data", "postmaster.pid")) as f:
            postmaster = f.readline().strip()
        for child in subprocess.run(["pgrep", "-P", postmaster], capture_output=True, text=True).stdout.split():
            try:
                with open(f"/proc/{child}/cmdline", "rb") as f:
                    if f" {database} ".encode() in f.read().replace(b"\0", b" "):
                        return True
            except (FileNotFoundError, ProcessLookupError):
                pass
        return False

    def stop(self):
        subprocess.run(self.as_owner + [f"{self.bin}/pg_ctl", "-D", os.path.join(self.folder, "data"), "-m", "fast", "-w", "stop"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(self.folder, ignore_errors=True)
