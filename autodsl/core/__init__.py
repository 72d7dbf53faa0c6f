"""The reverse-mode machinery: grad mode, graph nodes, the engine and its trace.

It knows tensors only through a few attributes (``grad_fn``, ``requires_grad``,
``grad``) and nothing of the language.
"""
