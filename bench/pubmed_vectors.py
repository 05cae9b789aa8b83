"""The generated vectors of bench/pubmed_hybrid.sh (and the queries of
bench/pubmed_recall.py): K seeded centres in 256 dimensions, each vector a
random centre plus N(0, 0.5^2) noise, made unit length. Rows are counted
from the store's first chunk in id order; each block of BLOCK rows has its
own seeded generator, so any block can be made again alone (a resumed
build streams only the rows after its last saved chunk, a recall check
remakes them all) with the values an unbroken run gives."""
import numpy as np

BLOCK, SEED, DIMS = 1 << 16, 20250101, 256


def centres(k):
    return np.random.default_rng(SEED).standard_normal((k, DIMS),
                                                       dtype=np.float32)


def _draw(cent, rng, n):
    """n unit vectors (float32): a random centre each, plus noise."""
    v = cent[rng.integers(0, len(cent), n)] + \
        0.5 * rng.standard_normal((n, DIMS), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def block(cent, b):
    """Rows b * BLOCK .. (b + 1) * BLOCK - 1, whole, as the build reads
    them (float16)."""
    return _draw(cent, np.random.default_rng([SEED, b]), BLOCK).astype(np.float16)


def queries(cent, n):
    """n query vectors (float32, unit length) drawn as the rows are, from
    a generator no block uses."""
    return _draw(cent, np.random.default_rng([SEED, 1 << 40]), n)
