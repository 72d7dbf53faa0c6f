"""Issue 12, break 5 (input size): scripts, standard input and files that ``include`` and ``load``
read are refused before they are read whole: above a bound (16 MB, ``--source-limit``,
``Session(source_limit=...)``), and binary input at its first bytes ("not a text file").

The child processes run under an address-space bound, so that a reader that does not stop
fails with MemoryError in a few seconds instead of taking the machine's memory.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import autodsl as ad
from autodsl.errors import ValueError_

posix_only = pytest.mark.skipif(sys.platform == "win32" or not os.path.exists("/dev/zero"),
                                reason="needs /dev/zero, /dev/urandom and setrlimit")


def _bounded():
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def _autodsl(*args, stdin=None, timeout=20):
    p = subprocess.run([sys.executable, "-m", "autodsl", *args], stdin=stdin, capture_output=True,
                       text=True, timeout=timeout, preexec_fn=_bounded, check=False)
    return p.returncode, p.stdout, p.stderr


def _refused(rc, err, words):
    assert rc == 2, err
    assert words in err
    assert "Traceback" not in err and "internal error" not in err


@posix_only
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_as_the_script_is_refused_at_once(device):
    rc, _, err = _autodsl(device)
    _refused(rc, err, f"cannot read {device}: it is not a text file")


@posix_only
def test_binary_standard_input_is_refused_at_once():
    with open("/dev/zero", "rb") as zero:
        rc, _, err = _autodsl("-", stdin=zero)
    _refused(rc, err, "cannot read standard input: it is not a text file")
    with open("/dev/urandom", "rb") as noise:
        rc, _, err = _autodsl(stdin=noise)
    _refused(rc, err, "cannot read standard input: it is not")


@posix_only
def test_a_script_larger_than_the_bound_is_refused_and_the_option_raises_it(tmp_path):
    big = tmp_path / "big.ad"
    big.write_bytes(b"x = 1\n" + b" " * 17_000_000 + b"\nprint(x + 1)\n")
    rc, _, err = _autodsl(str(big))
    _refused(rc, err, "is larger than 16 MB")
    assert "--source-limit" in err
    rc, out, err = _autodsl("--source-limit", "20M", str(big))
    assert (rc, out) == (0, "2\n"), err
    with open(big, "rb") as f:
        rc, _, err = _autodsl("--source-limit", "1K", "-", stdin=f)
    _refused(rc, err, "cannot read standard input: it is larger than 1 KB")


@posix_only
def test_a_long_stream_stops_at_the_bound():
    """A pipe has no size to look at: reading stops one byte past the bound."""
    p = subprocess.Popen(["sh", "-c", "yes 'x = 1'"], stdout=subprocess.PIPE)
    try:
        rc, _, err = _autodsl("--source-limit", "2M", "-", stdin=p.stdout)
    finally:
        p.kill()
        p.wait()
        p.stdout.close()
    _refused(rc, err, "cannot read standard input: it is larger than 2 MB")


def test_scripts_still_read_as_text(tmp_path):
    script = tmp_path / "crlf.ad"
    script.write_bytes("s = \"é\"\r\nprint(s)\rprint(len(s))\n".encode())
    p = subprocess.run([sys.executable, "-m", "autodsl", str(script)], capture_output=True, timeout=20,
                       check=False)
    assert p.returncode == 0, p.stderr
    assert p.stdout.decode() == "é\n1\n"


def test_include_and_load_refuse_large_and_binary_files(tmp_path):
    (tmp_path / "nul.ad").write_bytes(b"x = 1\x00\n")
    (tmp_path / "big.ad").write_text("y = 2\n" + "# padding\n" * 200)
    np.savetxt(tmp_path / "t.csv", np.ones((50, 4)), delimiter=",")
    s = ad.Session(base_dir=str(tmp_path), source_limit="1K")
    assert s.source_limit == 1000
    with pytest.raises(ValueError_, match='include\\(\\): "[^"]*nul.ad" is not a text file'):
        s.run('include("nul.ad")')
    with pytest.raises(ValueError_, match='"[^"]*big.ad" is larger than 1 KB.*source_limit'):
        s.run('include("big.ad")')
    with pytest.raises(ValueError_, match='load\\(\\): "[^"]*t.csv" is larger than 1 KB'):
        s.run('load("t.csv")')
    s.source_limit = None                  # the default bound again: both fit
    assert s.source_limit == 16_000_000
    s.run('include("big.ad")\nt = load("t.csv")')
    assert s["y"] == 2 and s["t"].shape == (50, 4)
    with pytest.raises(ValueError_, match="source_limit"):
        ad.Session(source_limit=[1])
