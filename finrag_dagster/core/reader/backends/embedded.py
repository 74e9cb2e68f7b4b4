"""The ``embedded`` backend: the deterministic lexicon-and-rules readers of :mod:`..embedded`
(``evidence`` or ``anchor_tone``), on the CPU, with no model to download (the default)."""

from __future__ import annotations

import time

from ..embedded import EmbeddedRules, EvidenceRules, evidence_model_id, model_id, read, read_evidence
from .base import Backend, BackendConfig, Generation, Request

# The embedded readers by name: (default rules, model id of the rules, read function).
EMBEDDED_READERS = {
    "evidence": (EvidenceRules, evidence_model_id, read_evidence),
    "anchor_tone": (EmbeddedRules, model_id, read),
}


class EmbeddedBackend(Backend):
    name = "embedded"

    def __init__(self, cfg: BackendConfig, rules: EmbeddedRules | EvidenceRules | None = None):
        super().__init__(cfg)
        if cfg.embedded not in EMBEDDED_READERS:
            raise ValueError(f"unknown embedded reader {cfg.embedded!r}; choose from {sorted(EMBEDDED_READERS)}")
        make_rules, self._model_id, self._read = EMBEDDED_READERS[cfg.embedded]
        self.rules = rules if rules is not None else make_rules()
        if not isinstance(self.rules, make_rules):
            raise ValueError(f"the {cfg.embedded!r} embedded reader takes {make_rules.__name__}, got {type(self.rules).__name__}")

    @property
    def model(self) -> str:
        return self._model_id(self.rules)

    def generate(self, requests: list[Request]) -> list[Generation]:
        out = []
        for r in requests:
            if r.structured is None:
                raise ValueError("the embedded reader needs the structured reader input")
            self.requests_sent += 1
            t0 = time.perf_counter()
            text = self._read(r.structured, self.rules)
            out.append(Generation(text, 0, 0, (time.perf_counter() - t0) * 1000))
        return out
