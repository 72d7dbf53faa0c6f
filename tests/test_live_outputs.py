"""Note [live outputs] and Note [node memory]: a node holds no reference to its output, the
displays find a live output through the collector, and one saved value is kept bare."""
import gc
import io
import weakref

import numpy as np
import pytest

import autodsl as ad
from autodsl import _pure
from autodsl.core.node import SavedOutput, SavedTensor, saved_entries
from autodsl.core.rules import LiveOutputs, output_value


def _graph_line(text: str, label: str) -> str:
    return next(line for line in str(text).splitlines() if label in line)


def test_a_node_does_not_reference_its_output():
    x = ad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = ad.sin(x)
    node = y.grad_fn
    ref = weakref.ref(y)
    assert all(r is not y for r in gc.get_referents(node))
    del y
    assert ref() is None            # nothing but the variable held it: no cycle, no collection needed
    assert node.next_edges[0] is x._accumulate


def test_the_graph_shows_a_live_intermediate_and_then_only_its_shape():
    x = ad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    held = [ad.sin(x) * 2]          # held by a list: no variable names it
    f = (held[0] * 3).sum()
    line = _graph_line(ad.graph(f), "MulBackward#2")
    want = 2 * np.sin([1.0, 2.0, 3.0])
    assert f"[{want[0]:.8f}, {want[1]:.8f}, {want[2]:.8f}]" in line
    del held
    line = _graph_line(ad.graph(f), "MulBackward#2")
    assert line.rstrip().endswith("(3,)")


def test_live_outputs_finds_every_tensor_of_a_node_and_reads_values():
    x = ad.tensor([0.5, 1.5], requires_grad=True)
    y = ad.exp(x)
    live = LiveOutputs()
    assert live.tensors(y.grad_fn) == (y,)
    assert output_value(y.grad_fn, live) is y._data
    assert output_value(y.grad_fn) is None          # without a lookup: a non-scalar is not kept
    s = y.sum()
    assert output_value(s.grad_fn) is s._data       # a 0-d output's array is kept on the node


class _Trap:
    """An object whose ``__class__`` is a property that must never be read by a display."""

    @property
    def __class__(self):
        raise AssertionError("__class__ was read")


def test_the_lookup_judges_objects_by_their_type_alone():
    trap = _Trap()
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    y = ad.cos(x) * 1.5
    f = (y * y).sum()
    assert "MulBackward#1" in str(ad.graph(f))      # (the walk met the trap and did not touch it)
    assert LiveOutputs().output(y.grad_fn) is y
    del trap


def test_the_trace_names_an_operand_by_the_variable_that_holds_it():
    s = ad.Session(out=io.StringIO())
    s.run("x = tensor([1.0, 2.0], requires_grad=true)\nh = sin(x)\nf = sum(h * h)\ntrace(true)\n"
          "f.backward()\n", "live.ad")
    lines = s.out.getvalue().splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.strip().startswith("-> SinBackward#1 "))
    assert lines[i + 1].strip() == "= grad * h"         # the variable, not the text `sin(x)`
    assert "= grad * h" in s.last_trace.format()


def test_one_saved_value_is_kept_bare_and_read_as_a_tuple():
    x = ad.tensor([0.25, 0.75], requires_grad=True)
    y = ad.sin(x)
    assert isinstance(y.grad_fn._saved, SavedTensor)
    assert saved_entries(y.grad_fn) == (y.grad_fn._saved,)
    e = ad.exp(x)                   # exp saves its output
    assert isinstance(e.grad_fn._saved, SavedOutput)
    p = x * y                       # two saved inputs: a tuple, in input order
    assert isinstance(p.grad_fn._saved, tuple) and len(saved_entries(p.grad_fn)) == 2
    f = (y + e + p).sum()
    f.backward(retain_graph=True)
    want = np.cos([0.25, 0.75]) + np.exp([0.25, 0.75]) + np.sin([0.25, 0.75]) \
        + np.array([0.25, 0.75]) * np.cos([0.25, 0.75])
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)
    f.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * want, rtol=1e-12)
    assert saved_entries(y.grad_fn) == () and y.grad_fn._released
    with pytest.raises(ad.AutogradError, match="retain_graph"):
        f.backward()


def test_a_bare_saved_value_still_sees_an_in_place_write():
    x = ad.tensor([0.25, 0.75], requires_grad=True)
    h = x * 1.0
    y = ad.sin(h)
    with ad.no_grad():
        h.add_(1.0)
    with pytest.raises(ad.AutogradError, match="modified by an inplace operation|in-place|in place"):
        y.sum().backward()


@pytest.mark.skipif(not _pure.build_kind() == "compiled", reason="the compiled build's struct sizes")
def test_an_op_node_fits_in_128_bytes_of_struct_in_the_compiled_build():
    from autodsl.ops.elementwise import Sin
    assert Sin.__basicsize__ <= 128
