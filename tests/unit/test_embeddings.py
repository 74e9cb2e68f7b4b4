"""A passage's vector depends only on its own text (no padding inside a batch)."""

import numpy as np

from finrag_dagster.core.embeddings import embed


def test_vectors_do_not_depend_on_batch_mates():
    rng = np.random.default_rng(0)
    words = "apple revenue guidance quarter profit margin lawsuit merger ceo resigns dividend growth decline".split()
    texts = [" ".join(rng.choice(words, size=rng.integers(3, 60))) for _ in range(40)]
    all_at_once = embed(texts, batch_size=16)
    alone = np.stack([embed([t])[0] for t in texts[:8]])
    reversed_ = embed(texts[::-1], batch_size=7)[::-1]
    assert np.array_equal(all_at_once[:8], alone)
    assert np.array_equal(all_at_once, reversed_)
    assert all_at_once.dtype == np.float32 and np.allclose(np.linalg.norm(all_at_once, axis=1), 1, atol=1e-5)
    assert embed([]).shape == (0, 384)


def test_parallel_batches_give_the_same_bytes_as_one_worker():
    rng = np.random.default_rng(1)
    words = "filing risk factors revenue guidance quarter margin lawsuit merger dividend supply chain".split()
    texts = [" ".join(rng.choice(words, size=rng.integers(2, 90))) for _ in range(300)]
    one = embed(texts, batch_size=8, workers=1)
    many = embed(texts, batch_size=8, workers=3)  # more workers than cores: order of completion varies
    assert one.tobytes() == many.tobytes()


def test_a_repeated_text_is_encoded_once_and_gets_the_same_bytes(monkeypatch):
    import finrag_dagster.core.embeddings as emb

    texts = ["guidance raised", "ceo resigns after probe", "guidance raised", "dividend cut", "ceo resigns after probe"]
    encoded = []
    real = emb._embed_unique
    monkeypatch.setattr(emb, "_embed_unique", lambda t, *a: encoded.append(list(t)) or real(t, *a))
    vecs = embed(texts, batch_size=2)
    assert encoded == [["guidance raised", "ceo resigns after probe", "dividend cut"]]
    distinct = np.stack([embed([t])[0] for t in ("guidance raised", "ceo resigns after probe", "dividend cut")])
    assert vecs.tobytes() == distinct[[0, 1, 0, 2, 1]].tobytes()
