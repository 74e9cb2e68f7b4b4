"""The supervised LoRA reader's adapters (group ``lora``; materialised on demand, never by a job
or sensor): one adapter per seed in settings.lora.seeds, trained by core/lora_train.py."""

import dagster as dg

from ...core.lora_train import train_adapters
from ...core.settings import LoraHyper, Settings
from ..context import step_errors_as_failures
from ..pools import READER_POOL
from ..resources import FinragResource


def build_lora_asset(s: Settings) -> dg.AssetsDefinition:
    h = LoraHyper.from_settings(s)

    @dg.asset(
        name="lora_adapters",
        group_name="lora",
        kinds={"pytorch"},
        pool=READER_POOL,  # trains on the reader's engine (a GPU for the full run)
        deps=["anchors", "candidates", "context_cards", "labels"],
        description=(
            f"seed 000's supervised LoRA reader: adapters (rank {h.rank}, alpha {h.alpha}, dropout {h.dropout}, lr {h.learning_rate:g}, "
            f"effective batch {h.effective_batch}, {'/'.join(h.target_modules)}) trained on train-split anchors whose labels matured before the validation split starts, "
            "checkpoint chosen by validation macro-F1; written to <lake>/lora_adapters/<adapter_id>/ with their metadata. "
            "On demand (GPU for the full run, docs/gpu.md)."
        ),
    )
    def lora_adapters(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        s = finrag.settings()
        with step_errors_as_failures():
            metas = train_adapters(s, finrag.lake(), finrag.calendar(), log=context.log.info)
        rows = "\n".join(f"| {m['adapter_id']} | {m['seed']} | {m['steps']} | {m['validation'].get('mean')} |" for m in metas)
        return dg.MaterializeResult(
            metadata={
                "adapters": dg.MetadataValue.md("| adapter | seed | steps | validation macro-F1 |\n|---|---|---|---|\n" + rows),
                "n_train": metas[0]["n_train"] if metas else 0,
                "window": dg.MetadataValue.json(metas[0]["window"] if metas else {}),
            }
        )

    return lora_adapters
