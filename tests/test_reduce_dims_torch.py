"""The dims a reduction takes, as torch takes them: a dim named twice is refused on a 0-d tensor
too, and true/false or 1.0 is not a dim."""
from __future__ import annotations

import pytest

import autodsl as ad

torch = pytest.importorskip("torch")

REDUCTIONS = ["sum", "mean", "amax", "amin", "var", "std", "logsumexp", "norm"]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dims", [(0, -1), [0, 0]])
def test_a_dim_named_twice_is_refused_on_a_0d_tensor(name, dims):
    with pytest.raises(RuntimeError):
        getattr(torch, name)(torch.tensor(3.0, dtype=torch.float64), dim=dims)
    with pytest.raises(ad.DSLError, match="appears more than once"):
        getattr(ad, name)(ad.tensor(3.0), dim=dims)


@pytest.mark.filterwarnings("ignore:.*degrees of freedom")     # torch's, for var and std of one value
@pytest.mark.parametrize("name", REDUCTIONS)
def test_one_dim_of_a_0d_tensor_is_the_whole_tensor(name):
    a = getattr(ad, name)(ad.tensor(3.0), dim=[0]).numpy()
    t = getattr(torch, name)(torch.tensor(3.0, dtype=torch.float64), dim=[0]).numpy()
    assert a.shape == t.shape == () and (a == t or (a != a and t != t))


@pytest.mark.parametrize("dim", [True, 1.0])
def test_a_bool_or_a_float_is_not_a_dim(dim):
    with pytest.raises(TypeError):
        torch.ones(2, 3).sum(dim=dim)
    with pytest.raises(ad.DSLError, match="dim must be an integer"):
        ad.ones(2, 3).sum(dim=dim)
