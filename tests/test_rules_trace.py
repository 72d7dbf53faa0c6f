"""Op rules in the backward trace, and the trace as data (records, JSON).

Each op class declares ``rule`` next to its backward: one formula per input
(in ``grad``, ``out`` and the input names) or one sentence for all inputs.
Under each ``-> Next  value`` line the trace shows the formula with the
user's names, then with the numbers; the numbers must evaluate to the value
sent. ``Trace.records()`` / ``to_json()`` / iteration give the same facts as data.
"""
from __future__ import annotations

import io
import json
import math
import re

import numpy as np
import pytest

import autodsl as ad
import autodsl.ops  # noqa: F401  (every op module, so that every node class exists)
from autodsl.core.node import Node
from autodsl.core.rules import _FUNCTIONS, input_names, rule_text, with_numbers
from autodsl.core.trace import tracing

CHAIN = """\
x = tensor(2.0)
w1 = tensor(0.5, requires_grad=true)
w2 = tensor(-1.5, requires_grad=true)
b = tensor(1.0, requires_grad=true)
f = (w2*(w1*x^2+b))^3
"""


def session(src: str, filename: str = "rt.ad") -> ad.Session:
    s = ad.Session(out=io.StringIO())
    s.run(src, filename)
    return s


def evaluate(numbers: str) -> float:
    """A rule with its numbers put in, evaluated (``^`` power, ``!`` not, true/false, inf/nan)."""
    expr = re.sub(r"!(\w+)", r"(not \1)", numbers).replace("^", "**")
    env = {"cos": math.cos, "sin": math.sin, "log": math.log, "exp": math.exp, "sqrt": math.sqrt,
           "sign": lambda v: float(np.sign(v)), "true": True, "false": False, "inf": math.inf,
           "nan": math.nan, "where": lambda c, x, y: x if c else y}
    return float(eval(expr, {"__builtins__": {}}, env))  # noqa: S307 - our own test strings


# ---- where rules are declared ------------------------------------------------------------

def _node_classes():
    seen, stack = {}, list(Node.__subclasses__())
    while stack:
        c = stack.pop()
        stack.extend(c.__subclasses__())
        if c.__module__.startswith("autodsl.ops.") and "name" in c.__dict__:
            seen[(c.__module__, c.__name__)] = c
    return list(seen.values())


def test_every_differentiable_op_declares_a_rule():
    classes = _node_classes()
    assert len(classes) > 40
    missing = [c.name for c in classes
               if getattr(c, "rule", None) is None and not c.__module__.endswith(".compare")]
    assert missing == []


def test_rule_formulas_use_only_known_names():
    allowed_extra = {"grad", "out", "min", "max", "n", "T"} | _FUNCTIONS     # T: transpose
    for c in _node_classes():
        rule = getattr(c, "rule", None)
        if rule is None or isinstance(rule, str):
            continue
        assert isinstance(rule, tuple) and rule, c.name
        names = set(input_names(c))
        for formula in rule:
            if formula is None:
                continue
            try:        # a formula is an expression; a sentence (NllLoss's) is left as it is
                compile(re.sub(r"!(\w+)", r"(not \1)", formula).replace("^", "**"), "rule", "eval")
            except SyntaxError:
                assert len(formula.split()) > 4, (c.name, formula)
                continue
            used = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", formula))
            assert used <= names | allowed_extra, (c.name, formula, used - names - allowed_extra)


# ---- the chain rule example --------------------------------------------------------------

def test_chain_rule_trace_lines_with_names_and_numbers():
    s = session(CHAIN + "trace(true)\nf.backward()\n")
    lines = s.out.getvalue().splitlines()

    def after(head):        # the line under `-> head`
        i = next(k for k, ln in enumerate(lines) if ln.strip().startswith(f"-> {head} "))
        return lines[i + 1].strip()

    assert after("MulBackward#1") == ("= grad * 3.0 * (w2*(w1*x^2+b))^(3.0-1) = 1.0 * 3.0 * (-4.5)^(3.0-1)")
    assert after("AccumulateGrad(w2)") == "= grad * (w1*x^2+b) = 60.75 * 3.0"
    assert after("AddBackward#1") == "= grad * w2 = 60.75 * (-1.5)"
    assert after("AccumulateGrad(w1)") == "= grad * 4.0 = (-91.125) * 4.0"
    # `grad` alone gets no numbers line: it would only repeat the value
    i = next(k for k, ln in enumerate(lines) if ln.strip().startswith("-> AccumulateGrad(b) "))
    assert lines[i + 1].strip() == "= grad"


def test_chain_rule_records():
    s = session(CHAIN + "f.backward()\n")
    t = s.last_trace                     # kept even with the trace off
    assert t is not None and len(t) == 7
    recs = t.records()
    assert [r["op"] for r in recs] == ["PowBackward", "MulBackward", "AccumulateGrad", "AddBackward",
                                       "AccumulateGrad", "MulBackward", "AccumulateGrad"]
    assert [r["step"] for r in recs] == list(range(1, 8))
    assert [r["deps"] for r in recs] == [0, 1, 1, 1, 1, 1, 1]
    assert [r["root"] for r in recs] == [True] + [False] * 6
    pow_ = recs[0]
    assert pow_["node"] == "PowBackward#1" and pow_["grad_in"] == 1.0
    assert pow_["pos"] == {"file": "rt.ad", "line": 5, "column": 5, "text": "(w2*(w1*x^2+b))^3"}
    assert pow_["sends"] == [{"to": "MulBackward#1", "grad": 60.75, "rule": "grad * b * a^(b-1)",
                              "numbers": "1.0 * 3.0 * (-4.5)^(3.0-1)"}]
    mul = recs[1]
    assert mul["sends"] == [
        {"to": "AccumulateGrad(w2)", "grad": 182.25, "rule": "grad * b", "numbers": "60.75 * 3.0"},
        {"to": "AddBackward#1", "grad": -91.125, "rule": "grad * a", "numbers": "60.75 * (-1.5)"}]
    add = recs[3]
    assert [sd["numbers"] for sd in add["sends"]] == [None, None]       # `grad`: nothing to put in
    leaves = {r["leaf"]: r["grad_after"] for r in recs if r["op"] == "AccumulateGrad"}
    assert leaves == {"w2": 182.25, "b": -91.125, "w1": -364.5}
    assert "sends" not in recs[2] and "leaf" not in recs[1]
    for r in recs:
        for sd in r.get("sends", []):
            if sd["numbers"] is not None:
                assert evaluate(sd["numbers"]) == pytest.approx(sd["grad"], rel=1e-12)


def test_trace_iterates_and_indexes_as_records():
    s = session(CHAIN + "f.backward()\n")
    t = s.last_trace
    recs = t.records()
    assert list(t) == recs
    assert t[0] == recs[0] and t[-1] == recs[-1] and t[1:3] == recs[1:3]
    assert t.node_names() == [r["op"] for r in recs]
    assert repr(t) == "<Trace of 7 steps>"
    # records are fresh dicts each time: a caller may change them
    t[0]["op"] = "changed"
    assert t[0]["op"] == "PowBackward"


def test_json_round_trip():
    s = session(CHAIN + "f.backward()\n")
    text = s.last_trace.to_json()
    data = json.loads(text)
    assert data == {"create_graph": False, "steps": s.last_trace.records()}
    assert json.loads(s.last_trace.to_json(indent=2)) == data


def test_json_with_nan_and_inf_is_strict_json():
    s = session("z = tensor([0.0, -1.0, 4.0], requires_grad=true)\n"
                "u = tensor([0.0, 2.0, 1.0], requires_grad=true)\n"
                "q = sqrt(z).sum() + (-log(u)).sum()\n"
                "q.backward()\n")
    t = s.last_trace
    text = t.to_json(allow_nan=False)            # would raise if a float nan/inf were left in

    def no_constants(name):
        raise AssertionError(f"non-standard JSON constant {name}")
    data = json.loads(text, parse_constant=no_constants)
    leaves = {r["leaf"]: r["grad_after"] for r in data["steps"] if r["op"] == "AccumulateGrad"}
    assert leaves["z"] == ["inf", "nan", 0.25]
    assert leaves["u"] == ["-inf", -0.5, -1.0]
    sqrt_step = next(r for r in data["steps"] if r["op"] == "SqrtBackward")
    assert sqrt_step["sends"][0]["grad"] == ["inf", "nan", 0.25]
    assert data["steps"] == t.records()


def test_sentence_rules_show_in_text_and_records():
    s = session("x = tensor([1.0, 2.0], requires_grad=true)\ny = (x * 3).sum()\ntrace(true)\ny.backward()\n")
    assert "rule: grad expanded to (x * 3)'s shape" in s.out.getvalue()    # the input's own text for `a`
    rec = s.last_trace[0]
    assert rec["op"] == "SumBackward"
    assert rec["sends"] == [{"to": "MulBackward#1", "grad": [1.0, 1.0],
                             "rule": "grad expanded to a's shape", "numbers": None}]
    mul = s.last_trace[1]
    assert mul["sends"][0]["rule"] == "grad * b" and mul["sends"][0]["numbers"] is None   # not scalars
    assert mul["sends"][0]["grad"] == [3.0, 3.0]


# ---- every scalar rule's numbers evaluate to what the node sent ---------------------------

@pytest.mark.parametrize("expr", [
    "a * b", "a / b", "a - b", "-a", "a ^ b", "a ^ 3", "2 ^ a", "exp(a)", "log(a)", "sqrt(a)", "sin(a)",
    "cos(a)", "tan(a)", "tanh(a)", "sigmoid(a)", "relu(a)", "relu(-a)", "abs(a - b)", "maximum(a, b)",
    "minimum(a, b)", "maximum(a, a)", "where(a > b, a, b * 2)", "where(a < b, a, b * 2)", "a / (b * b)",
    "(a * b) ^ 2", "sigmoid(tanh(a * b))",
])
def test_scalar_rule_numbers_evaluate_to_the_gradient_sent(expr):
    s = session(f"a = tensor(0.7, requires_grad=true)\nb = tensor(1.3, requires_grad=true)\ny = {expr}\n"
                "y.backward()\n")
    checked = 0
    for r in s.last_trace:
        for sd in r.get("sends", []):
            if sd["numbers"] is not None:
                assert evaluate(sd["numbers"]) == pytest.approx(sd["grad"], rel=1e-12, abs=1e-15), (r, sd)
                checked += 1
            elif sd["rule"] not in ("grad", None):
                raise AssertionError(f"no numbers for scalar rule {sd['rule']} in {r['op']}")
    assert checked >= 1


def test_float32_numbers_evaluate_close_to_the_gradient():
    s = session("a = tensor(0.1, dtype=float32, requires_grad=true)\ny = sin(a * 3) / a\ny.backward()\n")
    checked = 0
    for r in s.last_trace:
        for sd in r.get("sends", []):
            if sd["numbers"] is not None:
                assert evaluate(sd["numbers"]) == pytest.approx(sd["grad"], rel=1e-5)
                checked += 1
    assert checked >= 3


def test_rule_numbers_are_copied_when_the_pass_ends():
    # an in-place write after backward must not change the numbers the trace shows
    s = session("a = tensor(2.0, requires_grad=true)\nb = tensor(3.0, requires_grad=true)\ny = a * b\n"
                "y.backward()\nno_grad { b += 100 }\n")
    mul = s.last_trace[0]
    assert [sd["numbers"] for sd in mul["sends"]] == ["1.0 * 3.0", "1.0 * 2.0"]


def test_with_numbers_needs_every_name():
    assert with_numbers("grad * b", {"b": 2.0}, np.array(1.5)) == "1.5 * 2.0"
    assert with_numbers("grad * b", {}, np.array(1.5)) is None
    assert with_numbers("grad * b", {"b": 2.0}, np.array([1.5, 2.0])) is None
    assert with_numbers("grad", {}, np.array(1.5)) is None
    assert with_numbers("grad * cos(a)", {"a": -0.5}, np.array(2.0)) == "2.0 * cos((-0.5))"


def test_rule_text_per_input():
    x = ad.tensor(2.0, requires_grad=True)
    y = x ** x
    assert rule_text(y.grad_fn, 0) == "grad * b * a^(b-1)"
    assert rule_text(y.grad_fn, 1) == "grad * out * log(a)"
    assert rule_text(y.grad_fn, 2) is None
    z = (x * 2).sum()
    assert rule_text(z.grad_fn, 0) == "grad expanded to a's shape"


# ---- hooks, create_graph, long chains -------------------------------------------------------

def test_hook_replacement_is_recorded():
    x = ad.tensor(2.0, requires_grad=True)
    h = x * 3
    h.register_hook(lambda g: g * 10)
    y = h * h
    got = []
    with tracing(False, sink=got.append):
        y.backward()
    recs = got[0].records()
    mul = next(r for r in recs if r["node"] == "MulBackward#2")
    assert mul["grad_before_hook"] == 12.0 and mul["grad_in"] == 120.0
    assert mul["sends"][0]["numbers"] == "120.0 * 3.0"
    assert "grad_before_hook" not in recs[0]
    text = got[0].format()
    assert "(a hook replaced it; before the hook it was 12.0)" in text
    assert float(x.grad) == 360.0


def test_create_graph_flag_in_text_and_json():
    x = ad.tensor(2.0, requires_grad=True)
    y = x ** 3
    got = []
    with tracing(False, sink=got.append):
        y.backward(create_graph=True)
    assert json.loads(got[0].to_json())["create_graph"] is True
    assert "(create_graph: the gradients are themselves differentiable)" in got[0].format()
    assert got[0][0]["sends"][0]["numbers"] == "1.0 * 3.0 * 2.0^(3.0-1)"


def test_long_chain_trace_is_linear_and_skips_numbers():
    import sys
    x = ad.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    got = []
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(300)       # nothing in the trace may recurse along the chain
    try:
        with tracing(False, sink=got.append):
            y.backward()
        t = got[0]
        recs = t.records()
        text = t.format()
    finally:
        sys.setrecursionlimit(old)
    assert len(recs) == 10_001
    assert recs[0]["sends"][0]["numbers"] is None        # too long to keep every step's values
    assert recs[0]["sends"][0]["rule"] == "grad * b"
    assert recs[-1]["grad_after"] == pytest.approx(1.0001 ** 10_000, rel=1e-9)
    assert text.count("\nstep ") == 10_001


def test_session_last_trace_names_leaves_and_is_replaced_by_each_backward():
    s = session(CHAIN + "f.backward(retain_graph=true)\n")
    first = s.last_trace
    s.run("g = w1 * 2\ng.backward()")
    assert s.last_trace is not first
    assert [r.get("leaf") for r in s.last_trace] == [None, "w1"]
    assert ad.last_trace() is s.last_trace


def test_operands_are_bracketed_only_where_needed():
    s = session("t = tensor(0.3, requires_grad=true)\ny = cos(sin(t)) + cos(t + 1) + (t + 1) * t.exp()\n"
                "trace(true)\ny.backward()\n")
    lines = [ln.strip() for ln in s.out.getvalue().splitlines()]
    assert any(ln.startswith("= -grad * sin(sin(t)) = ") for ln in lines)       # a call: as it is
    assert any(ln.startswith("= -grad * sin(t + 1) = ") for ln in lines)        # no doubled brackets
    assert "= grad * t.exp()" in " ".join(lines)                                # a method call
    assert any(ln.startswith("= grad * (t + 1) = ") for ln in lines)            # an operator: bracketed


def test_indexing_builds_the_same_records_and_follows_the_names():
    s = session(CHAIN + "f.backward()\n")
    t = s.last_trace
    recs = t.records()
    assert [t[i] for i in range(len(t))] == recs
    assert t[-3:] == recs[-3:] and t[::2] == recs[::2]
    with pytest.raises(IndexError):
        t[7]
    assert t[2]["node"] == "AccumulateGrad(w2)"
    t.names = {}                                  # labels are recomputed for new names
    assert t[2]["node"] == "AccumulateGrad(leaf scalar #1)" and t[2]["leaf"] is None    # w2: unnamed leaves
    assert t[1]["node"] == "MulBackward#1"                                              # are numbered
    assert "AccumulateGrad(leaf scalar #3)" in t.format()


def test_trace_of_a_string_is_an_error_not_on():
    s = ad.Session(out=io.StringIO())
    with pytest.raises(ad.TypeError_, match="trace\\(\\) takes true or false, not the string 'off'"):
        s.run('trace("off")')
    assert not s.trace
    s.run("x = tensor(1.0, requires_grad=true)\n(x * 2).backward()")
    assert s.out.getvalue() == ""                 # nothing traced


def test_large_leaf_grads_are_read_when_shown_and_a_later_change_is_said():
    w = ad.tensor([0.5] * 5000, requires_grad=True)
    s = ad.Session(echo=False)
    s.namespace["w"] = w
    s.run("(w * 2).sum().backward()")
    tr = s.last_trace
    leaf = [st for st in tr.steps if st.kind == "leaf"][0]
    assert leaf.grad_after.tolist() == [2.0] * 5000          # read now: unchanged since
    s.run("(w * 3).sum().backward()")                       # accumulates in place into w.grad
    assert leaf.grad_after.tolist() == [2.0] * 5000          # read once, kept
    tr2 = s.last_trace
    s.run("(w * 1).sum().backward()")
    assert "(changed in place since this backward" in str(tr2)
    assert [r for r in tr2.records() if "leaf" in r][0]["grad_after"] == "changed since"


def test_a_long_traces_leaves_show_their_grad_as_the_pass_left_it():
    # past 10,000 steps the trace makes its steps only when read, and keeps each leaf's .grad
    # from the end of the pass (found by the leaves' own entries)
    s = ad.Session(echo=False)
    s.run("x = tensor([0.5, 1.5], requires_grad=true, dtype=float64)\n"
          "w = tensor(2.0, requires_grad=true, dtype=float64)\n"
          "y = x * w\nfor i in range(10001) { y = y * 1.0 }\ny.sum().backward()")
    tr = s.last_trace
    assert len(tr) > 10_000
    leaves = [st for st in tr.steps if st.kind == "leaf"]
    assert len(leaves) == 2
    want = {id(s["x"]): s["x"].grad.numpy().copy(), id(s["w"]): s["w"].grad.numpy().copy()}
    for st in leaves:
        np.testing.assert_array_equal(st.grad_after, want[id(st.leaf)])
    g = s["x"].grad
    with ad.no_grad():
        g *= 3.0                                # small: copied when the pass ended
    x_step = next(st for st in leaves if st.leaf is s["x"])
    np.testing.assert_array_equal(x_step.grad_after, [2.0, 2.0])
