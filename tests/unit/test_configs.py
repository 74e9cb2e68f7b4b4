"""Every shipped settings file loads, and the oracle's GPU and publisher-class twins differ from it only in the reader, the
world's publisher utilities and the lake."""

from pathlib import Path

import pytest

from finrag_dagster.core.settings import load_settings

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.toml"))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_config_loads(path, monkeypatch):
    monkeypatch.delenv("FINRAG_LAKE", raising=False)
    s = load_settings(path)
    assert s.lake_dir.is_absolute()


def test_oracle_configs(monkeypatch):
    monkeypatch.delenv("FINRAG_LAKE", raising=False)
    root = CONFIGS[0].parent
    cpu, gpu = load_settings(root / "oracle.toml"), load_settings(root / "oracle_gpu.toml")
    assert cpu.world.press_release_echo and cpu.memory.test_params == "settings"
    assert (cpu.memory.lam, cpu.memory.delta, cpu.memory.kappa) == (0.30, 0.20, 30.0)
    assert cpu.reader.backend == "embedded" and gpu.reader.backend == "vllm" and gpu.lake_dir != cpu.lake_dir
    assert cpu.model_dump(exclude={"reader", "lake_dir"}) == gpu.model_dump(exclude={"reader", "lake_dir"})
    # the publisher-class oracle: the same world and settings, plus utilities planted per publisher class
    pub = load_settings(root / "oracle_publishers.toml")
    assert pub.world.publisher_utility and not cpu.world.publisher_utility and pub.lake_dir != cpu.lake_dir
    assert pub.model_dump(exclude={"world", "lake_dir"}) == cpu.model_dump(exclude={"world", "lake_dir"})
    assert pub.world.model_dump(exclude={"publisher_utility"}) == cpu.world.model_dump(exclude={"publisher_utility"})


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_config_reads_and_writes_only_inside_the_repository(path, monkeypatch):
    """A clone with nothing beside it: no shipped settings file reaches a folder outside the repository
    (the real sample is linked into data/real, see configs/real_sample.toml)."""
    monkeypatch.delenv("FINRAG_LAKE", raising=False)
    root = Path(__file__).resolve().parents[2]
    s = load_settings(path)
    src = s.sources.model_dump()
    paths = [v for v in src.values() if isinstance(v, str) and "/" in v]
    paths += [p for v in src.values() if isinstance(v, list) for p in v if isinstance(p, str) and "/" in p]
    outside = [p for p in [str(s.lake_dir), *paths] if not Path(p).resolve().is_relative_to(root)]
    assert outside == []


def test_a_string_where_a_list_of_paths_belongs_is_named_not_iterated(tmp_path, monkeypatch):
    """`news = "x.csv"` once became the paths "x", ".", "c", ... (the last a folder: the whole disk
    was searched); it is a settings error that names the key."""
    from pydantic import ValidationError

    monkeypatch.delenv("FINRAG_LAKE", raising=False)
    cfg = tmp_path / "c.toml"
    cfg.write_text('[sources]\nkind = "files"\nnews = "news/x.csv"\nprices = ["p/*.csv"]\n')
    with pytest.raises(ValidationError, match="sources.news") as err:
        load_settings(cfg)
    assert "news/x.csv" in str(err.value) and "prices" not in str(err.value)
    cfg.write_text('[sources]\nkind = "files"\nnews = ["news/x.csv"]\n')
    assert load_settings(cfg).sources.news == [str(tmp_path / "news" / "x.csv")]
