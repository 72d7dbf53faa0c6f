# The compiled build's declaration of TensorBase (Note [typed locals] in autodsl/_pure.py): its
# methods read the fields of TensorFields as struct members.
from autodsl.core.tensor_fields cimport TensorFields

cdef class TensorBase(TensorFields):
    pass
