"""A backward run one node at a time: ``step(y)``, and the REPL's ``:step``, ``:next [n]``,
``:continue``, ``:abort``.

The state shown between steps (the node about to run, the gradient about to
flow into it, the ready queue, each waiting node's remaining dependency count)
is checked against an independent dependency count of the graph; ``:continue``
must give what ``backward()`` gives, and ``:abort`` or an error must leave
every ``.grad`` exactly as it was.
"""
from __future__ import annotations

import io
import re
import sys

import pytest

import autodsl as ad
from autodsl.core.trace import node_labels, walk
from autodsl.errors import AutogradError, TypeError_, ValueError_
from autodsl.cli.repl import Repl

# x -> a = x*2 -> c = sin(a) -> y = d + c ;  x -> b = exp(x) ;  d = a*b
DIAMOND = ["x = tensor(0.5, requires_grad=true)", "a = x * 2", "b = exp(x)", "c = sin(a)", "d = a * b",
           "y = d + c"]


class Console:
    """A headless REPL; ``do(line)`` returns what that one input printed."""

    def __init__(self, *lines):
        self.out = io.StringIO()
        self.repl = Repl(ad.Session(out=self.out), out=self.out)
        for ln in lines:
            text = self.do(ln)
            assert "error" not in text, text

    def do(self, line: str) -> str:
        self.out.seek(0)
        self.out.truncate()
        self.repl.handle(line)
        return self.out.getvalue()

    def __getitem__(self, name):
        return self.repl.session.namespace[name]

    def names(self):
        return {id(v): k for k, v in self.repl.session.namespace.items() if isinstance(v, ad.Tensor)}


def reference_pauses(root):
    """(next node, ready nodes in run order, {waiting node: remaining count}) before each step,
    from our own count of the edges into each node (made last runs first)."""
    deps, seen, stack = {}, {root}, [root]
    while stack:
        node = stack.pop()
        for nxt in node.next_edges:
            if nxt is not None:
                deps[nxt] = deps.get(nxt, 0) + 1
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
    ready, pauses = [root], []
    while ready:
        ready.sort(key=lambda n: -n.seq_nr)
        node = ready.pop(0)
        pauses.append((node, list(ready), {n: d for n, d in deps.items() if d > 0}))
        for nxt in node.next_edges:
            if nxt is not None:
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    ready.append(nxt)
    return pauses


def parse_state(text: str):
    """(next label, gradient text, ready labels, {waiting label: count}) from a state display."""
    m = re.search(r"^  next     (\S+)", text, re.M)
    grad = re.search(r"^  grad     (.*)$", text, re.M).group(1)
    ready_text = re.search(r"^  ready    (.*)$", text, re.M).group(1)
    ready = [] if ready_text == "(empty)" else ready_text.split(", ")
    waiting = {lab: int(k) for lab, k in re.findall(r"^           (\S+): (\d+) to come", text, re.M)}
    return m.group(1), grad, ready, waiting


# ---- the state after each :next matches the engine's counting ------------------------------

def test_diamond_state_after_each_next_matches_dependency_counting():
    con = Console(*DIAMOND)
    y = con["y"]
    labels = node_labels([y.grad_fn], con.names())
    expected = reference_pauses(y.grad_fn)
    assert len(expected) == 6                 # five op nodes and x's AccumulateGrad, once each
    # the gradient about to flow into each op node: dy/d(its output)
    outs = {con[k].grad_fn: con[k] for k in "abcd"}
    grads = dict(zip(outs, ad.grad(y, list(outs.values()), retain_graph=True)))
    grads[y.grad_fn] = ad.tensor(1.0)

    shown = con.do(":step y")
    for k, (node, ready, waiting) in enumerate(expected):
        nxt, grad, ready_shown, waiting_shown = parse_state(shown)
        assert nxt == labels[node], k
        assert ready_shown == [labels[n] for n in ready], k
        assert waiting_shown == {labels[n]: d for n, d in waiting.items()}, k
        if node in grads:
            assert float(grad) == pytest.approx(float(grads[node]), rel=1e-12), (k, labels[node])
        else:               # x's AccumulateGrad: everything summed, dy/dx
            assert float(grad) == pytest.approx(float(ad.grad(y, [con["x"]], retain_graph=True)[0]))
        shown = con.do(":next")
        assert f"step {k + 1}  {labels[node]}" in shown
    assert "this backward is over; every step has run" in shown
    assert con.do(":next") == ":next: no backward is being stepped; start one with :step y\n"


def test_diamond_ready_queue_holds_two_and_a_partial_sum_is_shown():
    con = Console(*DIAMOND)
    con.do(":step y")
    labels = node_labels([con["y"].grad_fn], con.names())
    a, b, c, d = (labels[con[k].grad_fn] for k in "abcd")
    assert (a, b, c, d) == ("MulBackward#2", "ExpBackward#1", "SinBackward#1", "MulBackward#1")
    shown = con.do(":next")                   # y = d + c ran: d and c are both ready
    nxt, _, ready, waiting = parse_state(shown)
    assert (nxt, ready) == (d, [c])           # the node made last runs first
    assert waiting == {"AccumulateGrad(x)": 2, a: 2, b: 1}
    shown = con.do(":next")                   # d = a * b ran: a has one of its two gradients, b
    line = next(ln for ln in shown.splitlines() if ln.strip().startswith(f"{a}: "))
    assert line.strip() == f"{a}: 1 to come, {float(con['b'])!r}"
    nxt, _, ready, waiting = parse_state(shown)
    assert (nxt, ready) == (c, [b]) and waiting == {"AccumulateGrad(x)": 2, a: 1}


def test_next_n_and_continue_give_backwards_gradient():
    con = Console(*DIAMOND)
    ref = Console(*DIAMOND)
    ref.do("y.backward()")
    con.do(":step y")
    shown = con.do(":next 3")
    assert [int(m) for m in re.findall(r"^step (\d+) ", shown, re.M)] == [1, 2, 3]
    assert "paused before step 4" in shown
    assert con["x"].grad is None                  # nothing written while the pass runs
    assert con.do(":continue") == "finished: 3 more step(s) ran, 6 in all; .grad is written\n"
    assert float(con["x"].grad) == float(ref["x"].grad)
    assert float(con["x"].grad) == pytest.approx(2 * 0.5 * 2.718281828459045 ** 0.5 + 2 * 2.718281828459045
                                                 ** 0.5 + 2 * 0.5403023058681398, rel=1e-12)


def test_next_more_than_remain_runs_to_the_end():
    con = Console(*DIAMOND)
    con.do(":step y")
    shown = con.do(":next 100")
    assert len(re.findall(r"^step \d+ ", shown, re.M)) == 6
    assert shown.rstrip().endswith("this backward is over; every step has run")
    assert "x.grad = " in shown                    # the last step is the leaf: its final .grad


def test_a_leaf_step_before_the_end_says_grad_is_not_written_yet():
    con = Console("w = tensor(1.0, requires_grad=true)", "v = tensor(2.0, requires_grad=true)", "y = w * v")
    con.do(":step y")
    shown = con.do(":next 2")
    assert "w.grad += grad in  (written when the whole pass has succeeded)" in shown or \
           "v.grad += grad in  (written when the whole pass has succeeded)" in shown
    assert con["w"].grad is None and con["v"].grad is None


# ---- abort and errors leave .grad as it was --------------------------------------------------

def test_abort_leaves_every_grad_exactly_as_it_was():
    con = Console(*DIAMOND, "x.grad = tensor(100.0)", "w = tensor(3.0, requires_grad=true)",
                  "y = y + w")
    before = con["x"].grad
    con.do(":step y")
    con.do(":next 5")
    assert con.do(":abort") == ("aborted after 5 step(s); every .grad is as it was before the "
                                "backward\n")
    assert con["x"].grad is before and float(before) == 100.0
    assert con["w"].grad is None
    assert con.do(":abort") == ":abort: no backward is being stepped; start one with :step y\n"
    # the graph was not freed: a backward still runs, and adds to the old .grad
    con.do("y.backward()")
    ref = Console(*DIAMOND, "w = tensor(3.0, requires_grad=true)", "y = y + w", "y.backward()")
    assert float(con["x"].grad) == pytest.approx(100.0 + float(ref["x"].grad), rel=1e-15)


def test_abort_in_python_keeps_accumulated_grad_objects():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    g0 = x.grad
    saved = g0.tolist()
    s = ad.step((x * 3).sum())
    s.next(2)
    assert s.abort().startswith("aborted after 2 step(s)")
    assert x.grad is g0 and x.grad.tolist() == saved
    assert s.done and s.aborted and repr(s) == "<backward stepper: aborted>"
    assert s.next() == "this backward is over (aborted)"
    assert s.finish() == "this backward is over (aborted)"


def test_version_error_between_step_and_next_leaves_grad_untouched():
    con = Console(*DIAMOND, "x.grad = tensor(100.0)")
    con.do(":step y")
    con.do("b += 1")                      # d = a * b saved b
    first = con.do(":next")               # y = d + c saves nothing
    assert "step 1  AddBackward#1 at <input 6>:1:7 `d + c`" in first
    err = con.do(":next")                 # d = a * b reads b
    assert "`b`" in err and "was modified in place after MulBackward saved it" in err
    assert "changed it to version 1" in err
    assert float(con["x"].grad) == 100.0
    assert con.do(":next") == ":next: no backward is being stepped; start one with :step y\n"
    assert con.do(":continue") == ":continue: no backward is being stepped; start one with :step y\n"


def test_interrupt_in_the_middle_leaves_grad_untouched():
    con = Console(*DIAMOND, "x.grad = tensor(7.0)")

    def stop(g):
        raise KeyboardInterrupt
    con["a"].register_hook(stop)           # runs when a's gradient is complete
    con.do(":step y")
    shown = con.do(":continue")
    assert "interrupt" in shown.lower()
    assert float(con["x"].grad) == 7.0
    assert con.repl.stepper.aborted


def test_a_new_step_while_one_is_active_aborts_the_old_one():
    con = Console(*DIAMOND, "x.grad = tensor(1.0)")
    con.do(":step y")
    con.do(":next 2")
    shown = con.do(":step y")
    assert shown.startswith("aborted after 2 step(s); every .grad is as it was before the backward "
                            "(a new :step begins)\npaused before step 1\n")
    assert float(con["x"].grad) == 1.0
    con.do(":continue")
    ref = Console(*DIAMOND, "y.backward()")
    assert float(con["x"].grad) == pytest.approx(1.0 + float(ref["x"].grad), rel=1e-15)   # counted once


def test_reset_in_the_middle_of_a_step_aborts_it():
    con = Console(*DIAMOND, "x.grad = tensor(1.0)")
    x = con["x"]
    con.do(":step y")
    con.do(":next 2")
    shown = con.do(":reset")
    assert shown == "aborted after 2 step(s); every .grad is as it was before the backward\nsession reset\n"
    assert con.repl.stepper is None
    assert con.do(":next").startswith(":next: no backward is being stepped")
    assert con.do(":continue").startswith(":continue: no backward is being stepped")
    assert float(x.grad) == 1.0                      # the forgotten x was not written either


def test_a_bad_step_keeps_the_one_being_stepped():
    con = Console(*DIAMOND, "v = tensor([1.0, 2.0], requires_grad=true)", "n = 3")
    con.do(":step y")
    con.do(":next")
    assert "must be a tensor, not a number" in con.do(":step n")
    assert "needs a gradient of that shape" in con.do(":step v")
    assert "not defined" in con.do(":step nothere")
    shown = con.do(":next")
    assert "step 2  MulBackward#1 at <input 5>:1:7 `a * b`" in shown     # the first pass goes on where it was


def test_the_state_names_the_commands_in_the_repl_and_the_methods_elsewhere():
    con = Console(*DIAMOND)
    assert con.do(":step y").rstrip("\n").endswith(
        "(:next runs it, :continue runs the rest, :abort leaves every .grad as it was)")
    assert con.do(":next").rstrip("\n").endswith("(:next runs it, :continue runs the rest, :abort leaves "
                                                  "every .grad as it was)")
    assert con.do("s = step(y); s").rstrip("\n").endswith(     # a script has no : commands
        "(.next() runs it, .finish() runs the rest, .abort() leaves every .grad as it was)")
    x = ad.tensor(2.0, requires_grad=True)
    assert str(ad.step(x * x)).endswith("(.next() runs it, .finish() runs the rest, .abort() leaves "
                                        "every .grad as it was)")


def test_step_usage_messages():
    con = Console(*DIAMOND)
    assert con.do(":step").startswith("usage: :step")
    assert con.do(":next").startswith(":next: no backward is being stepped")
    con.do(":step y")
    assert "(n: a whole number of nodes, at least 1)" in con.do(":next 0")
    assert "(n: a whole number of nodes, at least 1)" in con.do(":next two")
    assert "paused before step 1" in str(con.repl.stepper)      # a bad :next ran nothing


# ---- retain_graph, create_graph, hooks ------------------------------------------------------

def test_retain_graph_false_frees_saved_tensors_only_after_finish():
    x = ad.tensor(0.5, requires_grad=True)
    y = (x.exp() * x.sin()).sum()
    nodes = [n for n in walk([y.grad_fn]) if n.name in ("MulBackward", "ExpBackward", "SinBackward")]
    assert len(nodes) == 3
    s = ad.step(y)                       # retain_graph defaults to false, as backward()
    for _ in range(3):
        s.next()
        assert not any(n._released for n in nodes)
        assert all(n._saved is not None for n in nodes)
    s.finish()
    assert all(n._released for n in nodes)
    with pytest.raises(AutogradError, match="retain_graph=true"):
        y.backward()


def test_retain_graph_true_keeps_the_graph():
    x = ad.tensor(0.5, requires_grad=True)
    y = x.exp() * x
    ad.step(y, retain_graph=True).finish()
    g1 = float(x.grad)
    y.backward()
    assert float(x.grad) == pytest.approx(2 * g1, rel=1e-15)


def test_aborted_pass_without_retain_graph_frees_nothing():
    x = ad.tensor(0.5, requires_grad=True)
    y = x.exp() * x
    s = ad.step(y)
    s.next()
    s.abort()
    y.backward()                          # the graph is whole
    assert float(x.grad) == pytest.approx(2.718281828459045 ** 0.5 * 1.5, rel=1e-15)


def test_create_graph_step_gives_a_differentiable_grad():
    x = ad.tensor(2.0, requires_grad=True)
    y = x ** 3
    s = ad.step(y, create_graph=True)
    assert s.finish() == "finished: 2 step(s) ran; .grad is written"
    assert float(x.grad) == 12.0 and x.grad.requires_grad
    (g2,) = ad.grad(x.grad, [x])
    assert float(g2) == 12.0              # d(3x^2)/dx = 6x


def test_hooks_run_once_per_node_and_change_what_flows():
    x = ad.tensor(2.0, requires_grad=True)
    h = x * 3
    calls = []
    h.register_hook(lambda g: calls.append(float(g)) or g * 10)
    y = h * h
    s = ad.step(y)
    shown = s.next()
    assert "grad     12.0  (tensor hooks run on it first)" in shown   # paused before the hook runs
    assert calls == []
    shown = s.next()
    assert calls == [12.0]
    assert "grad in  120.0" in shown and "before the hook it was 12.0" in shown
    s.finish()
    assert calls == [12.0]
    assert float(x.grad) == 360.0


def test_non_scalar_root_with_a_gradient():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    s = ad.step(y, ad.tensor([1.0, -1.0]))
    s.finish()
    assert x.grad.tolist() == [2.0, -4.0]
    with pytest.raises(AutogradError, match="needs a gradient of that shape") as e:
        ad.step(x * 2)
    assert "e.g. step(y, ones(2))" in str(e.value)          # the example is step's, not backward's
    with pytest.raises(TypeError_, match="must be a tensor"):
        ad.step(3.0)
    with pytest.raises(AutogradError, match="does not require grad"):
        ad.step(ad.tensor(1.0) * 2)
    with pytest.raises(ValueError_, match="n >= 1"):
        ad.step(x.sum()).next(0)


def test_a_finished_step_is_the_sessions_last_trace():
    con = Console(*DIAMOND)
    con.do(":step y")
    con.do(":continue")
    t = con.repl.session.last_trace
    assert len(t) == 6 and t[-1]["leaf"] == "x"
    assert t[-1]["grad_after"] == pytest.approx(float(con["x"].grad), rel=1e-15)


# ---- long chains: linear, no recursion --------------------------------------------------------

def test_stepping_a_10000_node_chain():
    x = ad.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(300)
    try:
        s = ad.step(y)
        state = str(s)
        shown = s.next(5)
        done = s.finish()
    finally:
        sys.setrecursionlimit(old)
    assert "           ... 9988 more" in state            # 10,000 waiting, 12 shown
    assert len(state.splitlines()) < 25
    assert "paused before step 6" in shown
    assert done == "finished: 9996 more step(s) ran, 10001 in all; .grad is written"
    assert float(x.grad) == pytest.approx(1.0001 ** 10_000, rel=1e-9)


def test_tensor_gradients_line_up_in_the_state():
    con = Console("w = tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=true)", "a = w * 2",
                  "L = (a * a).sum() + (a.exp() @ w).sum()")
    con.do(":step L")
    shown = con.do(":next 3").splitlines()
    i = next(k for k, ln in enumerate(shown) if ln.strip().startswith("AccumulateGrad(w): 1 to come, [["))
    first, second = shown[i], shown[i + 1]
    assert second.index("[") == first.index("[[") + 1          # the rows line up
    a = ad.tensor([[2.0, 4.0], [6.0, 8.0]]).exp()
    expected = (a.T @ ad.tensor([[1.0, 1.0], [1.0, 1.0]])).tolist()  # what the matmul sent to w so far
    row0 = [float(v) for v in first.split("[[")[1].rstrip("],").split(",")]
    assert row0 == pytest.approx(expected[0], rel=1e-8)


def test_next_takes_a_whole_number():
    x = ad.tensor(1.0, requires_grad=True)
    s = ad.step(x * 2)
    with pytest.raises(ValueError_, match="takes a whole number of nodes to run, not \"a\""):
        s.next("a")
    assert "paused before step 1" in str(s)


def test_step_refuses_a_freed_graph_up_front():
    x = ad.tensor(2.0, requires_grad=True)
    y = x * x
    y.backward()
    with pytest.raises(AutogradError, match="was freed by an earlier backward"):
        ad.step(y)
