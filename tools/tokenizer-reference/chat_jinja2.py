"""Renders chat-template cases with Python Jinja2 as transformers' apply_chat_template does.

usage: python3 chat_jinja2.py < cases.json   (the JSON that chat_families.mjs prints)

The environment is transformers': ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks
and loop controls; its tojson filter and the raise_exception and strftime_now globals
(strftime_now formats 26 Jul 2024 00:00, the time the JS reference is given). Prints a JSON list
with {"expected": text or null, "error": message or null} per case, in order.
"""
import datetime
import json
import sys

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class Generation(Extension):
    """transformers' {% generation %} blocks: the body renders as is."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.If(jinja2.nodes.Const(True), body, [], []).set_lineno(lineno)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def main():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols, Generation])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.datetime(2024, 7, 26).strftime(fmt)
    results = []
    compiled = {}
    for case in json.load(sys.stdin)["cases"]:
        try:
            if case["template"] not in compiled:
                compiled[case["template"]] = env.from_string(case["template"])
            results.append({"expected": compiled[case["template"]].render(**case["context"]), "error": None})
        except Exception as e:  # the template's own errors and Python's TypeErrors alike
            results.append({"expected": None, "error": f"{type(e).__name__}: {e}"})
    json.dump(results, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
