# The compiled build's declaration of TensorFields (Note [typed locals] in autodsl/_pure.py). A new
# one starts with None, 0 and False in its fields, which new_tensor relies on there.

cdef class TensorFields:
    cdef public object _data, _version, _base, grad_fn, _grad, _accumulate, device
    cdef public object _view_chain, _pos, _views, _alias
    cdef public bint _requires_grad, _retains_grad
    cdef public Py_ssize_t _gen, _base_gen
    cdef object __weakref__
