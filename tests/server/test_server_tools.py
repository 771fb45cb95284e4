"""End-to-end tests of tool calling on `tinfer serve` through the official openai client (issue 25).

Qwen2.5-Coder-0.5B (a Hermes <tool_call> template, its format detected from the template): tool_choice
"required" and a named function always give calls whose arguments validate with jsonschema against the
function's parameters (greedy and seeded, over prompts x tool sets); parallel_tool_calls false gives one call;
"auto" is reported (how often the model calls on its own) and each call it makes is valid; "none" gives none;
streamed calls reassemble to the non-streamed ones; a second turn with the tool's result renders through the
template; legacy functions/function_call; bad input is a 400 naming the field and the server keeps serving.
SmolLM2-135M (the default model, too small to call tools on its own): "required" still always gives a valid
call because the grammar forces it. --tool-call-parser: an unknown name is refused at start, a known one
sets the format. Run by CTest; exit 77 = skipped (the Qwen model, openai or jsonschema absent); a check whose
model alone is absent says SKIP by name."""
import concurrent.futures
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_harness import Server, env_paths, report, run_named  # noqa: E402

TINFER, _ = env_paths()
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(REPO, "models")
QWEN = os.environ.get("TINFER_TOOL_MODEL") or os.path.join(MODELS, "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
SMOL = os.environ.get("TINFER_DEFAULT_MODEL") or os.path.join(MODELS, "SmolLM2-135M-Instruct.Q4_1.gguf")
# Small caches: these servers run beside other tests on a small machine.
QWEN_ARGS = ["--kv-memory", "256M", "--ctx", "2048", "--max-seqs", "16"]
SMOL_ARGS = ["--kv-memory", "128M", "--ctx", "1024", "--max-seqs", "16"]
WORKERS = 8  # requests in flight at once: the server batches them

# The tools: an enum, numbers, an array of strings. Strings are bounded (maxLength) so that a model the grammar
# drives against its will (SmolLM2) cannot spend its whole budget inside one string.
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 32},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"]}}}
CALC = {"type": "function", "function": {
    "name": "calculate", "description": "Apply an arithmetic operation to two numbers.",
    "parameters": {"type": "object", "properties": {
        "a": {"type": "number"}, "b": {"type": "number"},
        "op": {"type": "string", "enum": ["add", "sub", "mul", "div"]}},
        "required": ["a", "b", "op"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search_web", "description": "Search the web; one or more queries.",
    "parameters": {"type": "object", "properties": {
        "queries": {"type": "array", "items": {"type": "string", "maxLength": 32}, "minItems": 1, "maxItems": 3}},
        "required": ["queries"]}}}
ALL = [WEATHER, CALC, SEARCH]
BY_NAME = {t["function"]["name"]: t for t in ALL}
# (prompt, the tool it asks for)
PROMPTS = [("What's the weather like in Paris right now?", "get_weather"),
           ("Is it cold in Oslo today? Answer in fahrenheit.", "get_weather"),
           ("What is 37 times 91?", "calculate"),
           ("Add 1250 and 3.5 for me.", "calculate"),
           ("What is 144 divided by 12?", "calculate"),
           ("Search the web for the latest Rust release notes.", "search_web"),
           ("Find articles about the James Webb telescope.", "search_web"),
           ("Will it snow in Montreal tomorrow?", "get_weather")]
TWO_CALLS = "Tell me the weather in Tokyo, then compute 2+2."  # Qwen answers it with two calls


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def user(text):
    return [{"role": "user", "content": text}]


def other_tool(name):
    """A tool that the prompt does not ask for: the grammar must still force a call of it."""
    names = list(BY_NAME)
    return BY_NAME[names[(names.index(name) + 1) % len(names)]]


def valid_call(call, tools, where):
    """An openai ChatCompletionMessageToolCall: an id, type function, a name among tools, arguments that parse
    as JSON and validate against that function's parameters."""
    import jsonschema
    fns = {t["function"]["name"]: t["function"] for t in tools}
    check(isinstance(call.id, str) and call.id, "%s: call without an id: %s" % (where, call))
    check(call.type == "function", "%s: type %r" % (where, call.type))
    check(call.function.name in fns, "%s: name %r is not among %s" % (where, call.function.name, list(fns)))
    try:
        args = json.loads(call.function.arguments)
    except ValueError as e:
        raise AssertionError("%s: arguments are not JSON (%s): %r" % (where, e, call.function.arguments))
    try:
        jsonschema.validate(args, fns[call.function.name]["parameters"])
    except jsonschema.ValidationError as e:
        raise AssertionError("%s: arguments %s do not validate: %s" % (where, args, e.message))
    return args


def forced_ok(choice, tools, where, name=None, one=False):
    """A choice under "required" / a named function: finish_reason tool_calls, content null, valid calls."""
    m = choice.message
    check(choice.finish_reason == "tool_calls", "%s: finish_reason %r (content %r)" % (where, choice.finish_reason,
                                                                                     m.content))
    check(m.tool_calls, "%s: no tool_calls (content %r)" % (where, m.content))
    check(m.content is None, "%s: content %r beside the calls" % (where, m.content))
    check(not one or len(m.tool_calls) == 1, "%s: %d calls, expected one" % (where, len(m.tool_calls)))
    for c in m.tool_calls:
        valid_call(c, tools, where)
        check(name is None or c.function.name == name, "%s: called %r, not %r" % (where, c.function.name, name))
    check(len({c.id for c in m.tool_calls}) == len(m.tool_calls), "%s: repeated call ids" % where)


def in_parallel(fn, items):
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as ex:
        return list(ex.map(fn, items))


class Ctx:
    """The server, its client and model name, and the greedy "required" answers the streaming check reuses."""

    def __init__(self, srv, client, model):
        self.srv, self.client, self.model = srv, client, model
        self.greedy = {}  # (prompt, tool names) -> ChatCompletion

    def chat(self, messages, tools=None, max_tokens=80, temperature=0, **kw):
        if tools is not None:
            kw["tools"] = tools
        return self.client.chat.completions.create(model=self.model, messages=messages, max_tokens=max_tokens,
                                                   temperature=temperature, **kw)


def names(tools):
    return tuple(t["function"]["name"] for t in tools)


# --- Qwen2.5-Coder ---------------------------------------------------------------------------------------------

def test_required(q):
    # Greedy: every prompt with all the tools, and half of them with one tool they do not ask for (the grammar
    # alone makes that a call); seeded: the other half with their own tool, n=2. Greedy answers are written in
    # the detected format.
    greedy = [(p, ALL) for p, _ in PROMPTS] + [(p, [other_tool(t)]) for p, t in PROMPTS[1::2]] + [(TWO_CALLS, ALL)]

    def run_greedy(item):
        p, tools = item
        return item, q.chat(user(p), tools, tool_choice="required", logprobs=True)

    def run_seeded(i):
        p, t = PROMPTS[i]
        return (p, [BY_NAME[t]]), q.chat(user(p), [BY_NAME[t]], temperature=0.8, seed=1000 + i, n=2,
                                         tool_choice="required")

    t0 = time.time()
    done = in_parallel(run_greedy, greedy) + in_parallel(run_seeded, range(0, len(PROMPTS), 2))
    calls = 0
    for (p, tools), r in done:
        for ch in r.choices:
            forced_ok(ch, tools, "required %r %s #%d" % (p, names(tools), ch.index))
            calls += len(ch.message.tool_calls)
    for (p, tools), r in done[:len(greedy)]:
        q.greedy[(p, names(tools))] = r
        raw = "".join(t.token for t in r.choices[0].logprobs.content)
        check(raw.startswith('<tool_call>\n{"name": "'), "required %r: not in the Hermes format: %r" % (p, raw[:60]))
    asked = [r.choices[0].message.tool_calls[0].function.name for (p, tools), r in done[:len(PROMPTS)]]
    right = sum(a == t for a, (_, t) in zip(asked, PROMPTS))
    print("  info: %d answers, %d calls, all valid, %.1f s; with all tools the first call was the tool the prompt "
          "asks for in %d/%d" % (sum(len(r.choices) for _, r in done), calls, time.time() - t0, right, len(PROMPTS)))


def test_named(q):
    # Each tool named on a prompt that asks for another.
    items = [(p, other_tool(t)["function"]["name"]) for p, t in (PROMPTS[0], PROMPTS[2], PROMPTS[5])]

    def run(item):
        p, name = item
        return q.chat(user(p), ALL, tool_choice={"type": "function", "function": {"name": name}})

    for (p, name), r in zip(items, in_parallel(run, items)):
        forced_ok(r.choices[0], ALL, "named %s %r" % (name, p), name=name, one=True)


def test_parallel_false(q):
    one, free = in_parallel(lambda par: q.chat(user(TWO_CALLS), ALL, max_tokens=120, tool_choice="required",
                                               parallel_tool_calls=par), [False, True])
    forced_ok(one.choices[0], ALL, "parallel_tool_calls false", one=True)
    forced_ok(free.choices[0], ALL, "parallel_tool_calls true")
    print("  info: %r with parallel_tool_calls true: %d calls" % (TWO_CALLS, len(free.choices[0].message.tool_calls)))


def test_auto(q):
    rs = in_parallel(lambda pt: q.chat(user(pt[0]), ALL, max_tokens=64, tool_choice="auto"), PROMPTS)
    made = 0
    for (p, _), r in zip(PROMPTS, rs):
        ch = r.choices[0]
        if ch.message.tool_calls:
            made += 1
            check(ch.finish_reason == "tool_calls", "auto %r: calls but finish_reason %r" % (p, ch.finish_reason))
            for c in ch.message.tool_calls:
                valid_call(c, ALL, "auto %r" % p)
        else:
            check(ch.finish_reason != "tool_calls", "auto %r: finish_reason tool_calls without calls" % p)
            check(isinstance(ch.message.content, str), "auto %r: content %r" % (p, ch.message.content))
    # No assertion on the rate: Qwen2.5-Coder-0.5B mostly writes the call's JSON bare or in a ```json block
    # instead of inside <tool_call> tags, which is text, not a Hermes call.
    print("  info: auto: the model called a tool on %d/%d prompts that need one" % (made, len(PROMPTS)))


def test_none(q):
    rs = in_parallel(lambda pt: q.chat(user(pt[0]), ALL, max_tokens=16, tool_choice="none"), PROMPTS[:2])
    for (p, _), r in zip(PROMPTS, rs):
        ch = r.choices[0]
        check(ch.message.tool_calls is None, "none %r: tool_calls %s" % (p, ch.message.tool_calls))
        check(ch.finish_reason in ("stop", "length"), "none %r: finish_reason %r" % (p, ch.finish_reason))
        check(isinstance(ch.message.content, str) and ch.message.content, "none %r: content %r" % (p,
                                                                                                 ch.message.content))


def reassemble(stream, where):
    """Streamed chunks -> (content, {index: [id, name, arguments]}, finish_reason), checking the delta shape:
    id, type and name in a call's first delta and never again; arguments in pieces."""
    content, calls, finish = "", {}, None
    for chunk in stream:
        for ch in chunk.choices:
            d = ch.delta
            content += d.content or ""
            for tc in d.tool_calls or []:
                if tc.index not in calls:
                    check(tc.id and tc.type == "function" and tc.function and tc.function.name,
                          "%s: first delta of call %d lacks id/type/name: %s" % (where, tc.index, tc))
                    calls[tc.index] = [tc.id, tc.function.name, ""]
                else:
                    check(tc.id is None and (tc.function is None or tc.function.name is None),
                          "%s: id/name repeated in a later delta: %s" % (where, tc))
                calls[tc.index][2] += (tc.function and tc.function.arguments) or ""
            finish = ch.finish_reason or finish
    check(sorted(calls) == list(range(len(calls))), "%s: call indexes %s" % (where, sorted(calls)))
    return content, calls, finish


def test_stream_reassembles(q):
    keys = [(PROMPTS[0][0], ALL), (PROMPTS[3][0], [other_tool(PROMPTS[3][1])]), (TWO_CALLS, ALL)]  # in greedy

    def run(key):
        p, tools = key
        return reassemble(q.chat(user(p), tools, tool_choice="required", stream=True), "stream %r" % p)

    for (p, tools), (content, calls, finish) in zip(keys, in_parallel(run, keys)):
        ref = q.greedy[(p, names(tools))].choices[0]
        want = [(c.function.name, c.function.arguments) for c in ref.message.tool_calls]
        got = [(calls[i][1], calls[i][2]) for i in sorted(calls)]
        check(got == want, "stream %r: %s, non-streamed %s" % (p, got, want))
        check(finish == "tool_calls" and ref.finish_reason == "tool_calls",
              "stream %r: finish_reason %r / %r" % (p, finish, ref.finish_reason))
        check(content == "", "stream %r: content %r beside the calls" % (p, content))


def test_second_turn(q):
    p = PROMPTS[0][0]
    first = q.greedy[(p, names(ALL))].choices[0].message
    call = first.tool_calls[0]
    result = json.dumps({"city": "Paris", "temperature_c": 18, "condition": "sunny"})
    msgs = user(p) + [first.model_dump(exclude_none=True),
                      {"role": "tool", "tool_call_id": call.id, "content": result}]
    r = q.chat(msgs, ALL, max_tokens=40)
    ch = r.choices[0]
    check(ch.finish_reason in ("stop", "length", "tool_calls"), "second turn: finish_reason %r" % ch.finish_reason)
    check(ch.message.content or ch.message.tool_calls, "second turn: empty answer")
    # The prompt the template rendered: the call as the model writes one (arguments an object, not a string of
    # JSON) and the tool's result in a <tool_response> block.
    st, _, body = q.srv.request("POST", "/tokenize", {"messages": msgs, "tools": ALL})
    check(st == 200, "/tokenize: %s %s" % (st, body[:200]))
    st, _, body = q.srv.request("POST", "/detokenize", {"tokens": json.loads(body)["tokens"]})
    prompt = json.loads(body)["prompt"]
    check("<tool_response>\n%s\n</tool_response>" % result in prompt, "second turn: the tool result is not "
          "rendered: ...%r" % prompt[-300:])
    written = '{"name": "%s", "arguments": %s}' % (call.function.name, call.function.arguments)
    check(written in prompt, "second turn: the assistant's call is not rendered as %r: ...%r" % (written,
                                                                                              prompt[-400:]))
    print("  info: second turn (%s, %d prompt tokens): %r" % (ch.finish_reason, r.usage.prompt_tokens,
                                                             (ch.message.content or "")[:80]))


def test_legacy_functions(q):
    fns = [t["function"] for t in ALL]
    p = PROMPTS[2][0]
    r = q.chat(user(p), functions=fns, function_call={"name": "calculate"})
    ch = r.choices[0]
    check(ch.finish_reason == "function_call", "legacy: finish_reason %r" % ch.finish_reason)
    fc = ch.message.function_call
    check(fc and fc.name == "calculate", "legacy: function_call %s (content %r)" % (fc, ch.message.content))
    check(not ch.message.tool_calls, "legacy: tool_calls %s" % ch.message.tool_calls)
    import jsonschema
    jsonschema.validate(json.loads(fc.arguments), CALC["function"]["parameters"])
    name, args, finish = None, "", None
    for chunk in q.chat(user(p), functions=fns, function_call={"name": "calculate"}, stream=True):
        for c in chunk.choices:
            if c.delta.function_call:
                name = name or c.delta.function_call.name
                args += c.delta.function_call.arguments or ""
            finish = c.finish_reason or finish
    check((name, args, finish) == ("calculate", fc.arguments, "function_call"),
          "legacy stream: %s, non-streamed %s" % ((name, args, finish), (fc.name, fc.arguments)))


def many_tools(n, rich):
    """n distinct tools; rich: each with a description and a parameters schema (~250 bytes a tool)."""
    out = []
    for i in range(n):
        f = {"name": "tool_%05d" % i}
        if rich:
            f["description"] = "Tool number %d of a large catalogue; looks things up by key." % i
            f["parameters"] = {"type": "object", "properties": {"key": {"type": "string"}, "limit": {
                "type": "integer", "minimum": 1}}, "required": ["key"]}
        out.append({"type": "function", "function": f})
    return out


def bad_cases():
    """(what, request fields, the param the 400 must name)."""
    nameless = {"type": "function", "function": {"description": "no name"}}
    return [("unknown named function", {"tools": ALL, "tool_choice": {"type": "function", "function": {"name": "x"}}},
             "tool_choice"),
            ("required without tools", {"tool_choice": "required"}, "tool_choice"),
            ("bad name", {"tools": [{"type": "function", "function": {"name": "get weather!"}}]},
             "tools[0].function.name"),
            ("missing name", {"tools": [nameless]}, "tools[0].function.name"),
            ("missing function", {"tools": [WEATHER, {"type": "function"}]}, "tools[1].function"),
            ("type retrieval", {"tools": [{"type": "retrieval"}]}, "tools[0].type"),
            ("duplicate names", {"tools": [WEATHER, CALC, WEATHER]}, "tools"),
            ("129 tools", {"tools": many_tools(129, False)}, "tools"),
            ("10,000 tools", {"tools": many_tools(10000, False)}, "tools"),
            ("required + response_format", {"tools": ALL, "tool_choice": "required",
                                            "response_format": {"type": "json_object"}}, "response_format"),
            ("parallel_tool_calls not a boolean", {"tools": ALL, "parallel_tool_calls": "yes"},
             "parallel_tool_calls"),
            ("functions and tools", {"tools": ALL, "functions": [CALC["function"]]}, "functions"),
            ("function_call naming an unknown function", {"functions": [CALC["function"]],
                                                          "function_call": {"name": "nope"}}, "function_call"),
            ("parameters not an object", {"tools": [{"type": "function", "function": {"name": "f", "parameters": 3}}]},
             "tools[0].function.parameters"),
            ("parameters of type array", {"tools": [WEATHER, {"type": "function", "function": {
                "name": "f", "parameters": {"type": "array"}}}], "tool_choice": "required"},
             "tools[1].function.parameters")]


def expect_400(q, what, fields, param):
    import openai
    t = time.time()
    try:
        q.chat(user("hi"), max_tokens=4, **fields)
    except openai.BadRequestError as e:
        body = e.body or {}
        check(body.get("param") == param, "%s: 400 names %r, not %r: %s" % (what, body.get("param"), param, body))
        check(param.split("[")[0].split(".")[0] in body.get("message", ""), "%s: message %r" % (what, body))
        check(time.time() - t < 10, "%s: the refusal took %.1f s" % (what, time.time() - t))
        return
    raise AssertionError("%s: accepted" % what)


def still_serving(q, where):
    r = q.chat(user("Say hi."), max_tokens=2)
    check(r.choices[0].finish_reason in ("stop", "length"), "%s: the server stopped serving" % where)


def test_bad_input(q):
    for what, fields, param in bad_cases():
        expect_400(q, what, dict(fields), param)
    st, _, _ = q.srv.request("GET", "/health")
    check(st == 200 and q.srv.proc.poll() is None, "the server died on bad input")
    still_serving(q, "after bad input")


def test_huge_tools(q):
    """10,000 tools with schemas are over the 1 MiB default body limit: 413, quickly, and the server serves on."""
    import openai
    tools = many_tools(10000, True)
    size = len(json.dumps({"messages": user("hi"), "tools": tools}))
    check(size > 1 << 20, "the rich catalogue is only %d bytes" % size)
    t = time.time()
    try:
        q.chat(user("hi"), tools, max_tokens=4)
        raise AssertionError("a %d-byte body was accepted" % size)
    except openai.APIStatusError as e:
        check(e.status_code == 413, "%d-byte body: %d %s" % (size, e.status_code, e.body))
    check(time.time() - t < 10, "the 413 took %.1f s" % (time.time() - t))
    still_serving(q, "after a 413")


def qwen_tests():
    import openai
    t = time.time()
    srv = Server(TINFER, QWEN, *QWEN_ARGS, ready_timeout=120)
    print("  info: Qwen2.5-Coder server ready in %.1f s" % (time.time() - t), flush=True)
    client = openai.OpenAI(base_url=srv.base_url + "/v1", api_key="unused", max_retries=0, timeout=120)
    q = Ctx(srv, client, client.models.list().data[0].id)
    tests = [("required_valid_calls", test_required), ("named_function", test_named),
             ("parallel_tool_calls_false", test_parallel_false), ("auto_calls_valid", test_auto),
             ("none_no_calls", test_none), ("stream_reassembles", test_stream_reassembles),
             ("second_turn_tool_result", test_second_turn), ("legacy_functions", test_legacy_functions),
             ("bad_input_400", test_bad_input), ("huge_tools_413", test_huge_tools)]
    try:
        return run_named([(n, (lambda f: lambda: f(q))(f)) for n, f in tests])
    finally:
        srv.stop()


# --- SmolLM2 (the default model) and --tool-call-parser ---------------------------------------------------------

def test_smol_required(q):
    # SmolLM2 pads JSON with whitespace: room for it, and one call each (it would repeat calls when allowed). The
    # budget covers search_web's longest call: SmolLM2 spells digits one token each, and greedy on an AVX2 host it
    # answers "37 times 91" with all tools by three 32-digit queries (about 150 tokens with the tags).
    items = [(p, tools, temp) for p, t in PROMPTS[::2] for tools, temp in (([BY_NAME[t]], 0), (ALL, 0), (ALL, 0.9))]

    def run(item):
        p, tools, temp = item
        return q.chat(user(p), tools, max_tokens=256, temperature=temp, seed=7, tool_choice="required",
                      parallel_tool_calls=False)

    for (p, tools, temp), r in zip(items, in_parallel(run, items)):
        forced_ok(r.choices[0], tools, "smol required %r %s t=%g" % (p, names(tools), temp), one=True)
    named = q.chat(user("hello"), ALL, max_tokens=160, tool_choice={"type": "function",
                                                                    "function": {"name": "calculate"}})
    forced_ok(named.choices[0], ALL, "smol named calculate", name="calculate", one=True)


def test_smol_huge_tools(q):
    """With --max-body-bytes 8 MiB, 10,000 rich tools reach the parser: a 400 naming tools, quickly."""
    t = time.time()
    expect_400(q, "10,000 rich tools", {"tools": many_tools(10000, True)}, "tools")
    check(time.time() - t < 10, "10,000 tools took %.1f s" % (time.time() - t))
    still_serving(q, "after 10,000 tools")


def test_parser_flag_hermes(q):
    r = q.chat(user("weather?"), [WEATHER], max_tokens=160, tool_choice="required", parallel_tool_calls=False,
               logprobs=True)
    forced_ok(r.choices[0], [WEATHER], "--tool-call-parser hermes", one=True)
    raw = "".join(t.token for t in r.choices[0].logprobs.content)
    check(raw.startswith("<tool_call>\n{\"name\": \"get_weather\""), "hermes raw output %r" % raw[:80])


def test_parser_flag_pythonic():
    import openai
    srv = Server(TINFER, SMOL, *SMOL_ARGS, "--tool-call-parser", "pythonic")
    try:
        client = openai.OpenAI(base_url=srv.base_url + "/v1", api_key="unused", max_retries=0, timeout=120)
        q = Ctx(srv, client, client.models.list().data[0].id)
        r = q.chat(user("weather?"), [WEATHER], max_tokens=160, tool_choice="required", parallel_tool_calls=False,
                   logprobs=True)
        forced_ok(r.choices[0], [WEATHER], "--tool-call-parser pythonic", one=True)
        raw = "".join(t.token for t in r.choices[0].logprobs.content)
        check(raw.lstrip().startswith("[get_weather("), "pythonic raw output %r" % raw[:80])
    finally:
        srv.stop()


def test_parser_flag_unknown():
    t = time.time()
    p = subprocess.run([TINFER, "serve", "-m", SMOL, "--port", "0", "--tool-call-parser", "nope", *SMOL_ARGS],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode != 0, "serve --tool-call-parser nope exited %d" % p.returncode)
    for word in ("nope", "hermes", "llama3_json", "mistral", "pythonic", "qwen3_coder"):
        check(word in p.stderr, "the refusal does not name %r: %r" % (word, p.stderr[-300:]))
    check(time.time() - t < 30, "the refusal took %.1f s" % (time.time() - t))


def smol_tests():
    import openai
    srv = Server(TINFER, SMOL, *SMOL_ARGS, "--tool-call-parser", "hermes", "--max-body-bytes", "8388608")
    client = openai.OpenAI(base_url=srv.base_url + "/v1", api_key="unused", max_retries=0, timeout=120)
    q = Ctx(srv, client, client.models.list().data[0].id)
    tests = [("smol_required_valid_calls", lambda: test_smol_required(q)),
             ("smol_10000_tools_400", lambda: test_smol_huge_tools(q)),
             ("parser_flag_hermes", lambda: test_parser_flag_hermes(q))]
    try:
        failures = run_named(tests)
    finally:
        srv.stop()
    return failures + run_named([("parser_flag_pythonic", test_parser_flag_pythonic),
                                 ("parser_flag_unknown", test_parser_flag_unknown)])


def skip_reason():
    if not os.path.exists(QWEN):
        return "Qwen2.5-Coder absent: %s (scripts/setup.sh fetches it)" % QWEN
    for mod in ("openai", "jsonschema"):
        try:
            __import__(mod)
        except ImportError:
            return "the %s package is absent (run scripts/setup.sh)" % mod
    return None


def main():
    why = skip_reason()
    if why:
        print("SKIP: " + why)
        return 77
    t0 = time.time()
    failures = qwen_tests()
    if os.path.exists(SMOL):
        failures += smol_tests()
    else:
        print("  SKIP smol_*, parser_flag_*: default model absent (%s)" % SMOL, flush=True)
    return report(failures, t0)


if __name__ == "__main__":
    sys.exit(main())
