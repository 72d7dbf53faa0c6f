"""lstm's conversion: main_params (2l x 4b) and extra_params (3 x b), leaves that require grad
for `jacobian`, the state (2l x b) and the sequence (c x b) in; a number or a list out."""

import numpy as np

import autodsl


def prepare(function, input):
    def tensor(name, requires_grad=False):
        return autodsl.tensor(np.asarray(input[name], dtype=np.float64), dtype=autodsl.float64,
                              requires_grad=requires_grad)

    active = function == "jacobian"
    return [tensor("main_params", active), tensor("extra_params", active), tensor("state"),
            tensor("sequence")]


def finish(function, output):
    return float(output.item()) if function == "objective" else output.tolist()
