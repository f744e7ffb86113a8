"""Measurement helpers shared by the benchmark scripts.

Peak resident memory, Zipf data, the total variation of a raw estimate, and
the runner of one benchmark cell in a fresh interpreter (so each cell's peak
memory and import/JIT costs are its own). Kept here so every script measures
the same way.
"""

import contextlib
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

#: The line a cell prints before its JSON result (``--cell`` mode of a script).
RESULT_PREFIX = "@@RESULT@@"

#: The thread pools a child's ``--threads`` cap applies to.
THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMBA_NUM_THREADS",
)


def peak_rss_mb():
    """Peak resident memory of this process, in MiB (Linux: ru_maxrss is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


@contextlib.contextmanager
def compiled_warmup():
    """An untimed warm-up that takes the compiled loops whatever its size.

    The package runs jobs below ``COMPILE_MIN_WORK`` through numpy (a first
    fit compiles nothing), so a warm-up on a slice would leave the timed
    call to compile (or load from numba's cache) the loops of the full
    size; inside this context the threshold is 0.
    """
    from sklearn_uldp.utils import _numba

    saved = getattr(_numba, "COMPILE_MIN_WORK", None)  # None: code without the gate
    if saved is None:
        yield
        return
    _numba.COMPILE_MIN_WORK = 0
    try:
        yield
    finally:
        _numba.COMPILE_MIN_WORK = saved


def timed(function):
    """``function()``, its wall time and its CPU time (all threads of this process)."""
    start, cpu = time.perf_counter(), time.process_time()
    result = function()
    return result, time.perf_counter() - start, time.process_time() - cpu


def zipf_probabilities(k, s=1.1):
    """The Zipf(``s``) distribution over ``k`` categories (rank 1 most frequent)."""
    w = 1.0 / np.arange(1, k + 1, dtype=float) ** s
    return w / w.sum()


def tv_distance(est, true):
    """Total variation 0.5 * L1 of the estimate as is (not renormalised).

    Unbiased estimates with negative entries are penalised honestly.
    """
    return 0.5 * float(np.abs(np.asarray(est, dtype=float).ravel() - true).sum())


def child_env(threads, variables=THREAD_VARS):
    """This environment, with the thread pools capped at ``threads`` (0: as is)."""
    env = dict(os.environ)
    if threads > 0:
        env.update({v: str(threads) for v in variables})
    return env


def run_cell_process(script, payload, *, timeout, env=None):
    """Run ``script --cell <payload as JSON>`` in a fresh interpreter.

    Returns the :class:`subprocess.CompletedProcess` (read its result with
    :func:`cell_result`); raises :class:`subprocess.TimeoutExpired` after
    ``timeout`` seconds.
    """
    command = [sys.executable, os.path.abspath(script), "--cell", json.dumps(payload)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


def cell_result(done):
    """The JSON a cell printed after :data:`RESULT_PREFIX`, or None."""
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX) :])
    return None


def failure_tail(done):
    """The last line of a failed cell's stderr (or its exit code)."""
    return (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
