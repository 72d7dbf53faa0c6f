"""ode's conversion: x (a list of n floats) and s in; a list of n floats out."""

import autodsl


def prepare(function, input):
    # Only the gradient differentiates; the primal runs without recording a graph.
    x = autodsl.tensor(input["x"], dtype=autodsl.float64, requires_grad=function == "gradient")
    return [x, int(input["s"])]


def finish(function, output):
    return output.tolist()
