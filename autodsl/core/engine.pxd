# The compiled build's engine reads nodes as the extension type (Note [typed locals] in
# autodsl/_pure.py).
from autodsl.core.node cimport Node
