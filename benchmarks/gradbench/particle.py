"""particle's conversion: the starting control w (a float) in; the control found (a float) out."""

import autodsl


def prepare(function, input):
    return [autodsl.tensor(float(input["w"]), dtype=autodsl.float64)]


def finish(function, output):
    return float(output.item())
