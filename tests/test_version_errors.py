"""Version-counter errors for people: the variable, the node that saved it and where, the
in-place write and where, both version numbers, and the fix; the error itself points at the
backward() call. In the language and from the Python API."""
from __future__ import annotations

import io
import os
import sys

import pytest

import autodsl as ad


def here() -> int:
    return sys._getframe(1).f_lineno


def backward_error(src: str) -> ad.AutogradError:
    s = ad.Session(out=io.StringIO())
    with pytest.raises(ad.AutogradError) as info:
        s.run(src, "v.ad")
    return info.value


def test_language_names_variable_node_lines_versions_and_fix():
    e = backward_error("x = tensor([1.0, 2.0], requires_grad=true)\n"
                       "h = x * 1.0\n"
                       "y = (h * h).sum()\n"
                       "h += 1\n"
                       "y.backward()\n")
    assert (e.file, e.line, e.column) == ("v.ad", 5, 1)              # the backward() call
    assert e.source_line == "y.backward()"
    m = e.message
    assert m.startswith("`h` (shape (2,)) was modified in place after MulBackward saved it for backward")
    assert "MulBackward (made at 3:8 `h * h`) saved it at version 0" in m
    assert "the in-place write at 4:1 `h += 1` changed it to version 1" in m
    assert "Write it out of place (`h = h + 1` instead of `h += 1`)" in m
    assert "or give the op at 3:8 a copy (h.clone())" in m


def test_several_writes_give_the_last_one_and_both_versions():
    e = backward_error("w = tensor(2.0, requires_grad=true)\n"
                       "h = w * 1.0\n"
                       "y = exp(h) * h\n"
                       "h *= 3\n"
                       "h -= 1\n"
                       "y.backward()\n")
    m = e.message
    assert "saved it at version 0" in m
    assert "the in-place write at 5:1 `h -= 1` changed it to version 2" in m
    assert "`h = h - 1` instead of `h -= 1`" in m


def test_saved_output_written_through_a_detached_alias():
    e = backward_error("x = tensor([1.0, 2.0], requires_grad=true)\n"
                       "y = exp(x)\n"
                       "d = y.detach()\n"
                       "d[0] = 0.0\n"
                       "y.sum().backward()\n")
    m = e.message
    assert e.line == 5
    assert m.startswith("`y` (shape (2,); the output of ExpBackward; `d` shares its storage) was modified "
                        "in place after ExpBackward saved it")
    assert "ExpBackward (made at 2:5 `exp(x)`) saved it at version 0" in m
    assert "the in-place write at 4:1 `d[0] = 0.0` changed it to version 1" in m
    assert "Write into a copy instead (clone() it first)" in m
    assert "give the op" not in m            # cloning the input would not help a saved output


def test_grad_unchanged_after_the_error():
    s = ad.Session(out=io.StringIO())
    s.run("w = tensor(2.0, requires_grad=true)\nh = w * 1.0\ny = h * h\n(h * 2).backward(retain_graph=true)\n")
    before = s["w"].grad.item()
    s.run("h += 1")
    with pytest.raises(ad.AutogradError, match="version 0"):
        s.run("y.backward()")
    assert s["w"].grad.item() == before


def test_python_api_names_the_variable_and_the_lines():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1.0
    saved_at = here() + 1
    y = (h * h).sum()
    written_at = here() + 1
    h += 1
    with pytest.raises(ad.AutogradError) as info:
        backward_at = here() + 1
        y.backward()
    m = info.value.message
    f = os.path.basename(__file__)
    assert m.startswith("`h` (shape (2,)) was modified in place")
    assert f"MulBackward (made at {f}:{saved_at} `y = (h * h).sum()`) saved it at version 0" in m
    assert f"the in-place write at {f}:{written_at} `h += 1` changed it to version 1" in m
    e = info.value                                       # from Python: the caller's file and line
    assert (e.file, e.line, e.column) == (__file__, backward_at, None) and not e.has_position
    assert str(e).startswith(f"{__file__}:{backward_at}: `h` (shape (2,))")
    assert str(e).splitlines()[1] == "    y.backward()"
    assert x.grad is None


def test_write_without_a_known_position():
    """The counter was bumped by backward adding into .grad in place, not by a user's write."""
    w = ad.tensor(2.0, requires_grad=True)
    (w * 3).backward()
    g = w.grad
    v = ad.tensor(1.0, requires_grad=True)
    y = v * g                      # MulBackward saves g (for v's gradient)
    (w * 3).backward()             # adds into w.grad, that is g, in place
    with pytest.raises(ad.AutogradError) as info:
        y.backward()
    m = info.value.message
    assert m.startswith("`g` (shape ()) was modified in place")
    assert "saved it at version 0, and an in-place write changed it to version 1" in m


def test_a_write_repeated_at_one_line_names_that_line_each_time():
    """From Python, the second write at a place finds it in the table of positions seen
    (compiled: without a walk of the frames); every message names the write's own line."""
    w = ad.tensor([1.0, 2.0], requires_grad=True)
    f = os.path.basename(__file__)
    for i in range(3):
        y = (w * w).sum()
        with ad.no_grad():
            w -= 0.1 * w; written_at = here()      # noqa: E702  (the write and its line)
        with pytest.raises(ad.AutogradError) as info:
            y.backward()
        m = info.value.message
        assert f"saved it at version {i}, and the in-place write at {f}:{written_at} " \
               f"`w -= 0.1 * w; written_at = here()" in m, m
        assert f"changed it to version {i + 1}" in m


def test_leaf_updated_under_no_grad_before_backward_gets_the_right_fix():
    # `w = w - 0.1 * w` under no_grad would rebind w to a tensor that does not require grad
    e = backward_error("w = tensor(0.5, requires_grad=true)\n"
                       "f = (w * w)^2\n"
                       "no_grad { w -= 0.1 * w }\n"
                       "f.backward()\n")
    m = e.message
    assert "MulBackward (made at 2:8 `w * w`) saved it at version 0" in m
    assert "changed it to version 1" in m
    assert "Call backward() before updating `w` in place" in m
    assert "out of place" not in m
