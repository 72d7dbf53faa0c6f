"""A GradBench tool for autodsl: `python -m benchmarks.gradbench` speaks GradBench's protocol.

Each eval's functions are written in the language, one script per eval
(`benchmarks/gradbench/NAME.ad`); the Python side only speaks the protocol
(adapter.py) and converts each eval's JSON input to tensors and the results
back (`benchmarks/gradbench/NAME.py`, found by the module's name: see
adapter.py for what such a file provides). Run one eval with GradBench's
`run.sh` (../shared/gradbench/run.sh); `python -m benchmarks.gradbench.table`
compares with GradBench's PyTorch and JAX tools.
"""
