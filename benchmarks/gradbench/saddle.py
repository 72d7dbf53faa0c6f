"""saddle's conversion: the start point (2 floats) in; the x and y found (4 floats) out."""

import autodsl


def prepare(function, input):
    return [autodsl.tensor(input["start"], dtype=autodsl.float64)]


def finish(function, output):
    return output.tolist()
