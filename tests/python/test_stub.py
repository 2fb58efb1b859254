"""The type stubs (python/hfstatic/_hfstatic.pyi) against the compiled module: the same public
names, classes with the same members, and functions with the same parameters in the same order."""

import ast
import inspect
import os
import re

import pytest

import hfstatic._hfstatic as module

SOURCE_DIR = os.environ.get("HFSTATIC_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
STUB = os.path.join(SOURCE_DIR, "python", "hfstatic", "_hfstatic.pyi")


def stub_tree():
    with open(STUB, encoding="utf-8") as f:
        return ast.parse(f.read())


def stub_parameters(node):
    """Parameter names of a stub def, self included, in order (keyword-only after positional)."""
    a = node.args
    return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]


def module_parameters(obj):
    """Parameter names of a pybind11 function, read from each overload's signature line."""
    doc = obj.__doc__ or ""
    lines = doc.splitlines()
    signatures = [l for l in lines if re.match(r"^(\d+\. )?%s\(" % re.escape(obj.__name__), l)]
    if len(signatures) > 1:  # "name(*args, **kwargs)" then one numbered line per overload
        signatures = [l for l in signatures if re.match(r"^\d+\. ", l)]
    out = []
    for s in signatures:
        inside = s[s.index("(") + 1 : s.rindex(") ->") if ") ->" in s else s.rindex(")")]
        names, depth, token = [], 0, ""
        for ch in inside + ",":
            if ch in "[(":
                depth += 1
            elif ch in "])":
                depth -= 1
            if ch == "," and depth == 0:
                name = token.split(":")[0].split("=")[0].strip()
                if name and name != "*":
                    names.append(name)
                token = ""
            else:
                token += ch
        out.append(names)
    return out


def public(names):
    return {n for n in names if not n.startswith("_")}


def stub_classes(tree):
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


def stub_functions(body):
    return {n.name: n for n in body if isinstance(n, ast.FunctionDef)}


def test_the_stub_names_exactly_the_public_names_of_the_module():
    tree = stub_tree()
    stubbed = set(stub_classes(tree)) | set(stub_functions(tree.body))
    assert public(stubbed) == public(dir(module))


@pytest.mark.parametrize("name", sorted(stub_classes(stub_tree())))
def test_each_class_has_the_members_its_stub_declares(name):
    node = stub_classes(stub_tree())[name]
    cls = getattr(module, name)
    declared = public(n.name for n in node.body if isinstance(n, ast.FunctionDef))
    base = Exception if issubclass(cls, BaseException) else object
    own = public(n for n in dir(cls) if n not in dir(base))
    assert declared == own
    for fn in stub_functions(node.body).values():
        member = inspect.getattr_static(cls, fn.name)
        is_property = any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list)
        assert isinstance(member, property) == is_property, fn.name
        if is_property or fn.name.startswith("__"):
            continue
        signatures = module_parameters(getattr(cls, fn.name))
        assert stub_parameters(fn) in signatures, (fn.name, signatures)


@pytest.mark.parametrize("name", sorted(stub_functions(stub_tree().body)))
def test_each_function_takes_the_parameters_its_stub_declares(name):
    fn = stub_functions(stub_tree().body)[name]
    assert stub_parameters(fn) in module_parameters(getattr(module, name))


def test_the_parameter_reader_sees_a_missing_parameter():
    # The check above would pass vacuously if the signatures came back empty.
    params = module_parameters(module.Runner.generate)
    assert params and params[0][:2] == ["self", "prompt"] and "lookup" in params[0]
