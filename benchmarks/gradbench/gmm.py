"""gmm's conversion: the sizes d, k, n, m and gamma as numbers, x (n x d) as a tensor, and
the parameters alpha (k), mu and q (k x d), l (k x d(d-1)/2) as leaves that require grad for
`jacobian`; out a number, or {"alpha", "mu", "q", "l"} gradients as lists."""

import numpy as np

import autodsl

PARAMETERS = ("alpha", "mu", "q", "l")


def prepare(function, input):
    def tensor(data, rows, cols=None, requires_grad=False):
        shape = (rows,) if cols is None else (rows, cols)
        array = np.asarray(data, dtype=np.float64).reshape(shape)     # an empty l (d = 1) too
        return autodsl.tensor(array, dtype=autodsl.float64, requires_grad=requires_grad)

    d, k, n = int(input["d"]), int(input["k"]), int(input["n"])
    active = function == "jacobian"
    return [d, k, n, tensor(input["x"], n, d), input["m"], float(input["gamma"]),
            tensor(input["alpha"], k, requires_grad=active),
            tensor(input["mu"], k, d, requires_grad=active),
            tensor(input["q"], k, d, requires_grad=active),
            tensor(input["l"], k, d * (d - 1) // 2, requires_grad=active)]


def finish(function, output):
    if function == "objective":
        return float(output.item())
    return {name: g.tolist() for name, g in zip(PARAMETERS, output, strict=True)}
