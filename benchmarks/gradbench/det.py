"""det's conversion: A (row-major, ell * ell floats) and ell in; a float or ell * ell floats out."""

import autodsl


def prepare(function, input):
    ell = int(input["ell"])
    A = autodsl.tensor(input["A"], dtype=autodsl.float64).reshape(ell, ell)
    if function == "gradient":
        A = A.detach().requires_grad_()
    return [A]


def finish(function, output):
    if function == "primal":
        return float(output.item())
    return output.reshape(-1).tolist()
