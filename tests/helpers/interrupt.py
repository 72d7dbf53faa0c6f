"""Ctrl-C for tests: SIGINT to the main thread from a timer, sent again until the block ends.

One signal can be lost: when it lands while Python code runs in a finalizer (a ``__del__``
of an object an earlier test left for the collector), the KeyboardInterrupt is reported as
"ignored" there instead of reaching the loop. A user presses Ctrl-C again; so does this.

A test run started as a background job of a shell without job control (``cmd &`` in a
script) inherits SIGINT ignored, and Python then installs no handler for it: the block sets
Python's own handler while it runs, and ``sigint_default`` does the same for a child process
(Popen's ``preexec_fn``), so that the signal these tests send is one the program sees.
"""
from __future__ import annotations

import contextlib
import signal
import threading


@contextlib.contextmanager
def sigint_after(first: float = 0.3, every: float = 2.0):
    """Send SIGINT to the main thread ``first`` seconds into the block, then every ``every``
    seconds until it ends; yields a list that counts the signals sent."""
    done = threading.Event()
    sent: list[int] = []

    def send():
        if done.wait(first):
            return
        while not done.is_set():
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            sent.append(1)
            if done.wait(every):
                return

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        yield sent
    finally:
        done.set()
        sender.join()
        signal.signal(signal.SIGINT, previous)


def sigint_default() -> None:
    """SIGINT's default action, in a child process about to start (Popen's ``preexec_fn``)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
