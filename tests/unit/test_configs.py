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


@pytest.mark.parametrize(
    "section, key, value, needle",
    [
        ("evidence", "embed_batch_size", -3, "greater than or equal to 1"),
        ("evidence", "embed_max_seq_length", 4096, "less than or equal to 512"),
        ("retrieval", "bm25_b", 1.5, "less than or equal to 1"),
        ("memory", "kappa", 0, "greater than 0"),
        ("reader", "gpu_memory_utilization", 1.2, "less than or equal to 1"),
        ("variants", "shuffle_seeds", 0, "greater than or equal to 1"),
    ],
)
def test_a_number_outside_its_domain_is_a_settings_error_naming_it(section, key, value, needle, tmp_path, monkeypatch):
    """A batch size of -3 or a share above 1 is refused where the settings are read, with the key,
    instead of running (a negative embedding batch ran the whole demo)."""
    from pydantic import ValidationError

    monkeypatch.delenv("FINRAG_LAKE", raising=False)
    cfg = tmp_path / "bad.toml"
    cfg.write_text(f"[{section}]\n{key} = {value}\n")
    with pytest.raises(ValidationError) as e:
        load_settings(cfg)
    assert f"{section}.{key}" in str(e.value) and needle in str(e.value)


@pytest.mark.parametrize("name, text", [("c.toml", "[evidence\nembed_batch_size = 8\n"), ("c.json", '{"evidence": ')])
def test_a_settings_file_that_does_not_parse_is_named(name, text, tmp_path, monkeypatch):
    """A syntax error names the file it is in: with $FINRAG_CONFIG the user may not know which file was read."""
    from finrag_dagster.core.settings import SettingsFileError

    cfg = tmp_path / name
    cfg.write_text(text)
    monkeypatch.setenv("FINRAG_CONFIG", str(cfg))
    with pytest.raises(SettingsFileError, match=f"{cfg} is not valid {'TOML' if name.endswith('toml') else 'JSON'}: "):
        load_settings()
