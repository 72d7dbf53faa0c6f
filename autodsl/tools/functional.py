"""PyTorch's ``torch.autograd.functional`` on autodsl: ``jacobian``, ``hessian``, ``vjp``,
``jvp``, ``hvp``, ``vhp``, with the same names, signatures and output nesting.

Each takes a function ``func`` (a Python callable, or a language function made
with ``def``) and ``inputs``: one tensor, or a tuple/list of tensors, given to
``func`` as positional arguments. Results follow PyTorch's nesting rules
exactly (checked against torch 2.x in ``tests/test_functional_api.py``):

- a result "per input" is a single tensor when ``inputs`` is a single tensor,
  and a tuple (one per input) when it is a tuple or list;
- a result "per output" likewise follows what ``func`` returned (a list
  returned by a language function counts as a tuple);
- ``jacobian`` with several outputs and inputs is a tuple over outputs of
  tuples over inputs; entry ``[i][j]`` has shape ``output_i.shape + input_j.shape``;
  ``hessian`` entry ``[i][j]`` has shape ``input_i.shape + input_j.shape``.

Differences from PyTorch, on purpose: a list is accepted wherever a tuple is
(the language has no tuple literal); errors are autodsl errors (AutogradError,
TypeError_, ShapeError, ValueError_) whose messages say what to do. Only
reverse mode exists in autodsl, so ``vectorize=true`` and
``strategy="forward-mode"`` are refused with a ValueError_ (they would only
change speed, not values, in PyTorch). ``jvp`` and ``hvp`` use the
double-backward trick, as PyTorch does: a forward-mode product obtained from
two reverse passes.

The derivative formulas are those of each op's ``backward`` (``autodsl.ops``);
this module only arranges reverse passes (``autodsl.core.autograd.grad``) the way
``torch/autograd/functional.py`` does.
"""
from __future__ import annotations

from autodsl.context import scoped
from autodsl.core.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from autodsl.core.watch import quiet
from autodsl.ops.creation import zeros, zeros_like
from autodsl.errors import AutogradError, ShapeError, TypeError_, ValueError_
from autodsl.core.autograd import grad
from autodsl.ops.movement import reshape, stack
from autodsl.core.tensor import Tensor
from autodsl.core.words import kind as value_kind, shown

__all__ = ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"]

_STRATEGIES = ("reverse-mode", "forward-mode")


# ---- PyTorch's helpers, in autodsl ------------------------------------------------------------

def _describe(v) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return f"the number {v!r}"
    if v is None:
        return "none"
    return value_kind(v)


def _as_tuple(inp, arg_name: str, fn_name: str):
    """(was it a tuple or list?, a tuple of tensors); TypeError_ for anything else."""
    is_tuple = isinstance(inp, (tuple, list))
    items = tuple(inp) if is_tuple else (inp,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = f"entry {i} of the {arg_name}" if is_tuple else f"the {arg_name}"
            raise TypeError_(f"{fn_name}(): {where} is {_describe(el)}, but it must be a tensor "
                             f"(or a list of tensors); wrap numbers with tensor(...)")
    return is_tuple, items


def _tuple_postprocess(res, to_unpack):
    """Unwrap the tuples that stand for a single tensor (PyTorch's rule)."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _alias(t: Tensor) -> Tensor:
    """``t.view_as(t)``: the same values, a new node whose gradient flows back into t."""
    return reshape(t, t.shape)


def _grad_preprocess(inputs, create_graph: bool, need_graph: bool):
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(_alias(inp))
        else:
            d = inp.detach()
            if need_graph:
                if not d.dtype.is_floating:
                    raise TypeError_(f"only floating tensors can be differentiated, and this input is "
                                     f"{d.dtype.name}; make it with dtype=float64")
                d.requires_grad_(True)
            res.append(d)
    return tuple(res)


def _grad_postprocess(inputs, create_graph: bool):
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple: bool, fn_name: str) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise ValueError_(f"{fn_name}(): v has {len(v)} entries but there are {len(other)}; "
                              "give one tensor per entry")
        raise ValueError_(f"{fn_name}(): v should be a single tensor, not a list of {len(v)}")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.shape != el_other.shape:
            prepend = f"entry {idx} of " if is_other_tuple else ""
            raise ShapeError(f"{fn_name}(): {prepend}v has shape {el_v.shape} but should have shape "
                             f"{el_other.shape}; give a v of that shape")


def _check_requires_grad(values, kind: str, strict: bool) -> None:
    if not strict:
        return
    for i, t in enumerate(values):
        if t is None:
            raise AutogradError(f"the output of the function is independent of input {i}; strict=true "
                                "does not allow that (pass strict=false to get zeros)")
        if not t.requires_grad:
            if kind == "hessian":
                msg = (f"the hessian of the function with respect to input {i} does not depend on the "
                       "input; strict=true needs a function that is three times differentiable")
            elif kind == "jacobian":
                msg = (f"while computing the hessian, the jacobian with respect to input {i} does not "
                       "depend on the input (a linear function?); strict=true does not allow that")
            elif kind == "grad_inputs":
                msg = (f"the gradient with respect to input {i} does not depend on the inputs of the "
                       "function; strict=true does not allow that")
            else:
                msg = (f"output {i} of the function does not require grad: with strict=true the outputs "
                       "must be computed differentiably from the inputs (no detach(), no no_grad)")
            raise AutogradError(msg + "; pass strict=false to get zeros instead")


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """grad() over the outputs that require grad; None for an input they do not reach."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    outs, gos = [], []
    for out, go in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            outs.append(out)
            gos.append(go)
    if not outs:
        return (None,) * len(inputs)
    # the passes are this function's own, as check()'s are: they print no trace and do not
    # become the last backward that why() explains
    with quiet(), scoped(trace_enabled=False, trace_sink=None):
        return tuple(grad(outs, list(inputs), grad_outputs=gos, retain_graph=retain_graph,
                          create_graph=create_graph, allow_unused=True))


_ZERO_MESSAGES = {
    "back": "the output of the function is independent of input {i}",
    "back_trick": ("the gradient with respect to the input is independent of entry {i} of the "
                   "grad_outputs (double-backward trick for a forward-mode product)"),
    "double_back": "the jacobian of the function is independent of input {i}",
    "double_back_trick": ("the hessian of the function is independent of entry {i} of the "
                          "grad_jacobian (double-backward trick)"),
}


def _fill_in_zeros(grads, refs, strict: bool, create_graph: bool, stage: str):
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise AutogradError(_ZERO_MESSAGES[stage].format(i=i)
                                    + "; strict=true does not allow that (pass strict=false to get zeros)")
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise AutogradError(f"the {what} of the function is independent of input {i}, which "
                                "strict=true with create_graph=true does not allow; pass strict=false")
        res.append(g)
    return tuple(res)


def _call(func, inputs, fn_name: str):
    if not callable(func):
        raise TypeError_(f"{fn_name}() needs a function as its first argument (def f(x) {{ ... }}), "
                         f"not {_describe(func)}")
    return func(*inputs)


def _check_strategy(strategy, vectorize, fn_name: str, keyword: str) -> None:
    if strategy not in _STRATEGIES:
        raise ValueError_(f"{fn_name}(): {keyword} must be \"reverse-mode\" (or \"forward-mode\", "
                          f"which autodsl does not support), not {shown(strategy)}")
    if strategy == "forward-mode":
        raise ValueError_(f"{fn_name}(): {keyword}=\"forward-mode\" is not supported: autodsl has "
                          "reverse mode only; leave it at \"reverse-mode\" (the values are the same), "
                          "or use jvp() for a Jacobian-vector product")
    if vectorize:
        raise ValueError_(f"{fn_name}(): vectorize=true is not supported: autodsl computes the "
                          "Jacobian one row at a time; leave vectorize=false (the values are the same)")


# ---- the functional API -----------------------------------------------------------------------

def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """The vector-Jacobian product ``v^T J`` of ``func`` at ``inputs``, as PyTorch's
    ``torch.autograd.functional.vjp``.

    ``func(*inputs)`` returns a tensor or a list of tensors. ``inputs``: a tensor or a
    list of tensors. ``v``: one tensor per output, of that output's shape (may be
    none only when ``func`` returns a single one-element tensor). Returns
    ``(func_output, vjp)``: ``func_output`` as ``func`` returned it; ``vjp`` has
    the inputs' shapes and nesting (a tensor for a single tensor input, a tuple
    otherwise). With ``create_graph=true`` the results are differentiable.
    ``strict=true`` raises AutogradError when an output does not depend on an
    input (otherwise its entry is zeros).

    Raises TypeError_ (non-tensor inputs or outputs), ShapeError (``v`` of the
    wrong shape), ValueError_ (``v`` missing for a non-scalar output).

    Example: ``vjp(f, x, ones(3))`` is ``(f(x), grad(f(x), x, ones(3))[0])``.
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph, need_graph=True)
        outputs = _call(func, inputs, "vjp")
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple, "vjp")
        elif len(outputs) != 1 or outputs[0].numel() != 1:
            raise ValueError_("vjp(): v can be left out only when the function returns a single "
                              "one-element tensor; pass v, one tensor of each output's shape")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """The Jacobian-vector product ``J v`` of ``func`` at ``inputs``, as PyTorch's
    ``torch.autograd.functional.jvp`` (computed with the double-backward trick:
    two reverse passes, since autodsl has no forward mode).

    ``v``: one tensor per input, of that input's shape (may be none only for a
    single one-element input). Returns ``(func_output, jvp)``; ``jvp`` has the
    outputs' shapes and nesting. ``create_graph`` and ``strict`` as in ``vjp``.

    Raises TypeError_, ShapeError, ValueError_ as ``vjp`` does.

    Example: ``jvp(f, x, ones_like(x))[1]`` is the directional derivative of f along ones.
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph, need_graph=True)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            v = _grad_preprocess(v, create_graph, need_graph=False)
            _validate_v(v, inputs, is_inputs_tuple, "jvp")
        elif len(inputs) != 1 or inputs[0].numel() != 1:
            raise ValueError_("jvp(): v can be left out only when there is a single one-element input; "
                              "pass v, one tensor of each input's shape")
        outputs = _call(func, inputs, "jvp")
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the function", "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        grad_outputs = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_outputs_tuple)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``, as PyTorch's ``torch.autograd.functional.jacobian``.

    For one output and one input: a tensor of shape ``output.shape + input.shape``
    (``J[i..., j...] = d output[i...] / d input[j...]``). For several inputs, a
    tuple over inputs; for several outputs, a tuple over outputs (of tuples over
    inputs when both). Computed by reverse mode, one output element at a time.
    ``create_graph=true`` makes the result differentiable (so ``jacobian`` of a
    ``jacobian`` gives second derivatives). ``strict=true`` raises AutogradError
    when an output does not depend on an input (otherwise that block is zeros).

    ``vectorize=true`` and ``strategy="forward-mode"`` are not supported (ValueError_):
    autodsl has reverse mode only, and they change speed, not values.

    Example: for ``def f(x) { return x^2 }`` and x of shape (3,), ``jacobian(f, x)`` is the
    3x3 matrix with ``2x`` on its diagonal.
    """
    _check_strategy(strategy, vectorize, "jacobian", "strategy")
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph, need_graph=True)
        outputs = _call(func, inputs, "jacobian")
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        result = []
        for i, out in enumerate(outputs):
            rows = tuple([] for _ in inputs)
            flat = reshape(out, (-1,)) if out.numel() else None
            for j in range(out.numel()):
                vj = _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
                for k, (row, g, inp) in enumerate(zip(rows, vj, inputs)):
                    if g is not None:
                        if strict and create_graph and not g.requires_grad:
                            raise AutogradError(
                                f"the jacobian of the function is independent of input {k}, which "
                                "strict=true with create_graph=true does not allow; pass strict=false")
                        row.append(g)
                    else:
                        if strict:
                            raise AutogradError(
                                f"output {i} of the function is independent of input {k}; strict=true "
                                "does not allow that (pass strict=false to get zeros)")
                        row.append(zeros_like(inp))
            blocks = []
            for k, row in enumerate(rows):
                shape = tuple(out.shape) + tuple(inputs[k].shape)
                if row:
                    blocks.append(reshape(stack(row, dim=0), shape))
                else:     # an output with no elements: an empty block
                    blocks.append(zeros(*shape, dtype=inputs[k].dtype, device=inputs[k].device))
            result.append(tuple(blocks))
        result = _grad_postprocess(tuple(result), create_graph)
        return _tuple_postprocess(result, (is_outputs_tuple, is_inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function, as PyTorch's ``torch.autograd.functional.hessian``.

    ``func(*inputs)`` must return a single one-element tensor. For one input: a
    tensor of shape ``input.shape + input.shape``; for several inputs a tuple of
    tuples, entry ``[i][j]`` of shape ``input_i.shape + input_j.shape``
    (``d^2 f / d input_i d input_j``). Computed as the jacobian of the jacobian
    (reverse over reverse). ``create_graph`` and ``strict`` as in ``jacobian``;
    ``vectorize=true`` and ``outer_jacobian_strategy="forward-mode"`` are not
    supported (ValueError_).

    Raises ValueError_ when ``func`` returns a list or a tensor with more than one element.

    Example: for ``def f(x) { return (x^3).sum() }``, ``hessian(f, x)`` is ``diag(6x)``.
    """
    _check_strategy(outer_jacobian_strategy, vectorize, "hessian", "outer_jacobian_strategy")
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def single_output(*inp):
        out = _call(func, inp, "hessian")
        is_out_tuple, t_out = _as_tuple(out, "outputs of the function", "hessian")
        _check_requires_grad(t_out, "outputs", strict)
        if is_out_tuple:
            raise ValueError_("hessian(): the function must return a single tensor, not a list")
        if out.numel() != 1:
            raise ValueError_(f"hessian(): the function must return a single number, but it returned "
                              f"shape {out.shape}; reduce it (for example with .sum())")
        return out.squeeze()

    def jac_func(*inp):
        jac = jacobian(single_output, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_function_prologue(func, inputs, v, create_graph, strict, fn_name):
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph, need_graph=True)
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph, need_graph=False)
        _validate_v(v, inputs, is_inputs_tuple, fn_name)
    elif len(inputs) != 1 or inputs[0].numel() != 1:
        raise ValueError_(f"{fn_name}(): v can be left out only when there is a single one-element "
                          "input; pass v, one tensor of each input's shape")
    outputs = _call(func, inputs, fn_name)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the function", fn_name)
    _check_requires_grad(outputs, "outputs", strict)
    if is_outputs_tuple:
        raise ValueError_(f"{fn_name}(): the function must return a single tensor, not a list")
    if outputs[0].numel() != 1:
        raise ValueError_(f"{fn_name}(): the function must return a single number, but it returned "
                          f"shape {outputs[0].shape}; reduce it (for example with .sum())")
    return is_inputs_tuple, inputs, v, is_outputs_tuple, outputs


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """The vector-Hessian product ``v^T H`` of a scalar function, as PyTorch's
    ``torch.autograd.functional.vhp``.

    ``func(*inputs)`` returns a single one-element tensor; ``v`` has the inputs'
    shapes (may be none only for a single one-element input). Returns
    ``(func_output, vhp)`` with ``vhp`` nested like ``inputs``. Computed as the
    gradient of ``<grad f, v>`` (two reverse passes). ``create_graph`` and
    ``strict`` as in ``vjp``.

    Example: for ``f(x) = (x^3).sum()``, ``vhp(f, x, v)[1]`` is ``6 x v``.
    """
    with enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs = _scalar_function_prologue(
            func, inputs, v, create_graph, strict, "vhp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """The Hessian-vector product ``H v`` of a scalar function, as PyTorch's
    ``torch.autograd.functional.hvp`` (double-backward trick: three reverse passes).

    Arguments and results as in ``vhp``; for the symmetric Hessians of twice
    continuously differentiable functions the two agree.

    Example: for ``f(x) = (x^3).sum()``, ``hvp(f, x, v)[1]`` is ``6 x v``.
    """
    with enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs = _scalar_function_prologue(
            func, inputs, v, create_graph, strict, "hvp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        grad_jac = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)
