# The compiled build's engine reads nodes as the extension type (Note [typed locals] in
# autodsl/_pure.py).
from autodsl.core.node cimport Node

cdef class GraphTask:
    cdef public object seeds, retain_graph, create_graph, targets, accumulate, retained, recorder
    cdef public object _needed_nodes, _observers, _captured, _staged, _ran
