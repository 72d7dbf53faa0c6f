"""samples/iris.ad with each optimizer, against the same training in PyTorch.

The sample prints its optimizer (with its settings), the loss every 40 steps and the training
accuracy. torch trains the same classifier (the same standardized data, zeros to start, the
optimizer with the settings the sample printed) and must print the same numbers: the losses to
the 4 decimals shown, the same count of correctly classified flowers, and that count is at least
90% of them. The data file itself is checked against what is known of Fisher's data.
"""
from __future__ import annotations

import contextlib
import io
import itertools
import re
from pathlib import Path

import numpy as np
import pytest

from autodsl.cli import main as cli

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "iris.ad"
DATA = ROOT / "samples" / "data" / "iris.csv"


def test_the_data_is_fishers():
    lines = DATA.read_text().splitlines()
    assert lines[0] == "sepal_length,sepal_width,petal_length,petal_width,species"
    rows = np.array([[float(v) for v in ln.split(",")] for ln in lines[1:]])
    assert rows.shape == (150, 5)
    np.testing.assert_allclose(rows[:, :4].mean(axis=0), [5.843, 3.057, 3.758, 1.199], atol=5e-4)
    assert np.bincount(rows[:, 4].astype(int)).tolist() == [50, 50, 50]
    assert rows[:, 4].tolist() == sorted(rows[:, 4].tolist())          # 50 of each, in order
    # the two rows that the UCI copy has wrong (Bezdek et al., 1999), as Fisher printed them
    assert rows[34, :4].tolist() == [4.9, 3.1, 1.5, 0.2]
    assert rows[37, :4].tolist() == [4.9, 3.6, 1.4, 0.1]


def run(opt: str) -> list[str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        status = cli.main([str(SAMPLE), "--set", f"opt={opt}"])
    lines = buf.getvalue().splitlines()
    assert status == 0, "\n".join(lines)
    return lines


def torch_run(name: str, settings: dict, steps: int, every: int):
    """(losses every ``every`` steps, correctly classified count) of the same training in torch."""
    torch = pytest.importorskip("torch")
    rows = np.loadtxt(DATA, delimiter=",", skiprows=1)
    x = torch.tensor(rows[:, :4])
    y = torch.tensor(rows[:, 4]).long()
    x = (x - x.mean(dim=0)) / x.std(dim=0)
    w = torch.zeros(4, 3, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    opt = (torch.optim.SGD if name == "sgd" else torch.optim.Adam)([w, b], **settings)
    losses = []
    for i in range(1, steps + 1):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(x @ w + b, y)
        loss.backward()
        opt.step()
        if i % every == 0:
            losses.append(loss.item())
    with torch.no_grad():
        correct = int(((x @ w + b).argmax(dim=1) == y).sum())
    return losses, correct


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_iris_trains_as_torch_does(opt):
    lines = run(opt)
    head = re.fullmatch(r"optimizer: (\w+)\(2 parameters, (.*)\)", lines[0])
    assert head and head.group(1) == opt, lines[0]
    settings = {k: float(v) for k, v in (kv.split("=") for kv in head.group(2).split(", "))}
    steps = [(int(m.group(1)), float(m.group(2)))
             for m in (re.fullmatch(r"step (\d+): loss (\S+)", ln) for ln in lines) if m]
    acc = next(re.fullmatch(r"training accuracy: (\S+) \((\d+) of 150 flowers\)", ln)
               for ln in lines if ln.startswith("training accuracy"))
    every = steps[0][0]
    assert [s for s, _ in steps] == list(range(every, every * len(steps) + 1, every))
    want_losses, want_correct = torch_run(opt, settings, steps[-1][0], every)
    for (i, got), want in zip(steps, want_losses):
        assert abs(got - want) <= 5.1e-5, f"step {i}: loss {got}, torch's {want:.6f}"
    assert all(b < a for (_, a), (_, b) in itertools.pairwise(steps))   # the loss goes down
    assert int(acc.group(2)) == want_correct >= 135                      # at least 90% right
    assert float(acc.group(1)) == round(want_correct / 150, 3)
    assert lines[-1] == "calls of train: {'replayed': 199, 'eager': 1, 'captures': 1}"
