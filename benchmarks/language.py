"""W6: the language's overhead. W1 and W4 written as .ad scripts (a `for`
loop) and run through Session.run, against the same work through the Python
API (the autodsl runs of graphs.py and mlp.py). Session.run keeps what it parsed
(Note [parsed once] in autodsl/session.py), so the runs after the first do not
parse; W1's "parsed each run" parses its source every time, as a fresh script
run does."""

import numpy as np

from . import graphs, mlp

W1_SCRIPT = """\
x = tensor({x0}, requires_grad=true, dtype=float64)
y = x
for i in range({n}) {{ y = relu(y*0.999 + 0.001) }}
y.backward()
"""

W4_SCRIPT = """\
for step in range({steps}) {{
    h1 = relu(X @ W1 + b1)
    h2 = relu(h1 @ W2 + b2)
    loss = cross_entropy(h2 @ W3 + b3, Y)
    W1.grad = none; b1.grad = none; W2.grad = none
    b2.grad = none; W3.grad = none; b3.grad = none
    loss.backward()
    no_grad {{
        W1 -= lr * W1.grad; b1 -= lr * b1.grad; W2 -= lr * W2.grad
        b2 -= lr * b2.grad; W3 -= lr * W3.grad; b3 -= lr * b3.grad
    }}
}}
"""

PARAMS = ("W1", "b1", "W2", "b2", "W3", "b3")


def w1_runs(ad, n):
    source = W1_SCRIPT.format(x0=graphs.X0, n=n)
    session = ad.Session(echo=False)

    def script():
        session.run(source)
        return session["x"].grad.numpy()

    def parsed_each_run():
        session.run(session.parse(source))
        return session["x"].grad.numpy()
    return {"script": script, "script parsed each run": parsed_each_run,
            "api": graphs.make_runs("W1", n, {"autodsl": ad})["autodsl"]}


def w4_runs(ad, dtype, steps, batch=mlp.BATCH):
    X, y, init = mlp.problem(dtype, batch)
    adt = ad.float32 if dtype == np.float32 else ad.float64
    source = W4_SCRIPT.format(steps=steps)
    session = ad.Session(echo=False)
    session["X"] = ad.tensor(X, dtype=adt)
    session["Y"] = ad.tensor(y, dtype=ad.int64)
    session["lr"] = mlp.LR

    def script():
        for name, p in zip(PARAMS, init):
            session[name] = ad.tensor(p.copy(), requires_grad=True, dtype=adt)
        session.run(source)
        return [session[name].grad.numpy() for name in PARAMS]
    return {"script": script, "api": mlp.make_runs(dtype, steps, {"autodsl": ad}, batch)["autodsl"]}
