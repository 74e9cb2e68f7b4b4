"""The ``openai`` backend: any OpenAI-compatible server over HTTP (httpx), with retries, jittered
backoff, a server's ``Retry-After``, timeouts, and the API key redacted by :func:`..redaction.redact_secrets`."""

from __future__ import annotations

import asyncio
import os
import random
import time

from ...http_retry import backoff_delay, parse_retry_after
from ..redaction import redact_secrets
from .base import Backend, BackendConfig, BackendRejected, BackendUnavailable, Generation, Request
from .vllm import vllm_grammar_schema

RETRY_STATUS = frozenset({408, 409, 425, 429})  # plus every 5xx; other 4xx (400/401/403/404/422…) are final
RETRY_AFTER_STATUS = frozenset({429, 503})


class OpenAIBackend(Backend):
    name = "openai"

    def __init__(self, cfg: BackendConfig):
        super().__init__(cfg)
        if not cfg.model:
            raise BackendUnavailable("the openai backend needs reader.model (the served model name)")
        self._key = os.environ.get(cfg.api_key_env, "")
        # jitter only: decoding stays greedy and reproducible, sleep times vary per process
        self.rng = random.Random()

    def redact(self, text: str) -> str:
        return redact_secrets(text, (self._key,))

    def _body(self, r: Request) -> dict:
        body = {"model": self.cfg.model, "messages": r.prompt.messages, **self.cfg.decoding()}
        if self.cfg.response_format == "json_object":
            body["response_format"] = {"type": "json_object", "schema": r.prompt.schema}
        else:
            # without uniqueItems, which grammar-constrained servers refuse (vLLM: "Grammar error:
            # Unimplemented keys") or cannot enforce; a repeated ID is dropped by the parser
            schema = vllm_grammar_schema(r.prompt.schema)
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": "finrag_reader", "schema": schema, "strict": True}}
        return body

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt + 1``: jittered backoff, at least the
        server's ``Retry-After``, at most ``backoff_max_s``."""
        d = backoff_delay(attempt, self.cfg.backoff_base_s, self.cfg.backoff_max_s, self.rng)
        if retry_after is not None:
            d = max(d, retry_after)
        return min(d, self.cfg.backoff_max_s)

    @staticmethod
    def _parse(resp) -> tuple[str, int, int]:
        """(content, prompt tokens, output tokens) of a 200 answer; ValueError if malformed."""
        try:
            data = resp.json()
            msg = data["choices"][0]["message"]
            content = msg.get("content")
            usage = data.get("usage") or {}
            if content is None:
                content = ""
            if not isinstance(content, str):
                raise TypeError(f"content is {type(content).__name__}")
            return content, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as e:
            raise ValueError(f"malformed answer ({type(e).__name__}): {resp.text}") from None

    async def _one(self, client, sem, r: Request) -> Generation:
        import httpx

        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        last = ""
        attempts = 0
        transient = True
        async with sem:
            for attempt in range(self.cfg.retries + 1):
                if attempt:
                    self.retries += 1
                attempts += 1
                self.requests_sent += 1
                t0 = time.perf_counter()
                retry_after = None
                try:
                    resp = await client.post("/chat/completions", json=self._body(r), headers=headers)
                    if resp.status_code == 200:
                        try:
                            text, pt, ot = self._parse(resp)
                        except ValueError as e:
                            last = f"HTTP 200: {e}"
                        else:
                            return Generation(text, pt, ot, (time.perf_counter() - t0) * 1000)
                    else:
                        last = f"HTTP {resp.status_code}: {resp.text}"
                        if resp.status_code not in RETRY_STATUS and resp.status_code < 500:
                            transient = False
                            break  # a client error will not improve by retrying
                        if resp.status_code in RETRY_AFTER_STATUS:
                            retry_after = parse_retry_after(resp.headers.get("retry-after"))
                except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as e:
                    last = f"{type(e).__name__}: {e}"
                except httpx.HTTPError as e:  # bad URL, unsupported protocol…: retrying will not help
                    last = f"{type(e).__name__}: {e}"
                    transient = False
                    break
                if attempt < self.cfg.retries:
                    await asyncio.sleep(self.delay(attempt, retry_after))
        self.failures += 1
        err = self.redact(last or "request failed")  # redact the whole text first, then cut
        return Generation("", error=f"{err[:300]} (after {attempts} attempt{'s' if attempts != 1 else ''})", transient=transient)

    async def _all(self, requests: list[Request]) -> list[Generation]:
        import httpx

        sem = asyncio.Semaphore(self.cfg.concurrency)
        async with httpx.AsyncClient(base_url=self.cfg.base_url, timeout=self.cfg.timeout_s) as client:
            return await asyncio.gather(*(self._one(client, sem, r) for r in requests))

    def generate(self, requests: list[Request]) -> list[Generation]:
        gens = asyncio.run(self._all(requests))
        failed = [g.error for g in gens if g.error]
        if failed and len(failed) == len(gens):
            # a client error on every request is final; anything else may pass (Dagster's retry policy)
            error = BackendUnavailable if any(g.transient for g in gens) else BackendRejected
            raise error(self.redact(f"OpenAI-compatible server at {self.cfg.base_url} failed every request ({len(gens)}): {failed[0]}"))
        return gens
