"""Starts `tinfer serve` on 127.0.0.1 with a free port for tests and benchmarks, and small raw-HTTP helpers.

The server prints "listening on http://HOST:PORT" once bound; readiness is GET /health == 200."""
import http.client
import json
import os
import re
import signal
import subprocess
import threading
import time


class Server:
    def __init__(self, tinfer, model, *extra, ready_timeout=60):
        """model None: no -m (routing servers name their models with --model-small/--model-large in extra)."""
        model_args = [] if model is None else ["-m", model]
        self.proc = subprocess.Popen([tinfer, "serve", *model_args, "--port", "0", *extra],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.log = []
        self.port = None
        deadline = time.time() + ready_timeout
        while self.port is None:
            line = self.proc.stderr.readline()
            if not line:
                raise RuntimeError("server exited before binding:\n" + "".join(self.log))
            self.log.append(line)
            m = re.search(r"listening on http://[^:]+:(\d+)", line)
            if m:
                self.port = int(m.group(1))
        # Keep draining stderr so the server never blocks on a full pipe.
        threading.Thread(target=self._drain, daemon=True).start()
        while True:
            try:
                status, _, _ = self.request("GET", "/health", timeout=2)
                if status == 200:
                    break
            except OSError:
                pass
            if time.time() > deadline or self.proc.poll() is not None:
                raise RuntimeError("server not ready:\n" + "".join(self.log))
            time.sleep(0.05)

    def _drain(self):
        for line in self.proc.stderr:
            self.log.append(line)

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}"

    def request(self, method, path, body=None, headers=None, timeout=30):
        """Returns (status, headers dict, body bytes). body: bytes, str or a JSON-able object."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data

    def metrics(self):
        _, _, body = self.request("GET", "/metrics")
        out = {}
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def stop(self, sig=signal.SIGTERM, timeout=20):
        """Sends `sig` and returns the exit status (kills and raises after `timeout`)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise RuntimeError("server did not exit within %d s after %s" % (timeout, sig))


def stream_raw(port, path, body, headers=None, timeout=60):
    """POSTs a streaming request; returns (status, list of decoded data payloads incl. '[DONE]')."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    c.request("POST", path, body=json.dumps(body), headers=h)
    r = c.getresponse()
    if r.status != 200:
        data = r.read()
        c.close()
        return r.status, [data.decode()]
    events = []
    for raw in r:  # line by line
        line = raw.decode().rstrip("\r\n")
        if line.startswith("data: "):
            events.append(line[6:])
            if line[6:] == "[DONE]":
                break
    c.close()
    return r.status, events


def stream_text(events):
    """Joins the text of choice 0 from completion or chat chunks; returns (text, finish_reason)."""
    text, finish = "", None
    for e in events:
        if e == "[DONE]":
            continue
        j = json.loads(e)
        for ch in j.get("choices", []):
            if ch["index"] != 0:
                continue
            text += ch.get("text") or (ch.get("delta") or {}).get("content") or ""
            finish = ch.get("finish_reason") or finish
    return text, finish


def env_paths():
    """(tinfer binary, stories260K.gguf path): $TINFER_BIN, $TINFER_TEST_MODEL or $TINFER_SHARED/models/."""
    shared = os.environ.get("TINFER_SHARED") or os.environ.get("TINFER_SHARED_DEFAULT", "")
    model = os.environ.get("TINFER_TEST_MODEL") or os.path.join(shared, "models", "stories260K.gguf")
    return os.environ.get("TINFER_BIN", "tinfer"), model


def run_named(tests, width=26):
    """Runs every (name, fn) test, printing PASS or FAIL with its time or error; returns how many failed."""
    failures = 0
    for name, fn in tests:
        t = time.time()
        try:
            fn()
            print("PASS %-*s %.1f s" % (width, name, time.time() - t), flush=True)
        except Exception as e:  # report every test, then fail
            failures += 1
            print("FAIL %-*s %s: %s" % (width, name, type(e).__name__, e), flush=True)
    return failures


def skip_reason(model, need_openai=True):
    """Why a script cannot run here (printed as SKIP, exit 77), or None: the fixture or the openai package absent."""
    if not model or not os.path.exists(model):
        return "fixture absent: stories260K.gguf (set TINFER_SHARED)"
    if need_openai:
        try:
            import openai  # noqa: F401
        except ImportError:
            return "the openai package is absent (run scripts/setup.sh)"
    return None


def report(failures, t0):
    """The closing line of a script and its exit status."""
    print("%d failures, %.1f s" % (failures, time.time() - t0))
    return 1 if failures else 0

