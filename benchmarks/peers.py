"""Which libraries are installed: autodsl always, the peers when they import."""

import importlib

PEERS = ("torch", "autograd", "micrograd")
LIBS = ("autodsl",) + PEERS


def load():
    """Return ({name: module}, {name: reason it is skipped})."""
    import autodsl

    mods, skipped = {"autodsl": autodsl}, {}
    for name in PEERS:
        try:
            mod = importlib.import_module("micrograd.engine" if name == "micrograd" else name)
        except Exception as exc:  # not installed or broken: reported, never a failure
            skipped[name] = f"not installed ({type(exc).__name__}: {exc})"
            continue
        if name == "torch":
            mod.set_num_threads(1)
            try:
                mod.set_num_interop_threads(1)
            except RuntimeError:
                pass
        mods[name] = mod
    return mods, skipped


def version(name):
    try:
        from importlib.metadata import version as v
        return v(name)
    except Exception:
        return "?"
