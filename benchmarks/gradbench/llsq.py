"""llsq's conversion: x (a leaf that requires grad for `gradient`) and the number n in; a number or a list out."""

import numpy as np

import autodsl


def prepare(function, input):
    x = np.asarray(input["x"], dtype=np.float64)
    return [autodsl.tensor(x, dtype=autodsl.float64, requires_grad=function == "gradient"),
            int(input["n"])]


def finish(function, output):
    return float(output.item()) if function == "primal" else output.tolist()
