"""Several ``sklearn-uldp privatize`` runs racing for one output, without --overwrite.

Each round starts ``--processes`` runs at once (forked processes released
by one barrier) that privatize the same table into the same reports file
and spec. Exactly one run may succeed; the others must fail with a clear
message, and the reports and spec left behind must belong together
(``estimate`` accepts them). Prints, per round, how many runs said they
succeeded and whether the pair is consistent.

Run (seconds)::

    python benchmarks/race_outputs.py                     # 16 rounds x 4 runs
    PYTHONPATH=../old python benchmarks/race_outputs.py   # another checkout
"""

import argparse
import contextlib
import io
import multiprocessing as mp
import os
import tempfile

import numpy as np
import pandas as pd


def _run(argv, barrier, queue):
    from sklearn_uldp.cli import main

    out, err = io.StringIO(), io.StringIO()
    barrier.wait()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except BaseException as exc:  # noqa: BLE001 - reported
            code, err = 99, io.StringIO(repr(exc))
    queue.put((code, err.getvalue().strip().splitlines()[-1:] or [""]))


def race(folder, table, processes, round_):
    """One round: (number of successes, messages of the failures, pair consistent)."""
    from sklearn_uldp.cli import main

    out = os.path.join(folder, f"r{round_}.csv")
    argv = [
        "privatize",
        table,
        "-o",
        out,
        "--columns",
        "c",
        "--mechanism",
        "rr",
        "--epsilon",
        "1",
        "--categories",
        "c=a,b,c",
        "--random-state",
        "none",
        "--no-progress",
    ]
    ctx = mp.get_context("fork")
    barrier, queue = ctx.Barrier(processes), ctx.Queue()
    procs = [ctx.Process(target=_run, args=(argv, barrier, queue)) for _ in range(processes)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join()
    ok = sum(code == 0 for code, _ in results)
    errors = [msg[0] for code, msg in results if code != 0]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        consistent = (
            main(
                [
                    "estimate",
                    out,
                    "--spec",
                    out + ".spec.json",
                    "-o",
                    os.path.join(folder, f"d{round_}.csv"),
                    "--estimator",
                    "emp",
                    "--no-progress",
                ]
            )
            == 0
        )
    parts = [n for n in os.listdir(folder) if n.endswith(".part")]
    return ok, errors, consistent, parts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--rows", type=int, default=20_000)
    args = parser.parse_args(argv)
    import sklearn_uldp

    print(f"sklearn_uldp from {os.path.dirname(sklearn_uldp.__file__)}")
    with tempfile.TemporaryDirectory() as folder:
        table = os.path.join(folder, "data.csv")
        rng = np.random.default_rng(0)
        pd.DataFrame({"c": rng.choice(list("abc"), size=args.rows)}).to_csv(table, index=False)
        rounds_over_one = 0
        for r in range(args.rounds):
            ok, errors, consistent, parts = race(folder, table, args.processes, r)
            rounds_over_one += ok > 1
            print(
                f"round {r:2d}: {ok} of {args.processes} runs succeeded; pair "
                f"{'consistent' if consistent else 'INCONSISTENT'}; part files left: "
                f"{len(parts)}; a failure says: {errors[0][:110] if errors else '-'}"
            )
        print(
            f"rounds in which more than one run said it succeeded: "
            f"{rounds_over_one} of {args.rounds} (load {os.getloadavg()[0]:.1f})"
        )


if __name__ == "__main__":
    main()
