# The compiled build's declaration of Op (Note [typed locals] in autodsl/_pure.py).
from autodsl.context cimport RunContext
from autodsl.core.node cimport Node
from autodsl.core.tensor cimport TensorBase

cdef class Op(Node):
    cdef public object inputs, _consts, _params, _out_scalar

cdef class OpFlags:
    cdef public object cls, promote, differentiable
    cdef public bint pair, floating, never_differentiable, pointwise, moves_device, view, f64, f64_floats, f64_formula, f64_lane, plain, rec, rec_any2

cdef object _apply(object cls, tuple inputs, object params)
cdef tuple _lead_sums(Op node, tuple outs, tuple shapes)
cdef object _lead_sum(TensorBase t, tuple shape)
cdef bint _fits(TensorBase t, tuple shape, object dtype)
cdef object _apply_rec(object cls, OpFlags flags, TensorBase a, TensorBase b, dict params)
cdef object _link(Op node, TensorBase out, object out_arr, tuple shapes)
