"""python -m benchmarks.gradbench: the autodsl tool, reading GradBench messages on stdin."""

from benchmarks.gradbench.adapter import main

main()
