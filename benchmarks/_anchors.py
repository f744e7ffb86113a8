"""Compatibility shims for the anchor libraries (pure-ldp, multi-freq-ldpy).

Shared by the benchmark scripts that run the anchors, so both patch them the
same way. The anchors are unmaintained against current xxhash and numpy.
"""

import numpy as np


def compat_shims():
    """Make the anchors run with today's xxhash and numpy (not their logic).

    Both anchors call ``xxhash.xxh32(str(x), seed=...)`` (or xxh64), which
    xxhash >= 3 refuses (it hashes bytes); pure-ldp's CMS server calls
    ``np.zeros(None)``, which numpy 2 refuses. The shims encode the string and
    map None to ().
    """
    try:
        import xxhash
    except ImportError:
        return
    if not getattr(xxhash, "_bench_shim", False):
        for name in ("xxh32", "xxh64"):
            raw = getattr(xxhash, name)

            def encoded(data, seed=0, _raw=raw):
                return _raw(data.encode() if isinstance(data, str) else data, seed=seed)

            setattr(xxhash, name, encoded)
        xxhash._bench_shim = True
    try:
        import pure_ldp.core._freq_oracle_server as fos
    except ImportError:
        return

    class _NumpyProxy:
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def zeros(shape, *args, **kwargs):
            return np.zeros(() if shape is None else shape, *args, **kwargs)

    fos.np = _NumpyProxy()
