"""Running the `pyhipbench` command in-process, for the CLI tests."""
from __future__ import annotations

from pyhipbench import cli


def call(argv: list[object], capsys) -> tuple[int, str, str]:
    """main(argv)'s exit status (argparse's SystemExit included), stdout and stderr; never a traceback."""
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exited:
        code = exited.code
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err
