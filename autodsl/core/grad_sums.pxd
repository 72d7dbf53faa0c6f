# The compiled build reads gradients as the extension type (Note [typed locals] in
# autodsl/_pure.py).
from autodsl.core.tensor_fields cimport TensorFields
