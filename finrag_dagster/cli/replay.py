"""`finrag replay`: replay a raw folder day by day into a landing folder, for the sensors to pick up."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated, Optional

import typer

from .options import day

replay_app = typer.Typer(add_completion=False)  # help: the docstring of `replay`


@replay_app.callback(invoke_without_command=True)
def replay(
    landing: Annotated[Path, typer.Option("--landing", help="landing folder the files are released into (created; a re-run resumes)")],
    from_: Annotated[
        str,
        typer.Option(
            "--from", metavar="YYYY-MM-DD", help="first day of the replay (YYYY-MM-DD); everything public before it is released at the start"
        ),
    ],
    to: Annotated[str, typer.Option("--to", metavar="YYYY-MM-DD", help="last day (YYYY-MM-DD); the replay ends once this day's close is released")],
    speed: Annotated[float, typer.Option(help="simulated seconds per wall-clock second (0: as fast as possible, one step after another)")] = 0.0,
    config: Annotated[Optional[Path], typer.Option(help="settings TOML (default: $FINRAG_CONFIG or built-in); gives the embedded world")] = None,
    source_raw: Annotated[
        Optional[Path], typer.Option("--source-raw", help="raw folder to replay (default: the settings' embedded world, built if missing)")
    ] = None,
    lake: Annotated[
        Optional[Path],
        typer.Option(help="lake folder written into the settings snippet for the pipeline over the landing folder (default: <landing>/_lake)"),
    ] = None,
    post_close: Annotated[float, typer.Option(help="minutes after each close when that day's bars are released")] = 5.0,
    pre_open: Annotated[float, typer.Option(help="minutes before each open when the night's news is released")] = 30.0,
    intraday_hours: Annotated[float, typer.Option(help="hours between release steps during a session (0: none)")] = 2.0,
    max_wait: Annotated[
        Optional[float], typer.Option(help="longest wall-clock wait between two steps, in seconds (shortens nights and weekends)")
    ] = None,
):
    """Replay the world (or any raw folder of the same layout) day by day into a landing folder.

    Items appear in the landing folder, in their original formats, only once their public time has
    passed on the replay clock: news at its time stamp (a date-only stamp after 23:59:59 New York of
    that date), a day's price bars after its close, a filing after its SEC acceptance time. Point
    finrag at the landing folder with the settings written to <landing>/_replay/settings.toml and
    turn the sensors on to watch the daily loop run.
    """
    from ..core.settings import load_settings
    from ..sources.base import SourceError
    from ..sources.registry import news_clock
    from ..sources.replay import Replayer, ReplayError, write_settings_snippet

    d0, d1 = day(from_, "--from"), day(to, "--to")
    _check_options(d0, d1, to, from_=from_, speed=speed, post_close=post_close, pre_open=pre_open, intraday_hours=intraday_hours)
    try:
        s = load_settings(config)
    except Exception as e:  # a bad TOML: say which file and why, no traceback
        raise typer.BadParameter(f"cannot read settings: {e}", param_hint="--config") from None
    landing = landing.resolve()
    source_raw, market = _source(s, source_raw)
    clock = news_clock(s)
    lake_dir = (lake or landing / "_lake").resolve()
    try:
        rp = Replayer(source_raw, landing, news_clock=clock)
        snippet = write_settings_snippet(landing, lake_dir, s, first_day=d0, last_day=d1, market_ticker=market, news_clock=clock)
    except (SourceError, ReplayError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"replaying {source_raw}")
    typer.echo(f"     into {landing}   {d0} .. {d1}   speed {'max' if speed == 0 else f'{speed:g}x'}")
    if rp.now is not None:
        typer.echo(f"resuming from the replay clock {rp.now.isoformat()}")
    typer.echo(f"settings for the pipeline over the landing folder: {snippet}")
    typer.echo(f"  e.g. finrag dev --config {snippet}  (then turn the sensors on)")
    steps = dict(
        pre_open=dt.timedelta(minutes=pre_open),
        post_close=dt.timedelta(minutes=post_close),
        intraday_every=dt.timedelta(hours=intraday_hours) if intraday_hours > 0 else None,
        max_wait=max_wait,
    )
    _run(rp, d0, d1, speed, steps)


def _check_options(d0, d1, to: str, from_: str, speed: float, post_close: float, pre_open: float, intraday_hours: float) -> None:
    """A clear error for a range that ends before it starts or a negative speed or step."""
    if d1 < d0:
        raise typer.BadParameter(f"{to} is before --from {from_}", param_hint="--to")
    if speed < 0:
        raise typer.BadParameter("must be 0 or more", param_hint="--speed")
    for name, v in (("--post-close", post_close), ("--pre-open", pre_open), ("--intraday-hours", intraday_hours)):
        if v < 0:
            raise typer.BadParameter("must be 0 or more", param_hint=name)


def _source(s, source_raw: Path | None) -> tuple[Path, str]:
    """The raw folder to replay and its market ticker: the one given, or the settings' embedded world (built if missing)."""
    from ..sources.synthetic.world import settings_stamp

    if source_raw is not None:
        return source_raw.resolve(), s.market_ticker
    raw = s.world_dir / "raw"
    stamp = s.world_dir / "world_settings.json"  # what the synthetic_world asset writes
    want = settings_stamp(s.world)
    if not (raw / "universe" / "tickers.csv").exists():
        from ..sources.synthetic import generate_world

        typer.echo(f"building the embedded world under {s.world_dir} ...")
        generate_world(s.world, s.world_dir)
        stamp.write_text(want)
    elif stamp.exists() and stamp.read_text() != want:
        typer.echo(f"note: the world under {s.world_dir} was built with other world settings; replaying it as it is (`finrag world` rebuilds it)")
    return raw, s.world.market_ticker


def _run(rp, d0, d1, speed: float, steps: dict) -> None:
    """Release day by day, one line per session; Ctrl-C stops with the clock to resume from."""
    from ..sources.replay import ReplayError, last_closed_session

    def show(rep) -> None:
        st = rep.stats
        label = "before " + d0.isoformat() if rep.session is None else rep.session.isoformat()
        typer.echo(f"{label:>17}  news {st.news:5d}  prices {st.prices:5d}  filings {st.filings:4d}   clock {st.now.isoformat()}")

    try:
        reports = rp.run(d0, d1, speed, on_session=show, **steps)
    except ReplayError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        typer.echo(
            f"stopped; the replay clock is {rp.now.isoformat() if rp.now is not None else 'not started'} (run the same command again to resume)",
            err=True,
        )
        raise typer.Exit(130) from None
    if not reports:
        typer.echo(f"nothing to do: the replay clock ({rp.now.isoformat()}) is already past {d1}'s close")
    last = last_closed_session(int(rp.now.value))
    typer.echo(f"done: replay clock {rp.now.isoformat()}, last closed session {last.isoformat() if last else 'none'}")


if __name__ == "__main__":
    replay_app()
