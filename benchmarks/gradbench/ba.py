"""ba's conversion: one camera, point, weight and feature, repeated n, m and p times
(as GradBench's tools do: observation i sees camera i mod n and point i mod m),
in; the objective's first values and counts, or the Jacobian's first 30 entries
and last, out (the eval's shortened forms of ba.hpp's outputs)."""

import numpy as np

import autodsl


def prepare(function, input):
    n, m, p = int(input["n"]), int(input["m"]), int(input["p"])
    cams = np.tile(np.asarray(input["cam"], dtype=np.float64), (n, 1))
    X = np.tile(np.asarray(input["x"], dtype=np.float64), (m, 1))
    w = np.full(p, float(input["w"]))
    feats = np.tile(np.asarray(input["feat"], dtype=np.float64), (p, 1))
    i = np.arange(p)
    obs = np.stack([i % n, i % m], axis=1)
    return [autodsl.tensor(cams), autodsl.tensor(X), autodsl.tensor(w),
            autodsl.tensor(obs, dtype=autodsl.int64), autodsl.tensor(feats)]


def finish(function, output):
    if function == "objective":
        reproj_err, w_err = (t.numpy() for t in output)
        return {"reproj_error": {"elements": reproj_err[:2].tolist(), "repeated": len(reproj_err) // 2},
                "w_err": {"element": float(w_err[0]), "repeated": len(w_err)}}
    rows, cols, vals = (t.numpy() for t in output)

    def shorten(a):
        return np.concatenate([a[:30], a[-1:]]).tolist()
    return {"rows": shorten(rows), "cols": shorten(cols), "vals": shorten(vals)}
