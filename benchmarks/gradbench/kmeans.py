"""kmeans' conversion: the points (n x d) and the centroids (k x d, a leaf that requires
grad for `dir`) in; a number or a k x d list out."""

import numpy as np

import autodsl


def prepare(function, input):
    points = np.asarray(input["points"], dtype=np.float64)
    centroids = np.asarray(input["centroids"], dtype=np.float64)
    return [autodsl.tensor(points, dtype=autodsl.float64),
            autodsl.tensor(centroids, dtype=autodsl.float64, requires_grad=function == "dir")]


def finish(function, output):
    return float(output.item()) if function == "cost" else output.tolist()
