"""help(name): a language-only built-in (like print) that prints a built-in's doc in plain
text, the same text as the REPL's `:help NAME`; a user function shows its signature."""
from __future__ import annotations

import io
import re

import pytest

import autodsl
from autodsl.cli.repl import Repl
from autodsl.errors import NameError_, TypeError_


def run(src: str):
    out = io.StringIO()
    s = autodsl.Session(out=out)
    s.run(src, filename="h.ad")
    return s, out.getvalue()


def repl_help(name: str, setup: str = "") -> str:
    out = io.StringIO()
    r = Repl(autodsl.Session(out=out), out=out)
    if setup:
        r.handle(setup)
        out.truncate(0), out.seek(0)
    r.handle(f":help {name}")
    return out.getvalue()


@pytest.mark.parametrize("call, name", [
    ("help(sum)", "sum"), ('help("sum")', "sum"), ("help(print)", "print"), ("help(tensor)", "tensor"),
    ('help("x.backward")', "x.backward"), ("help(x.backward)", "x.backward"), ('help("register_hook")', "register_hook"),
])
def test_help_prints_what_the_repl_shows(call, name):
    _, text = run("x = tensor([1.0], requires_grad=true)\n" + call)
    assert text == repl_help(name, "x = tensor([1.0], requires_grad=true)")
    assert text.split("(")[0] in (name, "x." + name)


def test_the_text_is_plain_with_the_signature_in_the_languages_words():
    _, text = run("help(sum)")
    first, doc = text.split("\n", 1)
    assert first == "sum(input, dim=none, keepdim=false)"
    assert "``" not in text and not re.search(r":[a-z]+:`", text)        # no reST markup
    assert "Sum of the elements" in doc


def test_a_tensor_method_drops_self():
    _, text = run("x = tensor([1.0, 2.0])\nhelp(x.sum)")
    assert text.splitlines()[0] == "x.sum(dim=none, keepdim=false)"


def test_a_user_function_shows_its_signature():
    _, text = run("def f(a, b=2) { return a * b }\nhelp(f)\nhelp(\"f\")")
    lines = text.splitlines()
    assert lines[0] == lines[2] == "def f(a, b=2)" and "h.ad" in lines[1]


def test_help_without_a_name_says_how_to_ask():
    _, text = run("help()")
    assert "help(sum)" in text and ":help" in text


def test_an_unknown_name_is_a_language_error_with_a_suggestion():
    with pytest.raises(NameError_) as e:
        run('help("sumx")')
    assert "`sumx`" in e.value.message and "did you mean `sum`" in e.value.message
    assert (e.value.line, e.value.column) == (1, 1)


def test_a_value_that_is_not_a_function_is_refused():
    with pytest.raises(TypeError_) as e:
        run("help(tensor(1.0))")
    assert "not of a tensor" in e.value.message


def test_help_is_language_only_not_in_the_python_api():
    assert "help" not in autodsl.__all__
    _, text = run('help("help")')
    assert text.startswith("help(name=none)")


@pytest.mark.usefixtures("torch_float64")
@pytest.mark.parametrize("name", ["gather", "index_select", "scatter", "scatter_add"])
def test_the_index_ops_examples_run_as_written(name):
    # (an integer list makes a float64 tensor in the language: the index needs dtype=int64)
    doc = getattr(autodsl, name).__doc__
    example = re.search(r"Example: ``(.+?)``", doc).group(1)
    assert "dtype=int64" in example
    s, _ = run("x = tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])\n"
               f"r = {example}\n")
    torch = pytest.importorskip("torch")
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], dtype=torch.float64)
    ex = example.replace("dtype=int64", "dtype=torch.int64").replace("tensor(", "torch.tensor(") \
        .replace("zeros(3)", "torch.zeros(3, dtype=torch.float64)")
    want = eval(f"torch.{ex}", {"torch": torch, "x": x})
    assert s.get("r").tolist() == want.tolist()
