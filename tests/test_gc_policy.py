"""The recorded graph stays out of the cyclic collector's way (Note [the cost of an op]): its
nodes form no reference cycles, so dropping the last tensor frees them by reference counting
alone, and autodsl never leaves the host program's collector settings changed. The one cycle
is per leaf, not per node: a leaf that requires grad and its AccumulateGrad refer to each
other (the leaf keeps its hooks and why()'s records there), so a dropped leaf waits for the
host's next collection."""
from __future__ import annotations

import gc
import weakref

import numpy as np

import pytest

import autodsl as ad


def _graph():
    x = ad.tensor(np.linspace(-1.0, 1.0, 6), requires_grad=True)
    w = ad.tensor(0.5, requires_grad=True)
    y = ad.relu(x * w + 0.1).reshape(2, 3).sum(dim=0)
    y = ad.exp(ad.sin(y) * ad.cos(y)).mean() + (x[1:4] ** 2).sum()
    z = y.clone()
    z += 1.0
    h = x.register_hook(lambda g: g * 1.0)
    return x, w, z, h


def test_a_graph_is_freed_without_the_collector():
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        x, w, z, h = _graph()
        z.backward(retain_graph=True)
        node = weakref.ref(z.grad_fn)
        del z, h
        assert node() is None          # gone at once: nothing but references held it
        x, w, z, h = _graph()
        ad.grad(z, [x, w], create_graph=True)
        del z, h
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            gc.collect()
            found = {type(o).__name__ for o in gc.garbage}
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
        assert not found & {"Mul", "Add", "Relu", "Sum", "Mean", "Exp", "Sin", "Cos", "GetItem",
                            "Reshape", "Pow", "Clone"}      # the graph's nodes: no cycles
        x_acc = weakref.ref(x._accumulate_node())
        del x, w
        gc.collect()
        assert x_acc() is None          # a dropped leaf's pair goes at the next collection
    finally:
        if was:
            gc.enable()


def test_a_session_graph_is_freed_without_the_collector():
    s = ad.Session(echo=False)
    s.run("w = tensor([1.0, -2.0], requires_grad=true)\nloss = (relu(w) * 3).sum()\nloss.backward()\n")
    gc.collect()
    node = weakref.ref(s["loss"].grad_fn)
    s.run("loss = none")
    assert node() is not None          # the session keeps its last trace, which shows the graph
    s.run("v = tensor(1.0, requires_grad=true)\n(v * 2).backward()\n")
    assert node() is None              # the next backward's trace replaced it: freed at once


def test_the_host_programs_collector_settings_are_left_alone():
    before = (gc.isenabled(), gc.get_threshold())
    x, w, z, h = _graph()
    z.backward()
    ad.grad(ad.sin(x).sum(), [x])
    s = ad.Session(echo=False)
    s.run("a = tensor(2.0, requires_grad=true)\nb = a * a\nb.backward()\n")
    assert (gc.isenabled(), gc.get_threshold()) == before
    gc.disable()
    try:
        (x * 2).sum().backward()
        s.run("c = a * 3")
        assert not gc.isenabled()      # off stays off
    finally:
        gc.enable() if before[0] else None


def test_a_script_runs_with_young_collections_far_apart_and_the_host_setting_comes_back():
    before = gc.get_threshold()
    s = ad.Session(echo=False)
    s["threshold"] = lambda: gc.get_threshold()[0]
    assert s.run("threshold()") == max(300_000, before[0])     # while the script runs
    assert gc.get_threshold() == before                       # and the host's after


def test_a_script_leaves_the_young_collection_of_its_graph_to_the_host():
    # Note [the collection after a run] (session.py): the graph a run leaves is all young; with
    # the host's threshold back, the next allocation walks all of it. That allocation is the
    # host's, as after the same graph made through the Python API, not one of run()'s own.
    if not gc.isenabled() or not 0 < gc.get_threshold()[0] < 300_000:
        pytest.skip("needs the collector on with a young threshold under the session's")
    s = ad.Session(echo=False)
    source = "y = x\nfor i in range(2000) { y = relu(y*0.999 + 0.001) }\n"
    s["x"] = ad.tensor(0.5, requires_grad=True)
    program = s.parse(source)       # (the parser's first use allocates plenty on its own)
    started = []

    def note(phase, info):
        if phase == "start":
            started.append(info["generation"])

    gc.collect()
    gc.callbacks.append(note)
    try:
        s.run(program)
        during = len(started)       # (len: no allocation the collector counts)
        held = {s["y"]}             # the host's own next allocation (a set: no free list)
    finally:
        gc.callbacks.remove(note)
    assert during == 0
    assert started and started[0] == 0          # the one young collection, the host's
    assert next(iter(held)).grad_fn is not None and gc.get_threshold()[0] < 300_000


def test_backward_and_grad_hold_the_collector_off_from_their_start_and_give_it_back():
    # A hook runs inside the pass: there the collector is off (the forward's allocations were
    # counted with it off, and a collection due at the backward's first allocation would walk
    # the whole graph); around the call it is the host's.
    seen = []
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: seen.append(gc.isenabled()))
    assert gc.isenabled()
    y.sum().backward(retain_graph=True)
    assert gc.isenabled()
    ad.grad(y.sum(), [x])
    assert gc.isenabled()
    assert seen == [False, False]
    gc.disable()            # a host that keeps it off: left off
    try:
        (x * 2).sum().backward()
        assert not gc.isenabled()
    finally:
        gc.enable()



def test_a_pass_that_fails_gives_back_grad_mode_the_collector_and_the_error_state():
    # core/quiet.py's pass_state: inside a pass grad mode is create_graph's, the collector is
    # off and NumPy's errors are ignored; after it, even when a hook raised, all is as before
    from autodsl.context import current
    inside = []

    def hook(g):
        inside.append((ad.is_grad_enabled(), gc.isenabled(), np.geterr()["divide"], current().in_pass))
        raise RuntimeError("from the hook")

    x = ad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.register_hook(hook)
    before = (ad.is_grad_enabled(), gc.isenabled(), np.geterr(), current().in_pass, current().ieee_depth)
    for create_graph in (False, True):
        with pytest.raises(RuntimeError, match="from the hook"):
            y.sum().backward(retain_graph=True, create_graph=create_graph)
        assert (ad.is_grad_enabled(), gc.isenabled(), np.geterr(), current().in_pass,
                current().ieee_depth) == before
    assert inside == [(False, False, "ignore", 1), (True, False, "ignore", 1)]

def test_a_backward_with_a_collection_due_starts_none_before_its_pass_is_over():
    # The forward's allocations are counted with the collector off (every op holds it off):
    # with a collection due, the backward's first allocation would start one that walks the
    # whole graph, unless backward() holds the collector off from its first line.
    x = ad.tensor(0.5, requires_grad=True)
    y = x
    for _ in range(300):
        y = ad.relu(y * 0.999 + 0.001)
    started = []

    def note(phase, info):
        if phase == "start":
            started.append(info["generation"])

    before = gc.get_threshold()
    gc.callbacks.append(note)
    try:
        gc.set_threshold(1)         # due at the next allocation the collector sees
        y.backward()
    finally:
        gc.set_threshold(*before)
        gc.callbacks.remove(note)
    assert started == []
    assert x.grad is not None


def test_ops_with_a_collection_due_start_none():
    # Each op holds the collector off from before its arguments are packed (apply1, apply2):
    # a tuple made for apply's *inputs would otherwise be a new object that starts a collection.
    x = ad.tensor(0.5, requires_grad=True)
    w = ad.tensor(2.0, requires_grad=True)
    started = []

    def note(phase, info):
        if phase == "start":
            started.append(info["generation"])

    before = gc.get_threshold()
    y = x
    gc.callbacks.append(note)
    try:
        gc.set_threshold(1)         # due at the next allocation the collector sees
        for _ in range(200):
            y = ad.relu(y * 0.999 + 0.001) * w - ad.sin(y)
    finally:
        gc.set_threshold(*before)
        gc.callbacks.remove(note)
    assert started == []
    assert y.grad_fn is not None


@pytest.mark.parametrize("hold", ["hook", "retain_grad", "node hook", "hook on a later tensor"])
def test_a_cycle_a_user_closes_through_a_node_is_collected(hold):
    # A hook that reads its own tensor, or a later one, or retain_grad() (the node holds its
    # tensor): each closes a cycle through the graph's nodes, which the collector frees only if it
    # sees every node on it. (An experiment that took op nodes out of the collector's lists leaked
    # the last case: the cycle runs through the later tensor's nodes, made before the hook.)
    x = ad.tensor(1.5, requires_grad=True, dtype=ad.float64)
    y = ad.sin(x * 2.0)
    if hold == "hook on a later tensor":
        later = ad.exp(y * 1.0).sum()
        y.register_hook(lambda g, keep=[later]: g)
        del later
    elif hold == "hook":
        y.register_hook(lambda g: g + y * 0.0)
    elif hold == "retain_grad":
        y.retain_grad()
    else:
        y.grad_fn.register_prehook(lambda g, keep=[y]: g)
    node = weakref.ref(y.grad_fn)
    y.backward(retain_graph=True)
    assert x.grad.item() == pytest.approx(2.0 * np.cos(3.0))
    del y
    gc.collect()
    assert node() is None
