"""Synthetic collections for benchmarks: real-looking text for BM25 and clustered unit vectors.

Text: sentences of pseudo-words drawn from a Zipf distribution (exponent 1, 50,000 words, the most
frequent ranks being real English function words), plus words specific to each document's topic, so
term frequencies look like prose and FTS5 does the work it would do on real chunks.

Vectors: uniform random unit vectors have no neighbourhood structure, the worst case for any
approximate index and unlike real embeddings. These are a mixture: a shared mean direction, a
super-topic, a topic and per-chunk noise, with weights chosen so that a 5,000-vector sample has the
statistics of all-MiniLM-L6-v2 on the SciFact abstracts (mean pairwise cosine 0.13, mean cosine to
the nearest neighbour 0.68, to the 10th 0.53, to the 100th 0.39). Queries are drawn near one chunk so
that their neighbour cosines match SciFact's questions against the abstracts (1st 0.63, 10th 0.46,
100th 0.33; synthetic: 0.66, 0.43, 0.31 - a slightly flatter neighbourhood, so no easier for ANN).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from indexes.lexical.fts5 import STOPWORDS

SYLLABLES = (
    "ka lo mi ner tu vas pre dol an ex qui ro sta ten bri mon gal fe cor zu hin plo ur dex "
    "sal tri ven opt lum rad ges cla mor ith pen sul dra fo".split()
)
FUNCTION_WORDS = sorted(STOPWORDS, key=lambda w: (len(w), w))[:80]


@dataclass(frozen=True)
class VectorMix:
    """Weights of the mixture (before normalisation); defaults calibrated on MiniLM / SciFact."""

    mean: float = 0.32
    super_topic: float = 0.40
    topic: float = 0.55
    fine: float = 0.45  # small groups of ~5 chunks: the close neighbours real collections have
    noise: float = 0.60
    query_noise: float = 1.2  # a query's own noise: ~0.66 cosine to its source chunk
    query_mean: float = 0.4  # and a pull toward the shared direction, as questions have


def vocabulary(size: int = 50_000, seed: int = 0) -> list[str]:
    """Function words first (the most frequent ranks), then distinct pseudo-words."""
    rnd = random.Random(seed)
    words: list[str] = list(FUNCTION_WORDS)
    seen = set(words)
    while len(words) < size:
        w = "".join(rnd.choice(SYLLABLES) for _ in range(rnd.randint(2, 4)))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


class SyntheticCorpus:
    """Generates chunks (text, topic) and their vectors for a collection of n chunks."""

    def __init__(self, n: int, dim: int = 384, *, seed: int = 0, mix: VectorMix = VectorMix(), words_per_chunk: int = 120) -> None:
        self.n, self.dim, self.mix = n, dim, mix
        self.rng = np.random.default_rng(seed)
        self.vocab = np.array(vocabulary(seed=seed))
        ranks = np.arange(1, len(self.vocab) + 1, dtype=np.float64)
        self.p = 1.0 / ranks
        self.p /= self.p.sum()
        self.words_per_chunk = words_per_chunk
        self.n_topics = max(50, n // 100)
        self.n_super = max(10, self.n_topics // 20)
        rng = self.rng
        self.mean_dir = unit(rng.normal(size=dim))
        self.super_dirs = unit(rng.normal(size=(self.n_super, dim)))
        self.topic_super = rng.integers(0, self.n_super, size=self.n_topics)
        self.topic_dirs = unit(rng.normal(size=(self.n_topics, dim)))
        self.n_fine = max(1, n // 5)
        self.fine_dirs = unit(rng.normal(size=(self.n_fine, dim)))
        # Each topic has 40 characteristic mid-frequency words (ranks 300..50,000).
        self.topic_words = rng.integers(300, len(self.vocab), size=(self.n_topics, 40))

    def topics(self, count: int) -> np.ndarray:
        return self.rng.integers(0, self.n_topics, size=count)

    def vectors(self, topics: np.ndarray) -> np.ndarray:
        m = self.mix
        noise = self.rng.normal(size=(len(topics), self.dim)) / np.sqrt(self.dim)
        x = (
            m.mean * self.mean_dir
            + m.super_topic * self.super_dirs[self.topic_super[topics]]
            + m.topic * self.topic_dirs[topics]
            + m.fine * self.fine_dirs[(topics * 7919 + self.rng.integers(0, 20, size=len(topics))) % self.n_fine]
            + m.noise * unit(noise)
        )
        return unit(x)

    def query_vectors(self, sources: np.ndarray) -> np.ndarray:
        """Vectors near the given chunk vectors (one query per source chunk)."""
        noise = unit(self.rng.normal(size=sources.shape))
        return unit(sources + self.mix.query_noise * noise + self.mix.query_mean * self.mean_dir)

    def texts(self, topics: np.ndarray) -> list[str]:
        """One chunk of prose-like text per topic id: Zipf background words with 10% topic words."""
        count, length = len(topics), self.words_per_chunk
        ids = self.rng.choice(len(self.vocab), size=(count, length), p=self.p)
        topical = self.rng.random(size=(count, length)) < 0.10
        picks = self.topic_words[topics][np.arange(count)[:, None], self.rng.integers(0, 40, size=(count, length))]
        ids = np.where(topical, picks, ids)
        words = self.vocab[ids]
        out = []
        for row in words:
            # Sentences of 12 words, capitalised and closed by a full stop, as prose has.
            sentences = [" ".join(row[i : i + 12]) for i in range(0, length, 12)]
            out.append(". ".join(s[:1].upper() + s[1:] for s in sentences) + ".")
        return out

    def title(self, topic: int) -> str:
        return " ".join(self.vocab[self.topic_words[topic][self.rng.integers(0, 40, size=4)]]).capitalize()

    def query_text(self, text: str, words: int = 8) -> str:
        """A question-like string: words picked from one chunk, as a user would paraphrase it."""
        tokens = text.lower().replace(".", "").split()
        picks = self.rng.choice(len(tokens), size=min(words, len(tokens)), replace=False)
        return " ".join(tokens[i] for i in sorted(picks))


def neighbour_stats(vectors: np.ndarray) -> dict[str, float]:
    """Mean pairwise cosine and mean cosine to the 1st / 10th / 100th neighbour (for calibration)."""
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -1.0)
    iu = np.triu_indices(len(vectors), 1)
    top = -np.sort(-sims, axis=1)
    return {
        "mean_pair": float(sims[iu].mean()),
        "top1": float(top[:, 0].mean()),
        "top10": float(top[:, 9].mean()),
        "top100": float(top[:, 99].mean()),
    }
