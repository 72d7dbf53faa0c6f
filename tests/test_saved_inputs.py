"""Note [saved inputs] (core/node.py): a saved plain op result keeps its array, counter and
grad_fn, not its Tensor; backward, double backward and the version error behave as before."""
import gc
import weakref

import numpy as np
import pytest

import autodsl as ad
from autodsl.errors import AutogradError


def _x():
    return ad.tensor(np.array([0.3, -1.2, 2.0]), requires_grad=True, dtype=ad.float64)


def test_the_saved_result_is_not_kept_alive_and_backward_still_uses_its_values():
    x = _x()
    y = x * 2.0
    z = ad.sin(y)               # saves y
    ref = weakref.ref(y)
    del y
    gc.collect()
    assert ref() is None
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2.0 * np.cos(2.0 * x.numpy()))


def test_double_backward_through_a_saved_result():
    x = _x()
    z = ad.sin(x * 2.0).sum()
    (g,) = ad.grad(z, x, create_graph=True)
    (gg,) = ad.grad(g.sum(), x)
    np.testing.assert_allclose(g.detach().numpy(), 2.0 * np.cos(2.0 * x.numpy()), rtol=0, atol=1e-15)
    np.testing.assert_allclose(gg.numpy(), -4.0 * np.sin(2.0 * x.numpy()), rtol=0, atol=1e-15)


def test_an_in_place_write_to_a_saved_result_is_reported_by_its_name():
    x = _x()
    y = x * 2.0
    z = ad.sin(y)
    with ad.no_grad():
        y.mul_(3.0)
    with pytest.raises(AutogradError) as err:
        z.sum().backward()
    assert "`y`" in str(err.value) and "modified in place" in str(err.value)


def test_a_root_given_twice_is_walked_once():
    x = _x()
    y = ad.sin(x * 2.0).sum()
    (g,) = ad.grad([y, y], x)        # torch: the two seeds' gradients are summed
    np.testing.assert_allclose(g.numpy(), 4.0 * np.cos(2.0 * x.numpy()), rtol=0, atol=1e-15)
