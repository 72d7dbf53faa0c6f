"""Inputs the fuzz suites (test_fuzz_programs.py, test_fuzz_vs_torch.py) found, one test each.

The expected values are PyTorch's (2.x, float64), written out so that the tests run without it.
"""
import autodsl as ad


def test_masked_fill_broadcasts_input_and_mask_together_as_torch():
    # torch's out-of-place masked_fill expands input and mask to their broadcast shape (ATen:
    # expand_outplace(mask, self), then masked_fill_); autodsl refused a mask larger than input
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    y = ad.masked_fill(x, ad.tensor([[True], [False]]), 0.5)
    assert y.shape == (2, 2)
    assert y.tolist() == [[0.5, 0.5], [1.0, 2.0]]
    (y * ad.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert x.grad.tolist() == [3.0, 4.0]         # summed back over the broadcast dim, masked rows 0


def test_masked_fill_value_tensor_gets_the_masked_grads_after_broadcasting():
    v = ad.tensor(0.5, requires_grad=True)
    y = ad.masked_fill(ad.tensor([1.0, 2.0, 3.0]), ad.tensor([[True], [False]]), v)
    assert y.tolist() == [[0.5, 0.5, 0.5], [1.0, 2.0, 3.0]]
    y.sum().backward()
    assert v.grad.item() == 3.0


def test_masked_fill_in_place_still_needs_a_mask_that_fits_the_tensor():
    # torch: "output with shape [2] doesn't match the broadcast shape [2, 2]"
    x = ad.tensor([1.0, 2.0])
    try:
        x.masked_fill_(ad.tensor([[True], [False]]), 0.5)
    except ad.ShapeError as e:
        assert "(2, 1)" in e.message and "(2,)" in e.message
    else:
        raise AssertionError("masked_fill_ wrote a (2, 2) result into a (2,) tensor")
    assert x.tolist() == [1.0, 2.0]


def test_masked_fill_in_the_language_broadcasts_too():
    s = ad.Session(echo=False)
    y = s.run("x = tensor([1.0, 2.0]); x.masked_fill(tensor([[true], [false]]), 0.0)")
    assert y.tolist() == [[0.0, 0.0], [1.0, 2.0]]
