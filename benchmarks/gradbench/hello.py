"""hello's conversion: a number in, a number out."""

import autodsl


def prepare(function, input):
    return [autodsl.tensor(float(input), dtype=autodsl.float64, requires_grad=True)]


def finish(function, output):
    return output.item()
