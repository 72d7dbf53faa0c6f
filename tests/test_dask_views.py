"""Views and in-place writes on the dask device (immutable arrays): a write through a view
reaches its base, a write into a base reaches its views, detach() shares the array, and the
gradients are those of the cpu device. Each case runs on cpu and on dask and must agree."""
import numpy as np
import pytest

pytest.importorskip("dask.array")

import autodsl as ad


def _row_plus_ten(dev):
    m = ad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=dev)
    row = m[1]
    row += 10
    return [m, row]


def _base_write_seen_by_views(dev):
    m = ad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=dev)
    row, col, t, flat = m[1], m[:, 0], m.T, m.view(-1)
    m[0] = 0.0
    m[1, 2] = -1.0
    return [m, row, col, t, flat]


def _view_of_view(dev):
    m = ad.tensor(np.arange(24.0).reshape(2, 3, 4).tolist(), device=dev)
    v = m[1].transpose(0, 1)[2:]          # a view of a view of a view
    v *= -1
    other = m[1, :, 3]
    return [m, v, other]


def _detach_shares(dev):
    x = ad.tensor([1.0, 2.0, 3.0], device=dev)
    d = x.detach()
    d += 1
    return [x, d]


def _recorded_write_through_view(dev):
    w = ad.tensor([1.0, 2.0, 3.0], device=dev, requires_grad=True)
    y = w * 2
    v = y[1:]
    v *= w[:2]
    y.sum().backward()
    return [y, v, w.grad]


def _masked_write(dev):
    m = ad.tensor([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]], device=dev)
    r = m[0]
    m[m < 0] = 0.0
    return [m, r]


CASES = [_row_plus_ten, _base_write_seen_by_views, _view_of_view, _detach_shares,
         _recorded_write_through_view, _masked_write]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__.strip("_") for c in CASES])
def test_writes_on_dask_are_seen_as_on_cpu(case):
    expected = [t.numpy() for t in case("cpu")]
    got = case("dask")
    for e, g in zip(expected, got):
        assert g.device == "dask"
        np.testing.assert_array_equal(g.numpy(), e)


def test_view_on_dask_is_a_view_by_what_it_is():
    # dask keeps no memory layout, so view() of any shape-compatible tensor is a view there
    m = ad.tensor([[1.0, 2.0], [3.0, 4.0]], device="dask")
    v = m.view(4)
    assert v._base is m
    v[0] = 9.0
    np.testing.assert_array_equal(m.numpy(), [[9.0, 2.0], [3.0, 4.0]])
    # an advanced index copies, as on the cpu: writing into it leaves m alone
    c = m[[0, 1]]
    c += 100
    np.testing.assert_array_equal(m.numpy(), [[9.0, 2.0], [3.0, 4.0]])


@pytest.mark.parametrize("dev", ["cpu", "dask"])
def test_an_undone_write_through_a_view_takes_the_base_and_views_back(dev):
    from autodsl.core.journal import transaction
    m = ad.tensor([[1.0, 2.0], [3.0, 4.0]], device=dev)
    row, col = m[1], m[:, 0]
    with pytest.raises(KeyboardInterrupt), transaction():
        row += 10
        raise KeyboardInterrupt
    np.testing.assert_array_equal(m.numpy(), [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(row.numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(col.numpy(), [1.0, 3.0])
