"""What Orchard's benchmark scripts share: ports, processes, wrk runs and their parsing, memory.

Not a script: the benchmarks beside it and scripts/otel-check import it.
"""
import json, os, re, secrets, shutil, signal, socket, subprocess, sys, time, urllib.request

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
