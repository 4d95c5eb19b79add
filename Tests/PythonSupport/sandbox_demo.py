"""Starts and stops `orchard-sandbox demo` for the Python suites (Tests/Browser and Tests/Client): the one launcher
their harnesses share. Each harness's `Demo` names what it reads from the demo's banner and adds its own helpers.
Loopback only. Not a test module (unittest discovers test_*.py)."""

import os
import re
import signal
import subprocess
import tempfile
import threading
from pathlib import Path


def exit_status(returncode):
    """How a child process ended, its signal named: a crash of the release build shows as SIGSEGV or SIGILL, not -11."""
    if returncode is not None and returncode < 0:
        return f"killed by {signal.Signals(-returncode).name}"
    return f"exited with status {returncode}"


class SandboxDemo:
    """`SANDBOX demo --port 0 --state-dir FOLDER ARGUMENTS…` on a free loopback port with its own state folder, started
    once its banner has named every attribute in `required`."""

    #: What is read from the demo's output: attribute -> (pattern with one group, conversion of that group).
    banner = {"port": (r"checkout page:\s+http://localhost:(\d+)/", int)}
    #: The attributes the banner must have named before the demo counts as started.
    required = ("port",)

    def __init__(self, sandbox, root, arguments, prefix, start_timeout, stop_timeout):
        self.stop_timeout = stop_timeout
        self.folder = tempfile.TemporaryDirectory(prefix=prefix)
        self.state_dir = Path(self.folder.name)
        self.process = subprocess.Popen(
            [str(sandbox), "demo", "--port", "0", "--state-dir", str(self.state_dir), *arguments],
            cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.output = []
        for name in self.banner:
            setattr(self, name, None)
        started = threading.Event()

        def read():
            for line in self.process.stdout:
                self.output.append(line)
                for name, (pattern, convert) in self.banner.items():
                    match = re.search(pattern, line)
                    if match:
                        setattr(self, name, convert(match.group(1)))
                if self.named_all():
                    started.set()
            started.set()

        threading.Thread(target=read, daemon=True).start()
        if not started.wait(start_timeout) or not self.named_all():
            ended = self.process.poll()
            self.end()
            status = "still running" if ended is None else exit_status(ended)
            raise RuntimeError(f"orchard-sandbox demo did not start ({status}):\n" + "".join(self.output))
        self.url = f"http://127.0.0.1:{self.port}"

    def named_all(self):
        return all(getattr(self, name) is not None for name in self.required)

    def end(self):
        """Stops the demo with SIGINT (SIGKILL after `stop_timeout` seconds) and removes its folder. Returns its exit
        status if it had died already, else None."""
        died = self.process.poll()
        if died is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process.stdout.close()
        self.folder.cleanup()
        return died
