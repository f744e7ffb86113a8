"""CPU time of ``sklearn-uldp --help`` against ``python -c "import pandas"`` (issue 30).

The goal: the top-level help within 1.5 times the CPU of importing pandas
(it took 1.5 s against 0.44 s when every command's module, numpy, pandas,
scikit-learn and numba loaded to print it). Both run in fresh processes,
alternately (so load drift affects both alike); the CPU time is the
children's user + system time. Prints each run and the ratio of medians.

    python benchmarks/bench_cli_help.py --runs 7
"""

import argparse
import os
import statistics
import subprocess
import sys

COMMANDS = {
    "sklearn-uldp --help": [sys.executable, "-m", "sklearn_uldp", "--help"],
    "import pandas": [sys.executable, "-c", "import pandas"],
}


def cpu_seconds(argv):
    """The CPU time (user + system) of one run of ``argv`` in a fresh process."""
    before = os.times()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    after = os.times()
    return (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    times = {name: [] for name in COMMANDS}
    for _ in range(args.runs):
        for name, command in COMMANDS.items():  # alternately
            times[name].append(cpu_seconds(command))
    for name, values in times.items():
        shown = ", ".join(f"{v:.3f}" for v in values)
        print(f"{name:>20}: median {statistics.median(values):.3f} s CPU ({shown})")
    ratio = statistics.median(times["sklearn-uldp --help"]) / statistics.median(
        times["import pandas"]
    )
    print(f"ratio: {ratio:.2f} (goal <= 1.5); load: {os.getloadavg()[0]:.2f}")
    return 0 if ratio <= 1.5 else 1


if __name__ == "__main__":
    sys.exit(main())
