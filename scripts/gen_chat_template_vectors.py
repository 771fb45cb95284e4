#!/usr/bin/env python3
"""Renders every chat template under tests/data/chat_templates/templates with Python's jinja2, the way
Hugging Face transformers does (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols,
its tojson, raise_exception and strftime_now), for every conversation in conversations.json, and writes
expected.json: the C++ interpreter must reproduce each output byte for byte, or fail where Python fails.

    .venv/bin/python scripts/gen_chat_template_vectors.py    # rewrites tests/data/chat_templates/expected.json
"""
import datetime
import json
import os
import sys

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "chat_templates")
FIXED_NOW = datetime.datetime(2024, 7, 26, 9, 30)  # the C++ test's clock says the same


class TemplateRaised(Exception):
    pass


def raise_exception(message):
    raise TemplateRaised(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # transformers' override: no HTML escaping, keys in insertion order.
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return FIXED_NOW.strftime(fmt)


def make_env():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def reads_content_parts(env, source):
    """Mirrors the C++ side: content parts are passed as a list when the template uses 'text' as a
    string constant or attribute name; otherwise as their joined text."""
    ast = env.parse(source)
    for node in ast.find_all((jinja2.nodes.Const, jinja2.nodes.Getattr)):
        if isinstance(node, jinja2.nodes.Const) and node.value == "text":
            return True
        if isinstance(node, jinja2.nodes.Getattr) and node.attr == "text":
            return True
    return False


def prepare(messages, parts_as_list):
    out = []
    for m in messages:
        m = dict(m)
        c = m.get("content")
        if isinstance(c, list) and not parts_as_list:
            m["content"] = "".join(p["text"] for p in c)
        out.append(m)
    return out


def main():
    env = make_env()
    manifest = json.load(open(os.path.join(HERE, "templates.json")))
    conversations = json.load(open(os.path.join(HERE, "conversations.json")))
    expected = {}
    for name, info in manifest.items():
        source = open(os.path.join(HERE, "templates", info["file"]), encoding="utf-8").read()
        tmpl = env.from_string(source)
        parts = reads_content_parts(env, source)
        results = {}
        for conv in conversations:
            kwargs = dict(conv.get("kwargs", {}))
            try:
                text = tmpl.render(
                    messages=prepare(conv["messages"], parts),
                    tools=conv.get("tools"),
                    documents=None,
                    add_generation_prompt=conv.get("add_generation_prompt", True),
                    bos_token=info.get("bos_token", ""),
                    eos_token=info.get("eos_token", ""),
                    **kwargs,
                )
                results[conv["name"]] = {"text": text}
            except TemplateRaised as e:
                results[conv["name"]] = {"raised": str(e)}
            except Exception as e:  # noqa: BLE001 - any failure must be a failure in C++ too
                results[conv["name"]] = {"error": type(e).__name__ + ": " + str(e)}
        expected[name] = results
    with open(os.path.join(HERE, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, indent=1, sort_keys=True)
        f.write("\n")
    n = sum(len(v) for v in expected.values())
    fails = sum(1 for v in expected.values() for r in v.values() if "text" not in r)
    print(f"{len(expected)} templates x {len(conversations)} conversations: {n} vectors ({fails} raise or fail)")


if __name__ == "__main__":
    sys.exit(main())
