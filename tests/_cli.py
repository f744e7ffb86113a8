"""Running the command line in tests: the call, the usual privatize and estimate calls, errors."""

from sklearn_uldp.cli import main


def run(argv, capsys):
    """Run the CLI on ``argv`` (paths allowed); return its exit code, stdout and stderr."""
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def privatize(data, out, column, mechanism, epsilon, capsys, *options):
    """Run ``privatize`` of one ``column`` of ``data`` into ``out``; ``options`` follow as given."""
    argv = ["privatize", data, "-o", out, "--columns", column]
    return run([*argv, "--mechanism", mechanism, "--epsilon", epsilon, *options], capsys)


def estimate(reports, spec, out, capsys, *options):
    """Run ``estimate`` of ``reports`` with ``spec`` into ``out``, without the progress bar."""
    return run(["estimate", reports, "--spec", spec, "-o", out, *options, "--no-progress"], capsys)


def assert_clear_error(code, err, *fragments):
    """The CLI failed with a usage error (exit code 2), no traceback, saying each fragment."""
    assert code == 2, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, err
