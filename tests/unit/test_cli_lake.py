"""Commands that read a lake stop on a lake that is not there; no command takes a file for a lake."""

import pytest
from typer.testing import CliRunner

from finrag_dagster.cli.main import LakeMissing, app


@pytest.mark.parametrize("args", [["status"], ["summary"], ["search", "Intel guidance"], ["report"], ["explain", "N0"]], ids=lambda a: a[0])
def test_a_read_command_on_a_missing_lake_is_an_error_and_creates_nothing(args, tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    missing = tmp_path / "no_such_lake"
    res = CliRunner().invoke(app, [*args, "--lake", str(missing)])
    assert isinstance(res.exception, LakeMissing) and str(res.exception) == f"no lake at {missing}"
    assert not missing.exists() and not (tmp_path / "reports").exists()  # report wrote an empty lake and report before
    (tmp_path / "notes").mkdir()
    res = CliRunner().invoke(app, [*args, "--lake", str(tmp_path / "notes")])
    assert isinstance(res.exception, LakeMissing) and "holds no finrag table" in str(res.exception)


@pytest.mark.parametrize("args", [["status"], ["explain", "N0"], ["demo", "--end", "2019-01-31"]], ids=lambda a: a[0])
def test_a_file_given_as_the_lake_is_named(args, tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    f = tmp_path / "lake.txt"
    f.write_text("not a lake")
    res = CliRunner().invoke(app, [*args, "--lake", str(f)])
    assert isinstance(res.exception, LakeMissing) and str(res.exception) == f"the lake {f} is a file, not a folder"
