# The compiled build's declarations of node.py's classes (Note [typed locals] in autodsl/_pure.py):
# as extension types their attributes are struct fields, which compiled code typed as these
# classes reads and writes without a lookup. The .py class bodies stay the pure-Python build.

from autodsl.core.tensor_fields cimport TensorFields

cdef class SavedTensor:
    cdef public object held, version, data, counter

cdef class SavedOutput:
    cdef public object data, counter, version, device, cls

cdef class Node:
    cdef public object next_edges, input_shapes, input_dtypes, pos, _saved, _retained, _pre_hooks
    cdef public Py_ssize_t seq_nr       # (a C integer: no int object per node)
    cdef public bint _released, _record     # (_record: an Op's; here it packs with _released: Note [node memory])
    cdef object __weakref__
