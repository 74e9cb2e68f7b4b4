"""The one resource: where the settings and the lake are."""

from __future__ import annotations

import os
from functools import lru_cache

import dagster as dg

from ..core.calendar import TradingCalendar, nyse
from ..core.day_run import DayRun
from ..core.settings import Settings, load_settings, with_lake
from ..core.storage.lake import Lake
from ..core.tables import open_lake


class FinragResource(dg.ConfigurableResource):
    """Settings and the parquet lake they point at.

    Precedence: ``settings_json`` (a full settings object, used by tests and `finrag demo`),
    else the TOML at ``config_path``, else ``$FINRAG_CONFIG``, else the papers' defaults;
    ``lake_dir`` (or ``$FINRAG_LAKE``) overrides where the lake is: a folder or an object-store
    URI (``s3://bucket/prefix``).
    """

    config_path: str = ""
    lake_dir: str = ""
    settings_json: str = ""

    @classmethod
    def from_settings(cls, s: Settings) -> "FinragResource":
        return cls(settings_json=s.model_dump_json(), lake_dir=s.lake_uri or str(s.lake_dir))

    def settings(self) -> Settings:
        return _settings(self.settings_json, self.config_path, self.lake_dir, os.environ.get("FINRAG_CONFIG", ""), os.environ.get("FINRAG_LAKE", ""))

    def lake(self) -> Lake:
        return open_lake(self.settings())

    def calendar(self) -> TradingCalendar:
        return nyse()

    def day_run(self, days: list[str]) -> DayRun:
        """Settings, lake and calendar of this resource with a step's decision days."""
        return DayRun(self.settings(), self.lake(), self.calendar(), days)


@lru_cache(maxsize=16)
def _settings(settings_json: str, config_path: str, lake_dir: str, _env_cfg: str, _env_lake: str) -> Settings:
    s = Settings.model_validate_json(settings_json) if settings_json else load_settings(config_path or None)
    if lake_dir and lake_dir not in (s.lake_uri, str(s.lake_dir)):
        s = with_lake(s, lake_dir)
    return s
