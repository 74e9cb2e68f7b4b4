"""`finrag fetch ...`: download public data into the folders finrag's loaders read.

``finrag fetch edgar --tickers AAPL,MSFT --since 2019-01-01 --user-agent "Jane Doe jane@example.com"``
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..sources.edgar.fetch import (
    BASE_URL_ENV,
    DATA_BASE_URL_ENV,
    DEFAULT_BASE_URL,
    DEFAULT_DATA_BASE_URL,
    DEFAULT_FORMS,
    DEFAULT_MAX_RPS,
    USER_AGENT_ENV,
    EdgarFetcher,
    EdgarFetchError,
    FetchPolicy,
    MissingUserAgentError,
    make_client,
    resolve_user_agent,
)

fetch_app = typer.Typer(add_completion=False, no_args_is_help=True)


@fetch_app.callback()
def _fetch() -> None:
    """Download public data (SEC EDGAR filings) into the folders finrag reads."""


def _split(values: Optional[list[str]]) -> list[str]:
    return [v.strip() for raw in values or [] for v in raw.split(",") if v.strip()]


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"Error: {message}", err=True)
    return typer.Exit(code)


@fetch_app.command("edgar")
def edgar(
    tickers: Annotated[list[str], typer.Option("--tickers", "-t", help="tickers, comma-separated or repeated (AAPL,MSFT)")],
    since: Annotated[str, typer.Option(help="first acceptance day to download, YYYY-MM-DD (US/Eastern)")],
    forms: Annotated[
        Optional[list[str]], typer.Option("--forms", show_default=",".join(DEFAULT_FORMS), help="form types, comma-separated or repeated")
    ] = None,
    amendments: Annotated[
        bool, typer.Option("--amendments/--no-amendments", help="also download each form's /A amendments (kept in the base form's folder)")
    ] = True,
    out: Annotated[Path, typer.Option(help="output folder (writes submissions/ and sec-edgar-filings/ in it)")] = Path("edgar"),
    user_agent: Annotated[
        Optional[str],
        typer.Option(
            "--user-agent",
            envvar=USER_AGENT_ENV,
            show_envvar=True,
            help='your name and contact email, sent with every request as the SEC requires ("Jane Doe jane@example.com")',
        ),
    ] = None,
    max_rps: Annotated[float, typer.Option(help="at most this many requests per second (the SEC allows 10)")] = DEFAULT_MAX_RPS,
    universe: Annotated[
        Optional[Path], typer.Option(help="CSV with ticker,cik columns (e.g. universe/tickers.csv); tickers not in it use the SEC's ticker map")
    ] = None,
    base_url: Annotated[str, typer.Option(envvar=BASE_URL_ENV, show_envvar=True, help="www.sec.gov base URL (for a mirror)")] = DEFAULT_BASE_URL,
    data_base_url: Annotated[
        str, typer.Option(envvar=DATA_BASE_URL_ENV, show_envvar=True, help="data.sec.gov base URL (for a mirror)")
    ] = DEFAULT_DATA_BASE_URL,
    max_retries: Annotated[int, typer.Option(help="retries per request on 429, 5xx and dropped connections")] = 5,
    refresh_hours: Annotated[
        float, typer.Option(help="refetch a company's submissions JSON when the copy on disk is older than this (0: always)")
    ] = 24.0,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="progress bar on stderr")] = True,
):
    """Download SEC submissions JSON and full-submission.txt filings, politely and resumably.

    Files already on disk are not fetched again, so an interrupted run can simply be repeated.
    """
    try:
        ua = resolve_user_agent(user_agent)
    except MissingUserAgentError as exc:
        raise _fail(str(exc))
    try:
        since_day = dt.date.fromisoformat(since.strip())
    except ValueError:
        raise _fail(f"--since {since!r} is not a date (YYYY-MM-DD)")
    names = _split(tickers)
    if not names:
        raise _fail("--tickers is empty")
    form_list = _split(forms) or list(DEFAULT_FORMS)
    if max_rps <= 0 or max_rps > DEFAULT_MAX_RPS:
        raise _fail(f"--max-rps must be in (0, {DEFAULT_MAX_RPS:g}] (the SEC's limit), got {max_rps:g}")
    if universe is not None and not universe.is_file():
        raise _fail(f"--universe {universe} is not a file")
    with make_client() as client:
        policy = FetchPolicy(
            base_url=base_url, data_base_url=data_base_url, max_rps=max_rps, max_retries=max_retries, submissions_max_age_s=refresh_hours * 3600.0
        )
        fetcher = EdgarFetcher(client, ua, out, policy, progress=progress)
        try:
            summary = fetcher.run(names, since_day, form_list, include_amendments=amendments, universe=universe)
        except EdgarFetchError as exc:
            raise _fail(str(exc), 1)
    for err in summary.errors:
        typer.echo(f"failed: {err}", err=True)
    typer.echo(summary.line() + f" -> {out}")
    if not summary.ok:
        raise typer.Exit(1)


if __name__ == "__main__":
    fetch_app()
