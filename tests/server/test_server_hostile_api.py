"""Issue 26 §2.6/§2.7, the hostile round's API deviations, against `tinfer serve` on stories260K: `stream_options`
without `stream: true` is a 400 (OpenAI, vLLM); GET /v1/models/{id} answers each served id (both when routed; the
openai client's models.retrieve works) and 404 model_not_found otherwise; integer fields take whole-number floats
everywhere (best_of, /detokenize) and refuse fractions naming the field; integers beyond int64 in tools render as
integers through the template's tojson; `bearer KEY` in any case is accepted, two Authorization headers are refused,
and the key is checked before 404/405; the 408 message says "1 s"/"1.5 s"; --max-body-bytes takes K/M; response
ids are not derived from the clock (each is checked against the old clock-xor-counter scheme).
Run by CTest; exit 77 = skipped (fixture or venv absent). Every wait is bounded."""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_harness import run_named, report, skip_reason, Server, env_paths  # noqa: E402

TINFER, MODEL = env_paths()
KEY = "hostile-key"
C, CHAT = "/v1/completions", "/v1/chat/completions"
BIG = 18446744073709551615  # 2^64 - 1: nlohmann's unsigned, beyond int64


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def error_of(status, data):
    try:
        return json.loads(data)["error"]
    except (ValueError, KeyError, TypeError):
        raise AssertionError("status %d without an OpenAI error body: %r" % (status, data[:300]))


def expect_400(srv, path, body, param, headers=None, contains=None):
    st, _, data = srv.request("POST", path, body, headers=headers)
    check(st == 400, "%s %s: status %d (want 400): %r" % (path, body, st, data[:300]))
    err = error_of(st, data)
    check(err.get("param") == param, "param %r (want %r): %s" % (err.get("param"), param, err))
    if contains:
        check(contains in err["message"], "message %r lacks %r" % (err["message"], contains))
    return err


def expect_ok(srv, path, body, headers=None):
    st, _, data = srv.request("POST", path, body, headers=headers)
    check(st == 200, "%s %s: status %d: %r" % (path, body, st, data[:300]))
    return data


def raw_request(port, head_lines, body=b"", timeout=10):
    """Sends one request with exactly these header lines (duplicates kept); returns (status, body bytes)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(("\r\n".join(head_lines) + "\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(body)).encode()
                  + body)
        data = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
    finally:
        s.close()
    head, _, rest = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), rest


# --- 6a -------------------------------------------------------------------------------------------------------------
def test_stream_options_need_stream(srv):
    chat = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    for path, base in ((C, {"prompt": "Once", "max_tokens": 2}), (CHAT, chat)):
        for stream in ({}, {"stream": False}, {"stream": None}):
            expect_400(srv, path, dict(base, stream_options={"include_usage": True}, **stream), "stream_options",
                       contains="stream")
        # An empty object asks for nothing (vLLM's truthiness); null is "not given"; with a stream it is served.
        expect_ok(srv, path, dict(base, stream_options={}))
        expect_ok(srv, path, dict(base, stream_options=None))
        data = expect_ok(srv, path, dict(base, stream=True, stream_options={"include_usage": True}))
        check(b'"usage"' in data and data.rstrip().endswith(b"data: [DONE]"), "stream with usage: %r" % data[-300:])


# --- 6b -------------------------------------------------------------------------------------------------------------
def check_models_by_id(srv, ids, headers=None):
    st, _, data = srv.request("GET", "/v1/models", headers=headers)
    listed = json.loads(data)["data"]
    check([m["id"] for m in listed] == ids, "listed ids %s (want %s)" % ([m["id"] for m in listed], ids))
    for m in listed:
        quoted = m["id"].replace("/", "%2F")
        for path in ("/v1/models/" + m["id"], "/v1/models/" + quoted):
            st, _, data = srv.request("GET", path, headers=headers)
            check(st == 200 and json.loads(data) == m, "GET %s: %d %r (want %s)" % (path, st, data[:300], m))
    st, h, data = srv.request("GET", "/v1/models/gpt-4", headers=headers)
    check(st == 404 and error_of(st, data).get("code") == "model_not_found", "unknown id: %d %r" % (st, data[:300]))
    st, h, data = srv.request("DELETE", "/v1/models/" + ids[0], headers=headers)
    check(st == 405 and h.get("allow") == "GET, HEAD", "DELETE a model: %d %s" % (st, h))


def test_models_retrieve(srv):
    check_models_by_id(srv, ["stories260K"])
    import openai
    client = openai.OpenAI(base_url=srv.base_url + "/v1", api_key="x")
    m = client.models.retrieve("stories260K")
    check(m.id == "stories260K" and m.object == "model", "retrieve: %s" % m)
    try:
        client.models.retrieve("gpt-4")
        raise AssertionError("retrieving an unknown model succeeded")
    except openai.NotFoundError as e:
        check(e.status_code == 404, "unknown model: %s" % e)


def test_models_retrieve_named_and_routed():
    # A served name with a '/' (as org/model names are): the id is the whole rest of the path, quoted or not.
    srv = Server(TINFER, MODEL, "--kv-memory", "8M", "--served-model-name", "org/tiny", "-t", "1")
    try:
        check_models_by_id(srv, ["org/tiny"])
    finally:
        srv.stop()
    with tempfile.TemporaryDirectory() as d:
        small = os.path.join(d, "stories-small.gguf")
        out = subprocess.run([TINFER, "derive", "-m", MODEL, "--keep-layers", "0-1", "-o", small],
                             capture_output=True, text=True, timeout=60)
        check(out.returncode == 0, "derive: " + out.stderr[-300:])
        srv = Server(TINFER, None, "--model-large", MODEL, "--model-small", small, "--route", "explicit", "-t", "1",
                     "--kv-memory", "8M")
        try:
            check_models_by_id(srv, ["stories260K", "stories-small"])
        finally:
            srv.stop()


# --- 6c -------------------------------------------------------------------------------------------------------------
def test_whole_number_floats(srv):
    base = {"prompt": "Once", "max_tokens": 2.0, "temperature": 0}
    expect_ok(srv, C, dict(base, n=2.0, best_of=2.0))
    expect_ok(srv, C, dict(base, n=2, best_of=2.0))
    expect_400(srv, C, dict(base, n=2, best_of=1.5), "best_of", contains="integer")
    expect_400(srv, C, dict(base, n=2, best_of=3.0), "best_of", contains="best_of must equal n")
    ids = json.loads(srv.request("POST", "/tokenize", {"prompt": "Once upon a time"})[2])["tokens"]
    want = json.loads(expect_ok(srv, "/detokenize", {"tokens": ids}))["prompt"]
    got = json.loads(expect_ok(srv, "/detokenize", {"tokens": [float(t) for t in ids]}))["prompt"]
    check(got == want, "detokenize floats %r != ints %r" % (got, want))
    err = expect_400(srv, "/detokenize", {"tokens": [ids[0], 1.5]}, "tokens[1]", contains="must be an integer")
    check("tokens[1]" in err["message"], "message names the entry: %s" % err)
    expect_400(srv, "/detokenize", {"tokens": [10 ** 7]}, "tokens", contains="vocabulary size")


# --- 6d -------------------------------------------------------------------------------------------------------------
def test_big_integers_in_tools():
    with tempfile.TemporaryDirectory() as d:
        tmpl = os.path.join(d, "tools.jinja")
        with open(tmpl, "w") as f:
            f.write("{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}|{{ tools | tojson }}|")
        srv = Server(TINFER, MODEL, "--kv-memory", "8M", "--chat-template", tmpl, "-t", "1")
        try:
            params = {"type": "object", "properties": {"x": {"type": "integer", "minimum": -2 ** 63, "maximum": BIG},
                                                       "y": {"type": "integer", "maximum": 2 ** 63}}}
            tools = [{"type": "function", "function": {"name": "f", "parameters": params}}]
            data = expect_ok(srv, "/tokenize", {"messages": [{"role": "user", "content": "hi"}], "tools": tools})
            text = json.loads(expect_ok(srv, "/detokenize", {"tokens": json.loads(data)["tokens"]}))["prompt"]
            for digits in (str(BIG), str(2 ** 63), str(-2 ** 63)):
                check(digits in text.replace(" ", ""), "%s not in the rendered prompt %r" % (digits, text))
            check("e+19" not in text and "e+18" not in text, "an integer rendered as a float: %r" % text)
        finally:
            srv.stop()


# --- 6e -------------------------------------------------------------------------------------------------------------
def test_auth_scheme_duplicates_and_order():
    os.environ["TINFER_API_KEY"] = KEY  # the server inherits it (the --api-key flag would be visible in ps)
    try:
        srv = Server(TINFER, MODEL, "--kv-memory", "8M", "-t", "1")
    finally:
        del os.environ["TINFER_API_KEY"]
    try:
        port = srv.port
        get = ["GET /v1/models HTTP/1.1", "Host: x"]
        for scheme in ("Bearer", "bearer", "BEARER", "bEaReR"):
            st, body = raw_request(port, get + ["Authorization: %s %s" % (scheme, KEY)])
            check(st == 200, "scheme %r: %d %r" % (scheme, st, body[:200]))
        st, _ = raw_request(port, get + ["Authorization: Bearer  " + KEY])
        check(st == 200, "two spaces after the scheme (RFC 9110: 1*SP): %d" % st)
        for bad in ("Basic " + KEY, "Bearer " + KEY + "x", "Bearer", "bearer" + KEY, KEY):
            st, _ = raw_request(port, get + ["Authorization: " + bad])
            check(st == 401, "%r: %d (want 401)" % (bad, st))
        good, wrong = "Authorization: Bearer " + KEY, "Authorization: Bearer nope"
        for pair in ((good, wrong), (wrong, good), (good, good)):
            st, body = raw_request(port, get + list(pair))
            check(st == 401 and b"more than one" in body, "two Authorization headers %s: %d %r" % (pair, st, body[:200]))
        # The key first: an unknown /v1 path or a wrong method is 401 without it, 404/405 with it.
        for method, path, with_key in (("GET", "/v1/nothing", 404), ("POST", "/v1/models", 405),
                                       ("GET", C, 405), ("DELETE", "/v1/models/x", 405), ("GET", "/v1/models/x", 404),
                                       ("GET", "/tokenize", 405)):
            st, _ = raw_request(port, ["%s %s HTTP/1.1" % (method, path), "Host: x"])
            check(st == 401, "%s %s without the key: %d (want 401)" % (method, path, st))
            st, _ = raw_request(port, ["%s %s HTTP/1.1" % (method, path), "Host: x", good])
            check(st == with_key, "%s %s with the key: %d (want %d)" % (method, path, st, with_key))
        st, _ = raw_request(port, ["GET /health HTTP/1.1", "Host: x"])
        check(st == 200, "/health needs no key: %d" % st)
    finally:
        srv.stop()


# --- 7 --------------------------------------------------------------------------------------------------------------
def test_timeout_message_and_body_suffix():
    srv = Server(TINFER, MODEL, "--kv-memory", "8M", "-t", "1", "--header-timeout", "1", "--body-timeout", "1.5",
                 "--max-body-bytes", "2K")
    try:
        for partial, want in ((b"GET /v1/models HTTP/1.1\r\nHost: x\r\n", b"within 1 s"),
                              (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{",
                               b"within 1.5 s")):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            s.sendall(partial)
            data = b""
            while True:
                d = s.recv(65536)
                if not d:
                    break
                data += d
            s.close()
            check(data.startswith(b"HTTP/1.1 408") and want in data, "408 %r: %r" % (want, data[-300:]))
        # 2K = 2048 bytes: a 3000-byte body is 413, a 1000-byte one is served.
        st, _, _ = srv.request("POST", C, {"prompt": "x" * 3000, "max_tokens": 1})
        check(st == 413, "3000 bytes under --max-body-bytes 2K: %d" % st)
        st, _, data = srv.request("POST", C, {"prompt": "Once " * 100, "max_tokens": 1})
        check(st == 200, "1000 bytes under 2K: %d %r" % (st, data[:200]))
    finally:
        srv.stop()
    out = subprocess.run([TINFER, "serve", "--help"], capture_output=True, text=True, timeout=30)
    text = out.stdout + out.stderr
    check("at most 4096" not in text and "the model's trained context" in text, "serve --help on -c: %s" % text[:3000])
    check("16M" in text, "serve --help on --max-body-bytes suffixes")


def old_scheme_match(hex16, now_ns):
    """Whether an id is the old clock ^ (counter * golden ratio) for a counter below 4096, within 120 s of now."""
    x = int(hex16, 16)
    for c in range(4096):
        if abs((x ^ ((c * 0x9E3779B97F4A7C15) & (2 ** 64 - 1))) - now_ns) < 120 * 10 ** 9:
            return True
    return False


def test_response_ids_random(srv):
    ids = []
    for i in range(12):
        path, body = (C, {"prompt": "Once", "max_tokens": 1}) if i % 2 else \
            (CHAT, {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1})
        ids.append((path, json.loads(expect_ok(srv, path, body))["id"]))
    now = time.monotonic_ns()  # CLOCK_MONOTONIC: the server's steady_clock
    for path, rid in ids:
        pat = r"chatcmpl-[0-9a-f]{16}" if path == CHAT else r"cmpl-[0-9a-f]{16}"
        check(re.fullmatch(pat, rid), "id format %r" % rid)
        check(not old_scheme_match(rid.split("-", 1)[1], now), "id %s is the clock xor a counter" % rid)
    check(len({r for _, r in ids}) == len(ids), "ids repeat: %s" % ids)


def main():
    t0 = time.time()
    why = skip_reason(MODEL)
    if why:
        print("SKIP: " + why)
        return 77
    srv = Server(TINFER, MODEL, "--kv-memory", "8M", "-t", "1")
    try:
        failures = run_named([("stream_options_need_stream", lambda: test_stream_options_need_stream(srv)),
                              ("models_retrieve", lambda: test_models_retrieve(srv)),
                              ("whole_number_floats", lambda: test_whole_number_floats(srv)),
                              ("response_ids_random", lambda: test_response_ids_random(srv))], width=30)
    finally:
        srv.stop()
    failures += run_named([("models_retrieve_named_routed", test_models_retrieve_named_and_routed),
                           ("big_integers_in_tools", test_big_integers_in_tools),
                           ("auth_scheme_dups_order", test_auth_scheme_duplicates_and_order),
                           ("timeout_msg_body_suffix", test_timeout_message_and_body_suffix)], width=30)
    return report(failures, t0)


if __name__ == "__main__":
    sys.exit(main())
