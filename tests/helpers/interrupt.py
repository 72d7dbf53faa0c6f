"""Ctrl-C for tests: SIGINT to the main thread from a timer, sent again until the block ends.

One signal can be lost: when it lands while Python code runs in a finalizer (a ``__del__``
of an object an earlier test left for the collector), the KeyboardInterrupt is reported as
"ignored" there instead of reaching the loop. A user presses Ctrl-C again; so does this.
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

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        yield sent
    finally:
        done.set()
        sender.join()
