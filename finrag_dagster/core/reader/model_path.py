"""The model a user has, as a folder vLLM can load (``reader.model`` of the ``vllm`` backend).

* a Hugging Face **folder** (``config.json`` + weights + tokenizer): used as is;
* a **``.gguf`` file**: converted once by transformers (dequantised, ``from_pretrained(...,
  gguf_file=...)`` then ``save_pretrained`` in float32, with the tokenizer and its chat template) into
  ``<cache>/<stem>-<sha256 of the file, 16 hex>-v<CONVERSION_VERSION>/``, where ``<cache>`` is
  ``$FINRAG_MODEL_CACHE`` or ``~/.cache/finrag/models``. The key is the file's content, so a
  changed file is converted again and a moved or copied one is not; the folder is written under a
  file lock and renamed into place, so concurrent readers convert it once;
* a **hub id** (``org/name``): with the hub offline (``HF_HUB_OFFLINE=1``, as the Makefile sets)
  the local Hugging Face cache's snapshot, else a :class:`ModelUnavailable` saying what to do;
  online, the id itself (vLLM downloads it).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

CONVERSION_VERSION = 1  # bump when the conversion's output changes (dtype, files written)


class ModelUnavailable(RuntimeError):
    """``reader.model`` names nothing this machine can load."""


def model_cache_dir() -> Path:
    return Path(os.environ.get("FINRAG_MODEL_CACHE") or Path.home() / ".cache" / "finrag" / "models")


def hub_offline() -> bool:
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on") for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def file_sha256(path: Path, memo_dir: Path | None = None) -> str:
    """sha256 of the file's bytes; memoised by (resolved path, size, mtime) in ``memo_dir``, so an
    unchanged multi-GB GGUF is hashed once."""
    st = path.stat()
    memo = None
    if memo_dir is not None:
        tag = hashlib.sha256(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:24]
        memo = memo_dir / ".hashes" / tag
        if memo.exists():
            return memo.read_text().strip()
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    digest = h.hexdigest()
    if memo is not None:
        try:
            memo.parent.mkdir(parents=True, exist_ok=True)
            memo.write_text(digest)
        except OSError:  # a read-only cache: hashed again next time, same digest
            pass
    return digest


# The files of a Hugging Face folder that decide a model's answers: weights, config, generation
# config, tokenizer and chat template (README, licence and finrag's conversion note do not).
ANSWER_FILE_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".json", ".model", ".txt", ".jinja", ".tiktoken")
NOT_ANSWER_FILES = ("finrag_gguf.json",)


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


def weights_fingerprint(model: str | Path, memo_dir: Path | None = None, suffixes: tuple[str, ...] = ANSWER_FILE_SUFFIXES) -> str:
    """16 hex of a sha256 over a local model's content (the prompt cache's key holds it, so weights
    replaced under the same name are a cache miss, not a stale answer): a file's bytes (a GGUF), or a
    folder's answer-deciding files by relative name (:data:`ANSWER_FILE_SUFFIXES`); each file hashed
    once per (path, size, mtime) and remembered in ``memo_dir`` (the model cache). "" for what is not
    local (a hub id vLLM downloads itself). ``suffixes=WEIGHT_SUFFIXES``: the weights alone (a LoRA
    adapter, whose peft config names the base model's local path)."""
    p = Path(model).expanduser()
    memo = Path(memo_dir) if memo_dir is not None else model_cache_dir()
    if p.is_file():
        return file_sha256(p, memo)[:16]
    if not p.is_dir():
        return ""
    h = hashlib.sha256()
    for f in sorted(p.rglob("*")):
        rel = f.relative_to(p).as_posix()
        if not f.is_file() or f.name in NOT_ANSWER_FILES or f.suffix not in suffixes:
            continue
        if any(part.startswith(".") for part in rel.split("/")):  # a download tool's own cache, a lock
            continue
        h.update(f"{rel}\0{file_sha256(f, memo)}\n".encode())
    return h.hexdigest()[:16]


def gguf_folder(gguf: str | Path, cache: Path | None = None) -> Path:
    """The Hugging Face folder converted from ``gguf`` (converted now if not cached)."""
    from filelock import FileLock

    src = Path(gguf)
    if not src.is_file():
        raise ModelUnavailable(f"GGUF model file {src} not found")
    cache = Path(cache) if cache is not None else model_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    out = cache / f"{src.stem}-{file_sha256(src, cache)[:16]}-v{CONVERSION_VERSION}"
    if (out / "finrag_gguf.json").exists():
        return out
    with FileLock(str(out) + ".lock"):
        if (out / "finrag_gguf.json").exists():  # another process converted it while we waited
            return out
        tmp = out.with_name(f".{out.name}.tmp")
        if tmp.exists():
            shutil.rmtree(tmp)
        convert_gguf(src, tmp)
        (tmp / "finrag_gguf.json").write_text(
            json.dumps({"source": str(src.resolve()), "sha256": file_sha256(src, cache), "version": CONVERSION_VERSION})
        )
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    return out


def convert_gguf(src: Path, dest: Path) -> Path:
    """Dequantise ``src`` with transformers (needs ``gguf``; ``accelerate`` for the loading) and
    save it as a float32 Hugging Face folder with its tokenizer (chat template included)."""
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:  # pragma: no cover - the vllm and lora environments have both
        raise ModelUnavailable(f"converting a GGUF needs torch and transformers ({e})") from None
    try:
        tok = AutoTokenizer.from_pretrained(str(src.parent), gguf_file=src.name)
        model = AutoModelForCausalLM.from_pretrained(str(src.parent), gguf_file=src.name, dtype=torch.float32)
    except ImportError as e:
        raise ModelUnavailable(f"converting {src.name} needs the gguf package: pip install gguf ({e})") from None
    # the weights are dequantised now: without the GGUF quantizer and its config entry the model saves
    # as plain tensors (a "quantization_config" would make loaders expect GGUF tensors)
    model.hf_quantizer = None
    for attr in ("quantization_method", "is_quantized"):
        if attr in vars(model):
            delattr(model, attr)
    for holder in (model.config, getattr(model.config, "text_config", None)):
        if holder is not None and hasattr(holder, "quantization_config"):
            delattr(holder, "quantization_config")
    model.config.dtype = "float32"
    dest.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(dest)
    tok.save_pretrained(dest)
    return dest


def resolve_model(model: str, cache: Path | None = None) -> str:
    """A path or hub id vLLM can load for ``reader.model`` (see the module's docstring)."""
    p = Path(model).expanduser()
    if p.suffix == ".gguf":
        return str(gguf_folder(p, cache))
    if p.is_dir():
        if not (p / "config.json").exists():
            raise ModelUnavailable(f"{p} is a folder without config.json: not a Hugging Face model folder")
        return str(p)
    if p.exists():
        raise ModelUnavailable(f"{p} is a file but not a .gguf: give a Hugging Face folder, a .gguf file or a hub id")
    looks_like_id = model.count("/") == 1 and not model.startswith((".", "/", "~"))
    if not looks_like_id:
        raise ModelUnavailable(f"reader.model {model!r} not found: give a Hugging Face folder, a .gguf file or a hub id (org/name)")
    if not hub_offline():
        return model
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(model, local_files_only=True)
    except Exception:  # noqa: BLE001 - any failure here means "not in the local cache"
        raise ModelUnavailable(
            f"reader.model {model!r} is a Hugging Face hub id, the hub is offline (HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE) and the model is "
            f"not in the local Hugging Face cache: download it where there is a network (`hf download {model}`), or set reader.model "
            "to a local folder or a .gguf file"
        ) from None
