"""The numeric samplers' inner loops: one uniform per user, exact output codes.

Every sampler here maps one float64 uniform ``u`` per user to an output
*code* (an integer) by inverting the cumulative distribution of the user's
output law over a finite, public alphabet: the cells of a fixed output grid
(Piecewise, Square Wave), two symbols (Duchi), or both (Hybrid). Reports are
then looked up from the code, so a report's float value is a function of
the code alone and its low-order bits never depend on the input (the
floating-point leak of continuous samplers, Mironov CCS 2012, cannot occur).

Each partition of ``[0, 1)`` into the cells' intervals is computed with a
few floating-point operations whose error is at most a few units of 2**-53
at each cell boundary, whatever the cell's size; the channels turn that into
the budgets they refuse (see ``_draw_probabilities`` of each channel).

The loops are compiled by numba when it is installed (the "fast" extra);
the numpy versions below compute the same codes with the same operations
in the same order (the tests compare them), for when it is not.
"""

from __future__ import annotations

import numpy as np

from ..utils._numba import HAVE_NUMBA, numba, use_compiled

__all__ = [
    "HAVE_NUMBA",
    "band_codes",
    "two_point_codes",
    "hybrid_codes",
    "one_bit_codes",
    "band_em",
    "fused_reports",
    "grid_encode",
]


# ------------------------------------------------------------------ the band
def _band_code(s, u, m, length, qc, pc):
    """The output cell of uniform ``u`` for a band of ``length`` cells at ``s``.

    The law: ``m`` cells of mass ``qc``, except the cells covered by the band
    ``[s, s + length]`` (in cell units, ``0 <= s <= m - length``), whose mass
    is ``qc + (pc - qc) * overlap``. The two partly covered cells come first
    and last in the band; the cumulative masses of the five runs (cells
    below, first band cell, inner band cells, last band cell, cells above)
    give the code by one product with the run's inverse mass. Every run's
    candidate is computed and the right one selected without branches (a
    random branch per report costs more than the arithmetic).
    """
    s0 = min(np.floor(s), m - length - 1.0)
    f = s - s0
    a1 = s0 * qc
    a2 = a1 + ((1.0 - f) * pc + f * qc)
    a3 = a2 + (length - 1) * pc
    a4 = a3 + (f * pc + (1.0 - f) * qc)
    below = min(np.floor(u * (1.0 / qc)), s0 - 1.0)
    inner = min(s0 + 1.0 + np.floor((u - a2) * (1.0 / pc)), s0 + length - 1.0)
    above = min(s0 + length + 1.0 + np.floor((u - a4) * (1.0 / qc)), m - 1.0)
    code = below
    code = s0 if u >= a1 else code
    code = inner if u >= a2 else code
    code = s0 + length if u >= a3 else code
    code = above if u >= a4 else code
    return code


def _band_codes_loop(starts, uniforms, m, length, qc, pc, out):  # pragma: no cover - numba
    for i in range(starts.shape[0]):
        out[i] = np.int64(_band_code(starts[i], uniforms[i], m, length, qc, pc))


def _band_codes_numpy(starts, uniforms, m, length, qc, pc):
    s0 = np.minimum(np.floor(starts), m - length - 1.0)
    f = starts - s0
    a1 = s0 * qc
    a2 = a1 + ((1.0 - f) * pc + f * qc)
    a3 = a2 + (length - 1) * pc
    a4 = a3 + (f * pc + (1.0 - f) * qc)
    u = uniforms
    below = np.minimum(np.floor(u * (1.0 / qc)), s0 - 1.0)
    inner = np.minimum(s0 + 1.0 + np.floor((u - a2) * (1.0 / pc)), s0 + length - 1.0)
    above = np.minimum(s0 + length + 1.0 + np.floor((u - a4) * (1.0 / qc)), m - 1.0)
    code = np.where(
        u >= a4,
        above,
        np.where(u >= a3, s0 + length, np.where(u >= a2, inner, np.where(u >= a1, s0, below))),
    )
    return code.astype(np.int64)


def band_codes(starts, uniforms, m, length, qc, pc, *, use_numba=True):
    """Output cells of a band sampler (see :func:`_band_code`), as int64."""
    starts = np.ascontiguousarray(starts, dtype=np.float64)
    uniforms = np.ascontiguousarray(uniforms, dtype=np.float64)
    if use_numba and use_compiled(starts.shape[0]):
        out = np.empty(starts.shape[0], dtype=np.int64)
        _band_codes_jit(starts, uniforms, float(m), float(length), float(qc), float(pc), out)
        return out
    return _band_codes_numpy(starts, uniforms, float(m), float(length), float(qc), float(pc))


# ------------------------------------------------------------- two symbols
def _two_point_loop(probabilities, uniforms, out):  # pragma: no cover - numba
    for i in range(probabilities.shape[0]):
        out[i] = 1 if uniforms[i] < probabilities[i] else 0


def two_point_codes(probabilities, uniforms, *, use_numba=True):
    """1 where ``u < p`` (the "+" symbol), else 0, as int64."""
    probabilities = np.ascontiguousarray(probabilities, dtype=np.float64)
    uniforms = np.ascontiguousarray(uniforms, dtype=np.float64)
    if use_numba and use_compiled(probabilities.shape[0]):
        out = np.empty(probabilities.shape[0], dtype=np.int64)
        _two_point_jit(probabilities, uniforms, out)
        return out
    return (uniforms < probabilities).astype(np.int64)


# ------------------------------------------------------------------ hybrid
def _hybrid_loop(starts, plus, uniforms, alpha, m, length, qc, pc, out):  # pragma: no cover
    for i in range(starts.shape[0]):
        u = uniforms[i]
        band = _band_code(starts[i], u / alpha, m, length, qc, pc)
        v = (u - alpha) / (1.0 - alpha)
        bit = m + 1.0 if v < plus[i] else m
        out[i] = np.int64(band if u < alpha else bit)


def hybrid_codes(starts, plus, uniforms, alpha, m, length, qc, pc, *, use_numba=True):
    """Codes of the hybrid sampler: a band cell ``0..m-1`` with probability
    ``alpha`` (the uniform rescaled to ``u / alpha``), else ``m`` ("-") or
    ``m + 1`` ("+") with ``P(+) = plus`` (the uniform rescaled to
    ``(u - alpha) / (1 - alpha)``)."""
    starts = np.ascontiguousarray(starts, dtype=np.float64)
    plus = np.ascontiguousarray(plus, dtype=np.float64)
    uniforms = np.ascontiguousarray(uniforms, dtype=np.float64)
    args = (float(alpha), float(m), float(length), float(qc), float(pc))
    if use_numba and use_compiled(starts.shape[0]):
        out = np.empty(starts.shape[0], dtype=np.int64)
        _hybrid_jit(starts, plus, uniforms, *args, out)
        return out
    alpha = args[0]
    band = uniforms < alpha
    out = np.empty(starts.shape[0], dtype=np.int64)
    out[band] = _band_codes_numpy(starts[band], uniforms[band] / alpha, *args[1:])
    rest = ~band
    v = (uniforms[rest] - alpha) / (1.0 - alpha)
    out[rest] = np.where(v < plus[rest], np.int64(m + 1), np.int64(m))
    return out


# ------------------------------------------------------- utility-optimized bit
def _one_bit_loop(grid, plus, sensitive, uniforms, lam, half_other, out):  # pragma: no cover
    for i in range(grid.shape[0]):
        u = uniforms[i]
        if sensitive[i]:
            out[i] = 1 if u < plus[i] else 0
        elif u < lam:
            g = grid[i]
            k = np.floor(g)
            if u / lam < g - k:
                k += 1.0
            out[i] = np.int64(2.0 + k)
        else:
            out[i] = 1 if u - lam < half_other else 0


def one_bit_codes(grid, plus, sensitive, uniforms, lam, *, use_numba=True):
    """Codes of the utility-optimized one-bit sampler.

    A sensitive user sends "+" (code 1) with probability ``plus``, else "-"
    (0). A non-sensitive user discloses with probability ``lam``: code
    ``2 + k`` for the point ``k`` of the disclosure grid, ``grid`` (the value
    in grid units) rounded up with probability its fractional part (the
    uniform rescaled to ``u / lam``); otherwise "+" or "-" with probability
    ``(1 - lam) / 2`` each.
    """
    grid = np.ascontiguousarray(grid, dtype=np.float64)
    plus = np.ascontiguousarray(plus, dtype=np.float64)
    sensitive = np.ascontiguousarray(sensitive, dtype=np.bool_)
    uniforms = np.ascontiguousarray(uniforms, dtype=np.float64)
    lam = float(lam)
    half_other = (1.0 - lam) / 2.0
    if use_numba and use_compiled(grid.shape[0]):
        out = np.empty(grid.shape[0], dtype=np.int64)
        _one_bit_jit(grid, plus, sensitive, uniforms, lam, half_other, out)
        return out
    u = uniforms
    k = np.floor(grid)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = k + ((u / lam) < (grid - k))
    disclosed = 2 + k.astype(np.int64)
    bit_other = (u - lam < half_other).astype(np.int64)
    bit_sensitive = (u < plus).astype(np.int64)
    return np.where(sensitive, bit_sensitive, np.where(u < lam, disclosed, bit_other))


# ------------------------------------------- fused: values -> reports (numba)
# One pass per column: count the values outside the bounds, clip them, map
# them to the law's parameter (the band start, P(+)), draw the code with the
# column's uniform and write the report from the public table. Each step is
# the same floating-point operation, in the same order, as the channels'
# numpy methods (``starts``, ``plus_probability``, ``sample``), so the codes
# are those of the numpy path.
def _band_start(x, low, width, span):  # pragma: no cover - numba
    """The band's first cell for value ``x``: ``span`` times its fraction of
    the bounds, clipped to [0, 1] (``starts``)."""
    f = (x - low) / width
    return span * min(max(f, 0.0), 1.0)


def _unit_value(x, low, two_over_width):  # pragma: no cover - numba
    """Value ``x`` on the unit scale [-1, 1], clipped (``to_unit``)."""
    t = (x - low) * two_over_width - 1.0
    return min(max(t, -1.0), 1.0)


def _band_report(x, u, low, width, span, m, length, qc, pc, first, step):  # pragma: no cover
    """The band sampler's report of value ``x`` with uniform ``u``."""
    start = _band_start(x, low, width, span)
    # the report of cell j is first + (j + 0.5) * step, as in the channel's
    # table (a table lookup per report costs a cache miss)
    return first + (_band_code(start, u, m, length, qc, pc) + 0.5) * step


def _duchi_report(x, u, low, two_over_width, slope, minus, plus):  # pragma: no cover - numba
    """Duchi's report of value ``x`` with uniform ``u``: "+" with P(+) = 1/2 + slope t."""
    t = _unit_value(x, low, two_over_width)
    return plus if u < 0.5 + slope * t else minus


#: The laws of :func:`fused_reports`, as the compiled loop numbers them.
_FUSED_KINDS = {"band": 0, "duchi": 1, "hybrid": 2}
#: The parameters a law does not use (the loop takes those of all three).
_FUSED_UNUSED = dict.fromkeys(
    (
        "width",
        "two_over_width",
        "slope",
        "alpha",
        "span",
        "m",
        "length",
        "qc",
        "pc",
        "first",
        "step",
        "minus",
        "plus",
    ),
    0.0,
)


def _fused_loop(
    kind,
    values,
    uniforms,
    low,
    high,
    width,
    two_over_width,
    slope,
    alpha,
    span,
    m,
    length,
    qc,
    pc,
    first,
    step,
    minus,
    plus,
    out,
):  # pragma: no cover
    below = 0
    above = 0
    for i in range(values.shape[0]):
        x = values[i]
        below += x < low
        above += x > high
        u = uniforms[i]
        if kind == 0:
            out[i] = _band_report(x, u, low, width, span, m, length, qc, pc, first, step)
        elif kind == 1:
            out[i] = _duchi_report(x, u, low, two_over_width, slope, minus, plus)
        else:  # hybrid: the band with probability alpha, else Duchi's
            band = _band_report(x, u / alpha, low, width, span, m, length, qc, pc, first, step)
            v = (u - alpha) / (1.0 - alpha)
            bit = _duchi_report(x, v, low, two_over_width, slope, minus, plus)
            out[i] = band if u < alpha else bit
    return below, above


def fused_reports(kind, values, uniforms, out, **params):
    """Reports of one column written into ``out``; returns (below, above) counts.

    ``kind`` is "band", "duchi" or "hybrid" (see the channels' ``report``);
    None when numba is not installed (the channel then takes its numpy path,
    as it does for a column of fewer than ``COMPILE_MIN_WORK`` values).
    """
    if not HAVE_NUMBA:
        return None
    values = np.ascontiguousarray(values, dtype=np.float64)
    params = {**_FUSED_UNUSED, **params}
    below, above = _fused_jit(_FUSED_KINDS[kind], values, uniforms, **params, out=out)
    return int(below), int(above)


# ------------------------------------------ collector: reports -> codes
# A report is a float in column units; the collector needs its output code.
# The channels know their alphabet: a run of codes whose reports lie on an
# evenly spaced grid (the cells of Piecewise and Square Wave, the disclosed
# grid points of the one-bit channel) and at most two isolated codes
# (Duchi's two values). The grid code of a report is its offset from the
# grid's first report over the step, rounded; the table then checks that
# the report is that code's value to within the tolerance. So the result is
# the code a search of the sorted table finds (the nearest value) for every
# report within the tolerance of some code (the tolerance is below a
# quarter of the smallest gap), and None where a report is within the
# tolerance of no code. Where two codes' values are that close (the one-bit
# channel's "-" and its first grid point when the sensitive range starts at
# the low bound lie a few units in the last place apart), the search takes
# the nearer; at equal distance the one below the report; of equal values
# below it the higher code, at or above it the lower code: so does the
# arithmetic (:func:`_nearer`).
_BIG = 1e18  # the distance of a code that does not match (codes < 2**53)


def _nearer(v, code, t, tol, best, best_d, best_tie):  # pragma: no cover - numba
    """``(code, distance, tie)`` of the better of ``code`` (report ``t``) and
    the best so far, for report ``v``, as the search of the sorted table
    ranks them: the smaller distance (``_BIG`` beyond ``tol``), then the
    smaller tie key (below ``v``: ``-code - 2**40``, the higher code first;
    at or above: ``code``)."""
    d = abs(t - v)
    d = d if d <= tol else _BIG
    above = 1.0 * (t >= v)
    tie = code * (2.0 * above - 1.0) - 1099511627776.0 * (1.0 - above)
    if d < best_d or (d == best_d and tie < best_tie):
        return code, d, tie
    return best, best_d, best_tie


def _mixed_code(
    v, table, origin, inv_step, offset, last, grid, c0, c1, t0, t1, tol
):  # pragma: no cover - numba
    """The code of report ``v`` among the grid's candidate (its offset over
    the step, rounded) and the points ``c0``, ``c1`` (-1 for none), as a
    float; -1.0 if none is within ``tol``.

    Branch-free where one candidate matches (whether it is the grid's or a
    point's is random from report to report, and a mispredicted branch per
    report costs more than this arithmetic); where several do (values a few
    units in the last place apart), they are ranked as the search would."""
    j = offset + np.floor(min(max((v - origin) * inv_step, 0.0), last) + 0.5)
    tg = table[np.int64(j)]
    mg = grid * (abs(tg - v) <= tol)
    m0 = (c0 >= 0) * 1.0 * (abs(t0 - v) <= tol)
    m1 = (c1 >= 0) * 1.0 * (abs(t1 - v) <= tol)
    matches = mg + m0 + m1
    if matches > 1.0:
        code, d, tie = _nearer(v, j, tg, tol, -1.0, _BIG, 0.0)
        code, d, tie = _nearer(v, 1.0 * c0, t0, tol, code, d, tie)
        code, d, tie = _nearer(v, 1.0 * c1, t1, tol, code, d, tie)
        return code
    return mg * j + m0 * c0 + m1 * c1 + (matches - 1.0)  # -1.0 if none


def _grid_codes_loop(
    values, table, origin, inv_step, offset, count, c0, c1, tol, codes
):  # pragma: no cover - numba
    last = max(count - 1.0, 0.0)
    grid = 1.0 if count > 0 else 0.0
    t0 = table[max(c0, 0)]
    t1 = table[max(c1, 0)]
    bad = 0
    for i in range(values.shape[0]):
        v = values[i]
        if not abs(v) <= 1.7976931348623157e308:  # NaN or infinite
            return i + 1
        code = _mixed_code(v, table, origin, inv_step, offset, last, grid, c0, c1, t0, t1, tol)
        bad += code < 0.0
        codes[i] = np.int64(code)
    return bad


def _grid_histogram_loop(
    values, table, origin, inv_step, offset, count, c0, c1, tol, counts
):  # pragma: no cover - numba
    # Three loops, one per alphabet: two points apart alone (Duchi: the
    # counts kept in registers; one memory cell incremented report after
    # report waits for its previous increment), a grid alone (Piecewise,
    # Square Wave), both (Hybrid, the one-bit channel). ``counts`` has one
    # spare cell after the codes, for the reports that match none.
    bad = 0
    t0 = table[max(c0, 0)]
    t1 = table[max(c1, 0)]
    if count == 0 and c0 >= 0 and c1 >= 0 and abs(t0 - t1) > 2.0 * tol:
        n0 = 0
        n1 = 0
        for i in range(values.shape[0]):
            v = values[i]
            i0 = np.int64(abs(t0 - v) <= tol)
            i1 = np.int64(abs(t1 - v) <= tol)
            n0 += i0
            n1 += i1
            bad += 1 - i0 - i1
        counts[c0] += n0
        counts[c1] += n1
        return bad
    last = max(count - 1.0, 0.0)
    if count > 0 and c0 < 0 and c1 < 0:
        for i in range(values.shape[0]):
            v = values[i]
            if not abs(v) <= 1.7976931348623157e308:  # NaN or infinite
                return i + 1
            j = offset + np.int64(np.floor(min(max((v - origin) * inv_step, 0.0), last) + 0.5))
            ok = np.int64(abs(table[j] - v) <= tol)
            bad += 1 - ok
            counts[j] += ok
        return bad
    grid = 1.0 if count > 0 else 0.0
    spare = 0.0 + table.shape[0]
    for i in range(values.shape[0]):
        v = values[i]
        if not abs(v) <= 1.7976931348623157e308:  # NaN or infinite
            return i + 1
        code = _mixed_code(v, table, origin, inv_step, offset, last, grid, c0, c1, t0, t1, tol)
        bad += code < 0.0
        counts[np.int64(code if code >= 0.0 else spare)] += 1
    return bad


def _grid_codes_numpy(values, table, origin, inv_step, offset, count, points, tol):
    """:func:`_mixed_code` over an array (-1 where no code matches)."""
    code = np.full(values.shape[0], -1.0)
    best_d = np.full(values.shape[0], _BIG)
    best_tie = np.zeros(values.shape[0])
    candidates = []
    with np.errstate(invalid="ignore"):
        if count > 0:
            x = np.minimum(np.maximum((values - origin) * inv_step, 0.0), count - 1.0)
            j = offset + np.floor(np.nan_to_num(x, nan=0.0) + 0.5)
            candidates.append((j, table[j.astype(np.int64)]))
        candidates += [(np.float64(c), table[c]) for c in points]
        for c, t in candidates:
            d = np.abs(t - values)
            d = np.where(d <= tol, d, _BIG)
            above = 1.0 * (t >= values)
            tie = c * (2.0 * above - 1.0) - 1099511627776.0 * (1.0 - above)
            better = (d < best_d) | ((d == best_d) & (tie < best_tie))
            code = np.where(better, c, code)
            best_d = np.where(better, d, best_d)
            best_tie = np.where(better, tie, best_tie)
    return np.where(best_d < _BIG, code, -1.0)


def grid_encode(values, table, offset, count, points, tol, *, histogram=False, use_numba=True):
    """The output codes of float reports on a grid-plus-points alphabet, or None.

    ``table`` holds every code's report; codes ``offset .. offset + count -
    1`` are evenly spaced (``count`` 0 or at least 2), ``points`` are the
    other codes (at most two). Returns the codes (int64), or with
    ``histogram`` their counts over ``table``'s codes; None if some report
    is within ``tol`` of no code's (or is not finite): the caller then says
    which, with its own message.
    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    table = np.ascontiguousarray(table, dtype=np.float64)
    points = np.asarray(points, dtype=np.int64)
    if points.shape[0] > 2 or count == 1:
        raise ValueError("grid_encode takes a grid of 0 or >= 2 codes and at most two points.")
    origin, inv_step = 0.0, 0.0
    if count >= 2:
        origin = float(table[offset])
        inv_step = (count - 1.0) / float(table[offset + count - 1] - table[offset])
    if use_numba and use_compiled(values.shape[0]):
        c0, c1 = (points.tolist() + [-1, -1])[:2]
        args = (origin, inv_step, int(offset), int(count), int(c0), int(c1), float(tol))
        if histogram:  # one spare cell after the codes (reports that match none)
            out = np.zeros(table.shape[0] + 1, dtype=np.int64)
            bad = _grid_histogram_jit(values, table, *args, out)
            out = out[: table.shape[0]]
        else:
            out = np.empty(values.shape[0], dtype=np.int64)
            bad = _grid_codes_jit(values, table, *args, out)
        return None if bad else out
    codes = _grid_codes_numpy(values, table, origin, inv_step, offset, count, points, tol)
    if (codes < 0).any():
        return None
    codes = codes.astype(np.int64)
    if histogram:
        return np.bincount(codes, minlength=table.shape[0]).astype(np.int64)
    return codes


# -------------------------------------------- EM through the band transition
def _second_antiderivative(values, step, located, out):  # pragma: no cover - numba
    """The second antiderivative of a piecewise-constant function (pieces of
    width ``step`` holding ``values``, 0 before the first) at located points
    (see ``BandTransition._locate``)."""
    index, offset, below, beyond, excess = located
    n = values.shape[0]
    first = np.empty(n + 1)
    second = np.empty(n + 1)
    first[0] = 0.0
    second[0] = 0.0
    for i in range(n):
        first[i + 1] = first[i] + values[i] * step
        second[i + 1] = second[i] + first[i] * step + values[i] * (0.5 * step * step)
    for p in range(index.shape[0]):
        if below[p]:
            out[p] = 0.0
        elif beyond[p]:
            out[p] = second[n] + first[n] * excess[p]
        else:
            i = index[p]
            o = offset[p]
            out[p] = second[i] + first[i] * o + values[i] * (0.5 * o * o)


def _band_apply(values, total, step, upper, lower, qc, pc, group, scale, out):  # pragma: no cover
    """``out[j] = qc group total + (pc - qc) (A_upper - A_lower)_j / scale``: the
    band operator through the second antiderivatives ``A`` of the pieces
    ``values`` (of width ``step``) at the located points ``upper``, ``lower``."""
    a = np.empty(out.shape[0] + 1)
    b = np.empty(out.shape[0] + 1)
    _second_antiderivative(values, step, upper, a)
    _second_antiderivative(values, step, lower, b)
    base = qc * group * total
    for j in range(out.shape[0]):
        out[j] = base + (pc - qc) * ((a[j + 1] - a[j]) - (b[j + 1] - b[j])) / scale


def _band_forward(theta, qc, pc, group, width, top, low, out):  # pragma: no cover - numba
    k = theta.shape[0]
    density = np.empty(k)
    total = 0.0
    for i in range(k):
        density[i] = theta[i] / width
        total += theta[i]
    # (dividing by 1.0 is exact: the masses as the numpy path's)
    _band_apply(density, total, width, top, low, qc, pc, group, 1.0, out)


def _band_adjoint(v, qc, pc, group, width, lower, upper, out):  # pragma: no cover - numba
    total = 0.0
    for j in range(v.shape[0]):
        total += v[j]
    _band_apply(v, total, group, upper, lower, qc, pc, group, width, out)


def _smooth_into(theta, out):  # pragma: no cover - numba
    k = theta.shape[0]
    total = 0.0
    for i in range(1, k - 1):
        out[i] = 0.25 * theta[i - 1] + 0.5 * theta[i] + 0.25 * theta[i + 1]
    out[0] = (2.0 * theta[0] + theta[1]) / 3.0
    out[k - 1] = (theta[k - 2] + 2.0 * theta[k - 1]) / 3.0
    for i in range(k):
        total += out[i]
    for i in range(k):
        out[i] /= total


def _mean_log_likelihood(h, m, n, tiny):  # pragma: no cover - numba
    """The log-likelihood per report of the counts ``h`` under the output masses ``m``."""
    ll = 0.0
    for j in range(h.shape[0]):
        if h[j] > 0:
            ll += h[j] * np.log(max(m[j], tiny))
    return ll / n


def _band_em_loop(
    h, theta, smoothing, tol, max_iter, qc, pc, group, width, top, low, lower, upper
):  # pragma: no cover - numba
    k = theta.shape[0]
    d_out = h.shape[0]
    n = 0.0
    for j in range(d_out):
        n += h[j]
    tiny = 2.2250738585072014e-308
    m = np.empty(d_out)
    ratio = np.empty(d_out)
    g = np.empty(k)
    smooth = np.empty(k)
    _band_forward(theta, qc, pc, group, width, top, low, m)
    ll = _mean_log_likelihood(h, m, n, tiny)
    converged = False
    it = 0
    while it < max_iter:
        it += 1
        for j in range(d_out):
            ratio[j] = h[j] / max(m[j], tiny) if h[j] > 0 else 0.0
        _band_adjoint(ratio, qc, pc, group, width, lower, upper, g)
        total = 0.0
        for i in range(k):
            theta[i] = theta[i] * g[i]
            total += theta[i]
        for i in range(k):
            theta[i] /= total
        if smoothing:
            _smooth_into(theta, smooth)
            for i in range(k):
                theta[i] = smooth[i]
        _band_forward(theta, qc, pc, group, width, top, low, m)
        new = _mean_log_likelihood(h, m, n, tiny)
        if abs(new - ll) < tol:
            ll = new
            converged = True
            break
        ll = new
    return it, converged, ll * n


def band_em(operator, counts, theta, *, smoothing, tol, max_iter):
    """EM / EMS through a ``BandTransition`` with the compiled loop (numba), or None.

    None also below ``COMPILE_MIN_WORK`` reports: the numpy EM then costs
    less than compiling the loop (whatever n, a fraction of a second).
    """
    h = np.ascontiguousarray(counts, dtype=np.float64)
    if not use_compiled(h.sum()):
        return None
    theta = np.array(theta, dtype=np.float64)
    it, converged, ll = _band_em_jit(
        h,
        theta,
        bool(smoothing),
        float(tol),
        int(max_iter),
        operator.qc,
        operator.pc,
        operator.group,
        operator.width,
        operator._fwd[0],
        operator._fwd[1],
        operator._adj[0],
        operator._adj[1],
    )
    return theta, {"n_iter": int(it), "converged": bool(converged), "log_likelihood": float(ll)}


if numba is not None:
    _second_antiderivative = numba.njit(nogil=True, cache=True, error_model="numpy")(
        _second_antiderivative
    )
    _band_apply = numba.njit(nogil=True, cache=True, error_model="numpy")(_band_apply)
    _band_forward = numba.njit(nogil=True, cache=True, error_model="numpy")(_band_forward)
    _band_adjoint = numba.njit(nogil=True, cache=True, error_model="numpy")(_band_adjoint)
    _smooth_into = numba.njit(nogil=True, cache=True, error_model="numpy")(_smooth_into)
    _mean_log_likelihood = numba.njit(nogil=True, cache=True, error_model="numpy")(
        _mean_log_likelihood
    )
    _band_em_jit = numba.njit(nogil=True, cache=True, error_model="numpy")(_band_em_loop)
    _fused_jit = numba.njit(nogil=True, cache=True, error_model="numpy")(_fused_loop)
    _band_code = numba.njit(inline="always", nogil=True, cache=True, error_model="numpy")(
        _band_code
    )
    _band_start = numba.njit(inline="always", nogil=True, cache=True, error_model="numpy")(
        _band_start
    )
    _unit_value = numba.njit(inline="always", nogil=True, cache=True, error_model="numpy")(
        _unit_value
    )
    _band_report = numba.njit(inline="always", nogil=True, cache=True, error_model="numpy")(
        _band_report
    )
    _duchi_report = numba.njit(inline="always", nogil=True, cache=True, error_model="numpy")(
        _duchi_report
    )
    _band_codes_jit = numba.njit(nogil=True, cache=True, error_model="numpy")(_band_codes_loop)
    _two_point_jit = numba.njit(nogil=True, cache=True, error_model="numpy")(_two_point_loop)
    _hybrid_jit = numba.njit(nogil=True, cache=True, error_model="numpy")(_hybrid_loop)
    _one_bit_jit = numba.njit(nogil=True, cache=True, error_model="numpy")(_one_bit_loop)
    _nearer = numba.njit(inline="always", nogil=True, cache=True, error_model="numpy")(_nearer)
    _mixed_code = numba.njit(inline="always", nogil=True, cache=True, error_model="numpy")(
        _mixed_code
    )
    _grid_codes_jit = numba.njit(nogil=True, cache=True, error_model="numpy")(_grid_codes_loop)
    _grid_histogram_jit = numba.njit(nogil=True, cache=True, error_model="numpy")(
        _grid_histogram_loop
    )
