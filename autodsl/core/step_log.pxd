# The compiled build's StepLog (Note [typed locals] in autodsl/_pure.py): its lists are struct
# fields, so that ``step``, run for every node of a Session's backward, appends without a lookup.
from autodsl.core.node cimport Node
from autodsl.core.tensor_fields cimport TensorFields

cdef class StepLog:
    cdef public object roots, deps, create_graph
    cdef public dict hooks, _leaves
    cdef public list _nodes, _grads, _sends
