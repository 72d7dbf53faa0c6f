"""The gradient checker must be able to fail (HIPS autograd's test_tests.py).

Each test defines a deliberately wrong derivative and asserts that gradcheck
or gradgradcheck rejects it, next to a control that shows the same function
with the right derivative passes.
"""
import numpy as np
import pytest

import autodsl as ad
from autodsl.ops.registry import REGISTRY, Op, apply, defop

from helpers import GradcheckError, gradcheck, gradgradcheck


@pytest.fixture
def wrong_ops():
    """Register two private ops with wrong derivatives; unregister them afterwards."""
    before = dict(REGISTRY)

    @defop("_selftest_wrong_square", public=False)
    class WrongSquare(Op):
        """x^2 whose backward claims 3x (the right one is 2x)."""
        def forward(self, a):
            self.save_for_backward(self.inputs[0])
            return a * a

        def backward(self, g):
            (x,) = self.saved_tensors
            return (g * 3 * x,)

    @defop("_selftest_wrong_second", public=False)
    class RightFirstWrongSecond(Op):
        """x^3 whose first derivative 3x^2 is right in value but is built from a
        detached x, so its own derivative (6x) is lost: the second order is wrong."""
        def forward(self, a):
            self.save_for_backward(self.inputs[0])
            return a * a * a

        def backward(self, g):
            (x,) = self.saved_tensors
            return (g * 3 * x.detach() * x.detach(),)

    @defop("_selftest_wrong_broadcast_mul", public=False)
    class WrongMul(Op):
        """a*b whose backward swaps the roles of the two inputs' gradients."""
        def forward(self, a, b):
            self.save_for_backward(*self.inputs)
            return a * b

        def backward(self, g):
            x, y = self.saved_tensors
            return g * x, g * y

    yield {
        "square": lambda x: apply(WrongSquare, x),
        "cube": lambda x: apply(RightFirstWrongSecond, x),
        "mul": lambda a, b: apply(WrongMul, a, b),
    }
    REGISTRY.clear()
    REGISTRY.update(before)


def test_registry_marks_test_ops_private(wrong_ops):
    assert REGISTRY["_selftest_wrong_square"].public is False
    assert REGISTRY["_selftest_wrong_square"].node_name == "SelftestWrongSquareBackward"


def test_wrong_first_derivative_is_caught(wrong_ops):
    x = np.array([0.5, -1.25, 2.0])
    with pytest.raises(GradcheckError, match="differ"):
        gradcheck(wrong_ops["square"], [x])
    assert gradcheck(lambda t: t * t, [x])  # control: the right derivative passes


def test_wrong_first_derivative_is_caught_on_a_scalar(wrong_ops):
    with pytest.raises(GradcheckError):
        gradcheck(wrong_ops["square"], [np.array(1.5)])


def test_wrong_second_derivative_is_caught(wrong_ops):
    x = np.array([[0.5, -1.25, 2.0], [1.0, 0.3, -0.7]])
    assert gradcheck(wrong_ops["cube"], [x])          # first order is right ...
    with pytest.raises(GradcheckError):
        gradgradcheck(wrong_ops["cube"], [x])         # ... the second is not
    assert gradgradcheck(lambda t: t * t * t, [x])    # control


def test_swapped_gradients_are_caught(wrong_ops):
    a = np.array([0.5, -1.25, 2.0])
    b = np.array([1.5, 0.25, -0.75])
    with pytest.raises(GradcheckError):
        gradcheck(wrong_ops["mul"], [a, b])
    assert gradcheck(lambda s, t: s * t, [a, b])


def test_monkeypatched_backward_is_caught(monkeypatch):
    from autodsl.ops import elementwise as E
    x = np.array([0.3, 1.1, -0.8])
    assert gradcheck(ad.sin, [x])
    monkeypatch.setattr(E.Sin, "formula", lambda self, F, g, x: (g * F.sin(x),))    # sin' is cos
    with pytest.raises(GradcheckError):
        gradcheck(ad.sin, [x])


def test_a_tiny_error_above_tolerance_is_caught(monkeypatch):
    from autodsl.ops import elementwise as E
    x = np.array([0.3, 1.1, -0.8])
    orig = E.Exp.formula
    monkeypatch.setattr(E.Exp, "formula", lambda self, F, g, out: (orig(self, F, g, out)[0] * 1.01,))
    with pytest.raises(GradcheckError):
        gradcheck(ad.exp, [x])


def test_aliased_inputs_are_refused():
    base = np.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="share memory"):
        gradcheck(lambda a, b: a * b, [base, base[:]])
    expanded = np.broadcast_to(np.array([1.0, 2.0]), (3, 2))
    with pytest.raises(ValueError, match="broadcast"):
        gradcheck(lambda a: a.sum(), [expanded])


def test_directional_check_passes_and_fails(wrong_ops):
    from helpers import directional_check
    x = np.random.default_rng(0).uniform(0.5, 2.0, size=(20, 30))
    assert directional_check(lambda t: t * t, [x])
    with pytest.raises(GradcheckError, match="directional"):
        directional_check(wrong_ops["square"], [x])
