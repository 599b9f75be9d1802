"""Register-blocked projections ``X @ A.T`` for the hash kernels, as Numba intrinsics.

Both the hyperplane and the Euclidean hash spend almost all their time in ``X @ A.T`` on a
skinny shape (64 inputs, 16 outputs). The kernels here compute the projections of a block of
``BLOCK`` consecutive points onto a group of ``LANES`` directions as an outer product: one
``LANES``-wide vector accumulator per point, updated once per input coordinate j with the
coordinate x_j broadcast against row j of the group's transposed directions. Every
coordinate of X is read once per group, every direction coordinate once per block of points,
and nothing is reduced across vector lanes.

Why LLVM IR and not plain Numba: written as scalar loops, the accumulators either stay
scalar (Numba leaves LLVM's SLP vectoriser off) or live in memory; written as reductions
over j (the previous kernels), every projection pays a horizontal reduction. The intrinsics
below emit the vector loop directly; on a CPU without AVX-512 LLVM splits each 16-lane
vector into narrower ones, so the code runs anywhere Numba does.

Layout: :func:`pack_groups` turns (n_tables, R, dim) directions into (n_tables · G, dim,
LANES) groups, G = ceil(R / LANES), with zero directions appended; a zero direction projects
every point to exactly 0. X must be C-contiguous (``_inputs.as_points`` makes it so).

:func:`project_candidates` fuses the projection of an affine layer (groups with an offset row,
several groups per pass) with the first range scan of a Top-K: it keeps, per point, only the
projections that reach a threshold, so the (BLOCK, width) projections are never stored (the
DSM kernel, ``routing.models._topk_kernel``).

Range scans (:func:`compress_in_range`, :func:`count_in_range`, :func:`min_max`,
:func:`max_below`), :func:`kth_largest_of_few` and :func:`top_of_few` (the ranks of a few
values held in registers; the latter also picks the MoE routers' experts) are the selection
primitives of the Top-K kernels (DSM:
``routing.models._topk_kernel``; COMET and SDMLP: ``routing.layers._unit_kernel``; PKM):
the scans take one vector comparison per LANES entries, and where
the CPU has AVX-512 the kept entries are packed in a register (``vcompress``) and stored
whole. Row operations (:func:`row_axpy`, :func:`row_dot`) are the per-winner weight updates
and dot products of ``_unit_kernel``, on rows padded to a multiple of LANES.

Reference for the kernels: :func:`project_reference`.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["BLOCK", "CANDIDATE_GROUPS", "FEW", "LANES", "compress_in_range", "count_in_range",
           "kth_largest_of_few", "max_below", "min_max", "pack_groups", "packed_rows",
           "project_block", "project_candidates", "project_reference", "row_axpy", "row_dot",
           "sign_block", "top_of_few"]

LANES = 16  # directions per group: one AVX-512 register of float32
BLOCK = 8  # points per block: independent accumulators that hide the FMA latency
PREFETCH_BLOCKS = 2  # how many blocks ahead the rows of X are prefetched (best of 0..16 here)
# groups per call of project_candidates, by dtype: BLOCK accumulators per group. On the DSM
# kernel's shape (8 coordinates and an offset, 256 groups) two groups at a time measured
# 20-35 % faster than one in float32, three another 10 % faster; in float64 (two registers
# per accumulator) three groups spill and were 50 % slower than two.
CANDIDATE_GROUPS = {np.dtype(np.float32): 3, np.dtype(np.float64): 2}


def pack_groups(directions: np.ndarray, dtype) -> np.ndarray:
    """(n_tables, R, dim) directions -> (n_tables · G, dim, LANES) transposed groups.

    ``out[t · G + g, j, l] = directions[t, g · LANES + l, j]``, zero where g · LANES + l >= R;
    G = ceil(R / LANES). C-contiguous, in ``dtype`` (the dtype of the points it will be
    applied to).
    """
    n_tables, n_rows, dim = directions.shape
    n_groups = -(-n_rows // LANES)
    if n_rows % LANES == 0:  # no zero directions to append: one converting copy
        grouped = directions.reshape(n_tables, n_groups, LANES, dim).transpose(0, 1, 3, 2)
        return np.ascontiguousarray(grouped, dtype=dtype).reshape(n_tables * n_groups, dim,
                                                                  LANES)
    padded = np.zeros((n_tables, n_groups * LANES, dim), dtype=dtype)
    padded[:, :n_rows] = directions
    grouped = padded.reshape(n_tables, n_groups, LANES, dim).transpose(0, 1, 3, 2)
    return np.ascontiguousarray(grouped.reshape(n_tables * n_groups, dim, LANES))


@njit(cache=True)
def packed_rows(M):
    """:func:`pack_groups`' layout of one matrix, inside Numba functions: M (R, dim) ->
    (ceil(R / LANES), dim, LANES), zero past row R (a loop in the kernel costs less than a
    call of ``pack_groups`` and its numpy transposes)."""
    R, d = M.shape
    out = np.zeros((-(-R // LANES), d, LANES), M.dtype)
    for r in range(R):
        for c in range(d):
            out[r // LANES, c, r % LANES] = M[r, c]
    return out


def project_reference(X: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """Plain numpy reference: (N, dim) X, (n_tables, R, dim) directions -> (N, n_tables, R).

    Computed in X's dtype, like the kernels.
    """
    n_tables, n_rows, dim = directions.shape
    proj = X @ directions.reshape(-1, dim).astype(X.dtype).T
    return proj.reshape(len(X), n_tables, n_rows)


def _check_operands(X, groups):
    """Typing: both C-contiguous arrays of the same float dtype, X 2-D, groups 3-D."""
    return (isinstance(X, types.Array) and isinstance(groups, types.Array)
            and X.ndim == 2 and groups.ndim == 3 and X.layout == "C" and groups.layout == "C"
            and X.dtype == groups.dtype and X.dtype in (types.float32, types.float64))


def _accumulate(context, builder, x_type, x, first, groups_type, groups, group, n_groups=1,
                offset=False):
    """IR: the LANES-wide projections of points first .. first + BLOCK - 1 onto ``n_groups``
    consecutive groups from ``group`` on.

    Rows past the last point repeat the last point. Returns one list of BLOCK vector values
    per group. With ``offset``, the groups have one row more than X has columns, and the
    accumulators start from that last row: ``groups[g, dim, l] + Σ_j groups[g, j, l]·x_j``.
    With several groups each broadcast coordinate serves several FMAs (see
    :data:`CANDIDATE_GROUPS`).
    """
    xs = context.make_array(x_type)(context, builder, x)
    gs = context.make_array(groups_type)(context, builder, groups)
    n_points, dim = cgutils.unpack_tuple(builder, xs.shape, 2)
    elem = context.get_data_type(x_type.dtype)
    vec = ir.VectorType(elem, LANES)
    intp = context.get_value_type(types.intp)
    fmuladd = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(vec, [vec, vec, vec]),
        f"llvm.fmuladd.v{LANES}{'f32' if x_type.dtype == types.float32 else 'f64'}")

    last = builder.sub(n_points, ir.Constant(intp, 1))
    rows = []
    for q in range(BLOCK):
        row = builder.add(first, ir.Constant(intp, q))
        row = builder.select(builder.icmp_signed("<", row, n_points), row, last)
        rows.append(builder.gep(xs.data, [builder.mul(row, dim)]))
    vec_ptr = vec.as_pointer()
    group_size = builder.mul(cgutils.unpack_tuple(builder, gs.shape, 3)[1],
                             ir.Constant(intp, LANES))
    bases = [builder.gep(gs.data, [builder.mul(builder.add(group, ir.Constant(intp, h)),
                                               group_size)])
             for h in range(n_groups)]

    align = context.get_abi_sizeof(elem)
    accs = []
    for base in bases:
        start = ir.Constant(vec, [0.0] * LANES)
        if offset:  # the row after the last coordinate's
            start = builder.load(builder.bitcast(
                builder.gep(base, [builder.mul(dim, ir.Constant(intp, LANES))]), vec_ptr),
                align=align)
        accs.append([cgutils.alloca_once_value(builder, start) for _ in range(BLOCK)])
    # Iteration j also prefetches cache line j past the rows PREFETCH_BLOCKS blocks ahead (a
    # block spans at most dim lines; a prefetch past the end of X never faults). On 10⁶ × 64
    # float32 points this cut the time by 10-15 % against the hardware prefetcher alone.
    i8p = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    prefetch = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
        "llvm.prefetch.p0i8")
    ahead = builder.bitcast(
        builder.gep(rows[0], [builder.mul(dim, ir.Constant(intp, PREFETCH_BLOCKS * BLOCK))]), i8p)
    with cgutils.for_range(builder, dim) as loop:
        j = loop.index
        line = builder.gep(ahead, [builder.mul(j, ir.Constant(intp, 64))])
        builder.call(prefetch, [line, ir.Constant(i32, 0), ir.Constant(i32, 3),
                                ir.Constant(i32, 1)])  # read, keep in all caches, data
        at = builder.mul(j, ir.Constant(intp, LANES))
        a = [builder.load(builder.bitcast(builder.gep(base, [at]), vec_ptr), align=align)
             for base in bases]
        for q in range(BLOCK):
            ub = _splat(builder, builder.load(builder.gep(rows[q], [j])), vec)  # x_j, all lanes
            for h in range(n_groups):
                builder.store(builder.call(fmuladd, [ub, a[h], builder.load(accs[h][q])]),
                              accs[h][q])
    return [[builder.load(acc) for acc in group_accs] for group_accs in accs]


@intrinsic
def sign_block(typingctx, X, first, groups, group):
    """Sign masks of a block of points on one group of directions.

    Arguments (inside a Numba function):
        X: (N, dim) float32 or float64, C-contiguous, N >= 1.
        first: index of the block's first point; rows past N - 1 repeat row N - 1.
        groups: (n_groups, dim, LANES) from :func:`pack_groups`, X's dtype.
        group: which group.

    Returns:
        A tuple of BLOCK + 1 int64: for each point q the mask whose bit l is 1 iff
        ``groups[group, :, l] · X[first + q] >= 0``, then 1 if all BLOCK · LANES projections are
        finite, else 0.
    """
    if not _check_operands(X, groups):
        return None
    sig = types.UniTuple(types.int64, BLOCK + 1)(X, types.intp, groups, types.intp)

    def codegen(context, builder, signature, args):
        x, first, grp, g = args
        first = context.cast(builder, first, signature.args[1], types.intp)
        g = context.cast(builder, g, signature.args[3], types.intp)
        projections = _accumulate(context, builder, X, x, first, groups, grp, g)[0]
        i64 = ir.IntType(64)
        mask_type = ir.IntType(LANES)
        zero = ir.Constant(projections[0].type, [0.0] * LANES)
        out = []
        finite = ir.Constant(mask_type, -1)
        for p in projections:
            out.append(builder.zext(builder.bitcast(builder.fcmp_ordered(">=", p, zero),
                                                    mask_type), i64))
            # p - p is 0 for a finite p and NaN for NaN or +-inf
            diff = builder.fsub(p, p)
            finite = builder.and_(finite, builder.bitcast(builder.fcmp_ordered("==", diff, zero),
                                                          mask_type))
        all_finite = builder.icmp_unsigned("==", finite, ir.Constant(mask_type, -1))
        out.append(builder.zext(all_finite, i64))
        return context.make_tuple(builder, signature.return_type, out)

    return sig, codegen


@intrinsic
def project_block(typingctx, X, first, groups, group, out, column):
    """Write the projections of a block of points on one group of directions into ``out``.

    Arguments (inside a Numba function): ``X``, ``first``, ``groups``, ``group`` as for
    :func:`sign_block`; out: (BLOCK, M) in X's dtype, C-contiguous; column: 0 <= column <=
    M - LANES. Sets ``out[q, column + l] = groups[group, :, l] · X[first + q]``.
    """
    if not (_check_operands(X, groups) and isinstance(out, types.Array) and out.ndim == 2
            and out.layout == "C" and out.dtype == X.dtype):
        return None
    sig = types.none(X, types.intp, groups, types.intp, out, types.intp)

    def codegen(context, builder, signature, args):
        x, first, grp, g, dst, column = args
        projections = _accumulate(context, builder, X, x, first, groups, grp, g)[0]
        target = context.make_array(out)(context, builder, dst)
        row_length = cgutils.unpack_tuple(builder, target.shape, 2)[1]
        for q, p in enumerate(projections):
            offset = builder.add(builder.mul(ir.Constant(row_length.type, q), row_length), column)
            ptr = builder.bitcast(builder.gep(target.data, [offset]), p.type.as_pointer())
            builder.store(p, ptr, align=context.get_abi_sizeof(p.type.element))
        return context.get_dummy_value()

    return sig, codegen


@intrinsic(prefer_literal=True)
def project_candidates(typingctx, X, first, groups, group, thresholds, out_v, out_j, counts,
                       sparse):
    """Append the affine projections of a block of points on groups ``group`` to
    ``group + G - 1`` (G = ``CANDIDATE_GROUPS[X.dtype]``: 3 for float32, 2 for float64) that
    reach each point's threshold, with their direction indices, to that point's row.

    The groups carry an offset row: with X (N, dim), groups is (n_groups, dim + 1, LANES)
    (``pack_groups`` of [directions | offsets]) and the projection of point q on direction
    (g, l) is p = ``groups[g, dim, l] + Σ_j groups[g, j, l]·X[first + q, j]``, the fused
    multiply-adds taken in coordinate order from the offset on (the bias of an affine layer
    costs no FMA). The G groups are projected together (each broadcast coordinate then serves
    G FMAs), and the projections never leave the registers: for point q, the entries with
    p >= thresholds[q] (NaN never kept) are compressed (as in :func:`compress_in_range`) to
    ``out_v[q, counts[q]:]`` and their direction indices ``g · LANES + l`` to
    ``out_j[q, counts[q]:]``, in increasing direction order, and counts[q] grows by their
    number. Used by the DSM Top-K kernel to keep only the candidates of each row, without
    storing the (BLOCK, width) pre-activations.

    Arguments (inside a Numba function): ``X``, ``first`` as for :func:`sign_block`; groups:
    (n_groups, dim + 1, LANES), X's dtype, C-contiguous; group: 0 <= group <= n_groups - G
    (neither checked); thresholds: (>= BLOCK,) of X's dtype (-inf keeps every projection);
    out_v: (>= BLOCK, M) of X's dtype, out_j: (>= BLOCK, M) int32, both C-contiguous, with M
    >= counts[q] + G·LANES (whole vectors may be stored); counts: (>= BLOCK,) int64; sparse:
    a constant True or False, True when few projections are expected to be kept (the stores
    of ``_compress_append(sparse=True)``: fewer cache-line splits; with many kept an extra
    16-byte store per vector, 2 % slower at half the units kept). Rows past the last point
    repeat the last point (their rows are written too).
    """
    def _matrix(a, dtype):
        return (isinstance(a, types.Array) and a.ndim == 2 and a.layout == "C"
                and a.dtype == dtype)

    if not (_check_operands(X, groups) and _matrix(out_v, X.dtype)
            and _matrix(out_j, types.int32)
            and isinstance(thresholds, types.Array) and thresholds.ndim == 1
            and thresholds.dtype == X.dtype
            and isinstance(counts, types.Array) and counts.ndim == 1 and counts.layout == "C"
            and counts.dtype == types.int64 and isinstance(sparse, types.BooleanLiteral)):
        return None
    sig = types.none(X, types.intp, groups, types.intp, thresholds, out_v, out_j, counts,
                     sparse)
    few_kept = sparse.literal_value

    def codegen(context, builder, signature, args):
        x, first, grp, g, thr, dst_v, dst_j, cnt, _ = args
        n_groups = CANDIDATE_GROUPS[np.dtype(X.dtype.name)]
        projections = _accumulate(context, builder, X, x, first, groups, grp, g,
                                  n_groups=n_groups, offset=True)
        i32, i64 = ir.IntType(32), ir.IntType(64)
        ivec = ir.VectorType(i32, LANES)
        thr_array = context.make_array(thresholds)(context, builder, thr)
        values = context.make_array(out_v)(context, builder, dst_v)
        indices = context.make_array(out_j)(context, builder, dst_j)
        count_data = context.make_array(counts)(context, builder, cnt).data
        row_length = cgutils.unpack_tuple(builder, values.shape, 2)[1]
        first_index = builder.trunc(builder.mul(g, ir.Constant(g.type, LANES)), i32)
        lane_indices = [builder.add(_splat(builder, first_index, ivec),
                                    ir.Constant(ivec, list(range(h * LANES, (h + 1) * LANES))))
                        for h in range(n_groups)]
        for q in range(BLOCK):
            threshold = builder.load(cgutils.get_item_pointer(
                context, builder, thresholds, thr_array, [ir.Constant(i64, q)]))
            threshold = _splat(builder, threshold, projections[0][q].type)
            count_ptr = builder.gep(count_data, [ir.Constant(i64, q)])
            pos = builder.load(count_ptr)
            row_start = builder.mul(ir.Constant(row_length.type, q), row_length)
            row_v = builder.gep(values.data, [row_start])
            row_j = builder.gep(indices.data, [row_start])
            for h in range(n_groups):
                p = projections[h][q]
                keep = builder.fcmp_ordered(">=", p, threshold)
                _compress_append(context, builder, p, keep, row_v, pos, few_kept)
                _compress_append(context, builder, lane_indices[h], keep, row_j, pos,
                                 few_kept)
                pos = builder.add(pos, builder.zext(_popcount(builder, keep), i64))
            builder.store(pos, count_ptr)
        return context.get_dummy_value()

    return sig, codegen


def _splat(builder, value, vec):
    """IR: ``value`` in every lane of the vector type ``vec``."""
    one = builder.insert_element(ir.Constant(vec, ir.Undefined), value,
                                 ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(one, ir.Constant(vec, ir.Undefined),
                                  ir.Constant(ir.VectorType(ir.IntType(32), vec.count),
                                              [0] * vec.count))


def _is_float_vector_array(a):
    return (isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C"
            and a.dtype in (types.float32, types.float64))


def _has_avx512f() -> bool:
    """Whether Numba compiles for a CPU with AVX-512F (host features, or NUMBA_CPU_FEATURES)."""
    from numba import config
    from numba.core.codegen import get_host_cpu_features
    features = config.CPU_FEATURES if config.CPU_FEATURES is not None else get_host_cpu_features()
    return "+avx512f" in features.split(",")


def _compress_append(context, builder, vector, keep, target, pos, sparse=False):
    """IR: store the lanes of ``vector`` selected by ``keep`` contiguously from target[pos].

    With AVX-512F, 512-bit pieces are compressed in registers (``vcompress``) and stored
    whole (on the Ice Lake development machine the candidate scan of the DSM kernel ran 1.5x
    faster this way than with compressing stores to memory), but this writes the vector's
    full width from each piece's position. Elsewhere the generic
    ``llvm.masked.compressstore`` (emulated by LLVM) writes only the kept lanes.

    ``sparse``: few lanes are expected to be kept (the candidate scan keeps ~8 %). Then only
    the packed register's first 16 bytes are stored, and the whole register only when more
    lanes than those were kept (a branch that is rarely taken, or almost always, so well
    predicted). A 64-byte store at a 4-byte-aligned position splits across two cache lines
    15 times in 16, a 16-byte one 3 times in 16: on the DSM kernel's shape the candidate
    scan ran 6-12 % faster.
    """
    n = vector.type.count
    element = vector.type.element
    bits = n * context.get_abi_sizeof(element) * 8
    suffix = {"float": "f32", "double": "f64", "i32": "i32", "i64": "i64"}[str(element)]
    i32 = ir.IntType(32)
    if _has_avx512f() and bits > 512:  # split into 512-bit halves, the second after the first
        half = n // 2
        pieces = [(builder.shuffle_vector(vector, vector, ir.Constant(
                       ir.VectorType(i32, half), list(range(lo, lo + half)))),
                   builder.shuffle_vector(keep, keep, ir.Constant(
                       ir.VectorType(i32, half), list(range(lo, lo + half)))))
                  for lo in (0, half)]
        _compress_append(context, builder, *pieces[0], target, pos, sparse)
        kept = builder.zext(_popcount(builder, pieces[0][1]), pos.type)
        _compress_append(context, builder, *pieces[1], target, builder.add(pos, kept), sparse)
        return
    ptr = builder.gep(target, [pos])
    if _has_avx512f():
        compress = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(vector.type, [vector.type, vector.type, keep.type]),
            f"llvm.x86.avx512.mask.compress.v{n}{suffix}")
        packed = builder.call(compress, [vector, ir.Constant(vector.type, None), keep])
        align = context.get_abi_sizeof(element)
        if not sparse:
            builder.store(packed, builder.bitcast(ptr, vector.type.as_pointer()), align=align)
            return
        few = 16 // align  # lanes in 16 bytes
        head = builder.shuffle_vector(packed, packed, ir.Constant(ir.VectorType(i32, few),
                                                                  list(range(few))))
        builder.store(head, builder.bitcast(ptr, head.type.as_pointer()), align=align)
        kept = _popcount(builder, keep)
        with builder.if_then(builder.icmp_unsigned(">", kept, ir.Constant(kept.type, few)),
                             likely=False):
            builder.store(packed, builder.bitcast(ptr, vector.type.as_pointer()), align=align)
    else:
        store = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [vector.type, ptr.type, keep.type]),
            f"llvm.masked.compressstore.v{n}{suffix}")
        builder.call(store, [vector, ptr, keep])


def _popcount(builder, mask):
    """IR: the number of true lanes of an <n x i1> mask, as an i(n) integer."""
    bits = builder.bitcast(mask, ir.IntType(mask.type.count))
    ctpop = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(bits.type, [bits.type]), f"llvm.ctpop.i{bits.type.width}")
    return builder.call(ctpop, [bits])


def _scan_chunks(context, builder, array_type, array, count, lo, hi, visit):
    """IR: call ``visit(i, values, keep)`` for each LANES-wide chunk of array[:count].

    ``values`` is the vector array[i : i + LANES] (whole vectors are read), ``keep`` the
    <LANES x i1> mask of lo <= values < hi (hi None: no upper bound; NaN never kept),
    restricted to i + l < count on the last chunk. lo, hi: IR scalars of the array's dtype.
    """
    i64 = ir.IntType(64)
    data = context.make_array(array_type)(context, builder, array).data
    vec = ir.VectorType(data.type.pointee, LANES)
    align = context.get_abi_sizeof(data.type.pointee)
    low = _splat(builder, lo, vec)
    high = None if hi is None else _splat(builder, hi, vec)
    iota = ir.Constant(ir.VectorType(i64, LANES), list(range(LANES)))

    def chunk(i, rest):
        values = builder.load(builder.bitcast(builder.gep(data, [i]), vec.as_pointer()),
                              align=align)
        keep = builder.fcmp_ordered(">=", values, low)
        if high is not None:
            keep = builder.and_(keep, builder.fcmp_ordered("<", values, high))
        if rest is not None:  # the tail: lanes l < rest only
            keep = builder.and_(keep, builder.icmp_signed("<", iota,
                                                          _splat(builder, rest, iota.type)))
        visit(i, values, keep)

    full = builder.and_(count, ir.Constant(i64, -LANES))
    with cgutils.for_range_slice(builder, ir.Constant(i64, 0), full,
                                 ir.Constant(i64, LANES)) as (i, _):
        chunk(i, None)
    with builder.if_then(builder.icmp_signed("<", full, count)):
        chunk(full, builder.sub(count, full))


def _range_arguments(context, builder, signature, args, v):
    """IR: (count as i64, lo, hi or None) from the (v, n, lo, hi) arguments of a scan."""
    count = context.cast(builder, args[1], signature.args[1], types.int64)
    lo = context.cast(builder, args[2], signature.args[2], v.dtype)
    has_hi = not isinstance(signature.args[3], (types.NoneType, types.Omitted))
    hi = context.cast(builder, args[3], signature.args[3], v.dtype) if has_hi else None
    return count, lo, hi


def _range_typing(v, n, lo, hi) -> bool:
    has_hi = not isinstance(hi, (types.NoneType, types.Omitted))
    return (_is_float_vector_array(v) and isinstance(n, types.Integer)
            and isinstance(lo, types.Float) and (not has_hi or isinstance(hi, types.Float)))


@intrinsic
def compress_in_range(typingctx, v, n, lo, hi, index, out_v, out_j):
    """Write the entries x of v[:n] with lo <= x < hi, and their indices, contiguously.

    A branch-free vector loop: per LANES entries, one or two comparisons and two
    compressions (AVX-512 ``vcompress`` where the CPU has it). The order of v is kept.

    Arguments (inside a Numba function):
        v: 1-D float32 or float64 array, C-contiguous. Whole vectors are read: v[:n] padded
            to a multiple of LANES must lie inside v (not checked); entries past n are
            ignored.
        n: number of entries to scan, >= 0.
        lo: a float, converted to v's dtype.
        hi: a float, or None for no upper bound. NaN entries are never kept.
        index: the index written for entry i: ``index[i]`` if index is a 1-D int32
            C-contiguous array (read like v), ``index + i`` if it is an integer.
        out_v: 1-D array of v's dtype; out_j: 1-D int32 array, or None to keep only the
            values (then index is ignored); both C-contiguous with room for (number kept) +
            LANES entries: on AVX-512 CPUs whole vectors are stored (entries past the kept
            ones get arbitrary values), elsewhere only kept entries.

    Returns:
        int64, the number of entries kept, written to out_v[:count] and out_j[:count].
    """
    index_is_array = isinstance(index, types.Array)
    with_indices = not isinstance(out_j, (types.NoneType, types.Omitted))
    if not (_range_typing(v, n, lo, hi)
            and isinstance(out_v, types.Array) and out_v.ndim == 1
            and out_v.layout == "C" and out_v.dtype == v.dtype
            and (not with_indices or (
                isinstance(out_j, types.Array) and out_j.ndim == 1 and out_j.layout == "C"
                and out_j.dtype == types.int32))
            and (isinstance(index, types.Integer) or (
                index_is_array and index.ndim == 1 and index.layout == "C"
                and index.dtype == types.int32))):
        return None
    sig = types.int64(v, n, lo, hi, index, out_v, out_j)

    def codegen(context, builder, signature, args):
        i32, i64 = ir.IntType(32), ir.IntType(64)
        count, low, high = _range_arguments(context, builder, signature, args, v)
        ivec = ir.VectorType(i32, LANES)
        target_v = context.make_array(out_v)(context, builder, args[5]).data
        if with_indices:
            target_j = context.make_array(out_j)(context, builder, args[6]).data
        if with_indices and index_is_array:
            idx_data = context.make_array(index)(context, builder, args[4]).data
        elif with_indices:  # the indices offset + i, kept as a running vector
            offset = builder.trunc(context.cast(builder, args[4], signature.args[4],
                                                types.int64), i32)
            running = cgutils.alloca_once_value(builder, builder.add(
                _splat(builder, offset, ivec), ir.Constant(ivec, list(range(LANES)))))
        pos = cgutils.alloca_once_value(builder, ir.Constant(i64, 0))

        def visit(i, values, keep):
            at = builder.load(pos)
            _compress_append(context, builder, values, keep, target_v, at)
            if with_indices:
                if index_is_array:
                    indices = builder.load(builder.bitcast(builder.gep(idx_data, [i]),
                                                           ivec.as_pointer()), align=4)
                else:
                    indices = builder.load(running)
                    builder.store(builder.add(indices, _splat(
                        builder, ir.Constant(i32, LANES), ivec)), running)
                _compress_append(context, builder, indices, keep, target_j, at)
            builder.store(builder.add(at, builder.zext(_popcount(builder, keep), i64)), pos)

        _scan_chunks(context, builder, v, args[0], count, low, high, visit)
        return builder.load(pos)

    return sig, codegen


@intrinsic
def count_in_range(typingctx, v, n, lo, hi):
    """The number of entries x of v[:n] with lo <= x < hi (hi None: no upper bound).

    A vector loop of one or two comparisons and a population count per LANES entries.
    Arguments as for :func:`compress_in_range` (v is read in whole vectors; NaN is never
    counted). Returns int64.
    """
    if not _range_typing(v, n, lo, hi):
        return None
    sig = types.int64(v, n, lo, hi)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        count, low, high = _range_arguments(context, builder, signature, args, v)
        total = cgutils.alloca_once_value(builder, ir.Constant(i64, 0))

        def visit(i, values, keep):
            builder.store(builder.add(builder.load(total),
                                      builder.zext(_popcount(builder, keep), i64)), total)

        _scan_chunks(context, builder, v, args[0], count, low, high, visit)
        return builder.load(total)

    return sig, codegen


FEW = 2 * LANES  # the most values :func:`kth_largest_of_few` ranks


def _hold_few(context, builder, data, count):
    """IR: the FEW values data[:count] as FEW // LANES vectors, lanes past count set to -inf,
    with the vector of each lane's index: [(values, lane indices as i64), ...]."""
    i64 = ir.IntType(64)
    element = data.type.pointee
    vec = ir.VectorType(element, LANES)
    align = context.get_abi_sizeof(element)
    minus_inf = _splat(builder, ir.Constant(element, float("-inf")), vec)
    held = []
    for h in range(FEW // LANES):
        values = builder.load(builder.bitcast(builder.gep(data, [ir.Constant(i64, h * LANES)]),
                                              vec.as_pointer()), align=align)
        lanes = ir.Constant(ir.VectorType(i64, LANES), list(range(h * LANES, (h + 1) * LANES)))
        inside = builder.icmp_signed("<", lanes, _splat(builder, count, lanes.type))
        held.append((builder.select(inside, values, minus_inf), lanes))
    return held


@intrinsic
def kth_largest_of_few(typingctx, v, n, m):
    """The m-th largest (1-based) of the few values v[:n], 1 <= m <= n <= FEW (= 2·LANES; not
    checked): the largest x of v[:n] with at least m values >= x.

    The n values are held in two vector registers (lanes past n set to -inf), and each one
    is ranked by one comparison against both, two population counts and a select: no branch
    and no loop over the values per value (the counting pass per value it replaced set up a
    loop each time; a k-winner-take-all row at k = 64 of 256 took 0.9x the time). v: 1-D
    float32 or float64, C-contiguous, NaN-free in v[:n], with FEW readable entries (whole
    vectors are read). Returns a scalar of v's dtype.
    """
    if not (_is_float_vector_array(v) and isinstance(n, types.Integer)
            and isinstance(m, types.Integer)):
        return None
    sig = v.dtype(v, n, m)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        data = context.make_array(v)(context, builder, args[0]).data
        count = context.cast(builder, args[1], signature.args[1], types.int64)
        need = context.cast(builder, args[2], signature.args[2], types.int64)
        element = data.type.pointee
        vec = ir.VectorType(element, LANES)
        held = _hold_few(context, builder, data, count)
        best = cgutils.alloca_once_value(builder, ir.Constant(element, float("-inf")))
        with cgutils.for_range(builder, count) as loop:
            x = builder.load(builder.gep(data, [loop.index]))
            probe = _splat(builder, x, vec)
            rank = ir.Constant(i64, 0)
            for values, _ in held:
                at_least = builder.fcmp_ordered(">=", values, probe)
                rank = builder.add(rank, builder.zext(_popcount(builder, at_least), i64))
            current = builder.load(best)
            better = builder.and_(builder.icmp_signed(">=", rank, need),
                                  builder.fcmp_ordered(">", x, current))
            builder.store(builder.select(better, x, current), best)
        return builder.load(best)

    return sig, codegen


@intrinsic
def top_of_few(typingctx, v, n, k, out):
    """The indices of the k largest of the few values v[:n] into out[:k], largest first,
    equal values in increasing index (the order of a stable descending sort), 1 <= k <= n
    <= FEW (not checked).

    Held in two vector registers like :func:`kth_largest_of_few`: the rank of each value is
    the number of values greater, plus the number equal at a lower index (two comparisons
    and two population counts per register), and index i goes to out[rank], or to the spare
    slot out[k] when rank >= k: no branch. v: 1-D float32 or float64, C-contiguous,
    NaN-free in v[:n], with FEW readable entries; out: 1-D int64, C-contiguous, k + 1
    entries or more (out[k] is overwritten).
    """
    if not (_is_float_vector_array(v) and isinstance(n, types.Integer)
            and isinstance(k, types.Integer) and isinstance(out, types.Array)
            and out.ndim == 1 and out.layout == "C" and out.dtype == types.int64):
        return None
    sig = types.void(v, n, k, out)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        data = context.make_array(v)(context, builder, args[0]).data
        count = context.cast(builder, args[1], signature.args[1], types.int64)
        top = context.cast(builder, args[2], signature.args[2], types.int64)
        target = context.make_array(out)(context, builder, args[3]).data
        vec = ir.VectorType(data.type.pointee, LANES)
        held = _hold_few(context, builder, data, count)
        with cgutils.for_range(builder, count) as loop:
            i = loop.index
            probe = _splat(builder, builder.load(builder.gep(data, [i])), vec)
            below = _splat(builder, i, ir.VectorType(i64, LANES))
            rank = ir.Constant(i64, 0)
            for values, lanes in held:
                greater = builder.fcmp_ordered(">", values, probe)
                tied_before = builder.and_(builder.fcmp_ordered("==", values, probe),
                                           builder.icmp_signed("<", lanes, below))
                for mask in (greater, tied_before):
                    rank = builder.add(rank, builder.zext(_popcount(builder, mask), i64))
            slot = builder.select(builder.icmp_signed("<", rank, top), rank, top)
            builder.store(i, builder.gep(target, [slot]))
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def min_max(typingctx, v, n):
    """(min, max) of the non-NaN entries of v[:n], as a tuple of v's dtype; (+inf, -inf) if
    there are none. A vector loop of two selects per LANES entries and one horizontal
    reduction at the end (a scalar min/max is a dependency chain of 4 cycles per entry that
    LLVM does not vectorise, because of NaN). v: as for :func:`count_in_range`."""
    if not (_is_float_vector_array(v) and isinstance(n, types.Integer)):
        return None
    sig = types.UniTuple(v.dtype, 2)(v, n)

    def codegen(context, builder, signature, args):
        element = context.get_value_type(v.dtype)
        vec = ir.VectorType(element, LANES)
        count = context.cast(builder, args[1], signature.args[1], types.int64)
        inf = ir.Constant(element, float("inf"))
        lows = cgutils.alloca_once_value(builder, _splat(builder, inf, vec))
        highs = cgutils.alloca_once_value(
            builder, _splat(builder, ir.Constant(element, -float("inf")), vec))

        def visit(i, values, keep):
            low, high = builder.load(lows), builder.load(highs)
            builder.store(builder.select(
                builder.and_(keep, builder.fcmp_ordered("<", values, low)), values, low), lows)
            builder.store(builder.select(
                builder.and_(keep, builder.fcmp_ordered(">", values, high)), values, high), highs)

        _scan_chunks(context, builder, v, args[0], count, builder.fneg(inf), None, visit)
        out = []
        for name, acc in (("fmin", lows), ("fmax", highs)):
            reduce = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(element, [vec]),
                f"llvm.vector.reduce.{name}.v{LANES}{'f32' if v.dtype == types.float32 else 'f64'}")
            out.append(builder.call(reduce, [builder.load(acc)]))
        return context.make_tuple(builder, signature.return_type, out)

    return sig, codegen


@intrinsic
def max_below(typingctx, v, n, hi):
    """The largest entry of v[:n] below hi (-inf if there is none; NaN entries are skipped):
    one vector pass of a comparison and a select per LANES entries, one horizontal
    reduction at the end (the (k+1)-th largest score of a row given its k-th, without
    compressing the values below it first). v: as for :func:`count_in_range`; hi: a float.
    Returns a scalar of v's dtype."""
    if not (_is_float_vector_array(v) and isinstance(n, types.Integer)
            and isinstance(hi, types.Float)):
        return None
    sig = v.dtype(v, n, hi)

    def codegen(context, builder, signature, args):
        element = context.get_value_type(v.dtype)
        vec = ir.VectorType(element, LANES)
        count = context.cast(builder, args[1], signature.args[1], types.int64)
        high = context.cast(builder, args[2], signature.args[2], v.dtype)
        minus_inf = ir.Constant(element, -float("inf"))
        best = cgutils.alloca_once_value(builder, _splat(builder, minus_inf, vec))

        def visit(i, values, keep):
            current = builder.load(best)
            builder.store(builder.select(
                builder.and_(keep, builder.fcmp_ordered(">", values, current)), values, current),
                best)

        _scan_chunks(context, builder, v, args[0], count, minus_inf, high, visit)
        reduce = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(element, [vec]),
            f"llvm.vector.reduce.fmax.v{LANES}{'f32' if v.dtype == types.float32 else 'f64'}")
        return builder.call(reduce, [builder.load(best)])

    return sig, codegen


def _is_padded_matrix(a):
    return (isinstance(a, types.Array) and a.ndim == 2 and a.layout == "C"
            and a.dtype in (types.float32, types.float64))


def _row_pointer(context, builder, array_type, array, row):
    """IR: (pointer to array[row, 0] as a LANES-vector pointer, row length as intp)."""
    arr = context.make_array(array_type)(context, builder, array)
    width = cgutils.unpack_tuple(builder, arr.shape, 2)[1]
    vec = ir.VectorType(context.get_data_type(array_type.dtype), LANES)
    return builder.gep(arr.data, [builder.mul(row, width)]), width, vec


def _row_chunks(context, builder, width, body):
    """IR: call ``body(offset)`` for offset = 0, LANES, … < width (width a multiple of LANES)."""
    intp = width.type
    with cgutils.for_range_slice(builder, ir.Constant(intp, 0), width,
                                 ir.Constant(intp, LANES)) as (offset, _):
        body(offset)


@intrinsic
def row_axpy(typingctx, dst, j, src, i, scale):
    """dst[j, :] += scale · src[i, :], in LANES-wide vector operations.

    For row updates too short for LLVM's loop vectoriser to pay off and unrolled scalar by it
    (the per-winner weight gradients of ``routing.layers._unit_kernel``). dst and src: 2-D
    C-contiguous arrays of one float dtype whose rows have the same length, a multiple of
    LANES (pad with zeros; not checked). j, i: row indices (not checked); scale: a float.
    """
    if not (_is_padded_matrix(dst) and _is_padded_matrix(src) and dst.dtype == src.dtype
            and isinstance(j, types.Integer) and isinstance(i, types.Integer)
            and isinstance(scale, types.Float)):
        return None
    sig = types.void(dst, j, src, i, scale)

    def codegen(context, builder, signature, args):
        row_j = context.cast(builder, args[1], signature.args[1], types.intp)
        row_i = context.cast(builder, args[3], signature.args[3], types.intp)
        d_ptr, width, vec = _row_pointer(context, builder, dst, args[0], row_j)
        s_ptr, _, _ = _row_pointer(context, builder, src, args[2], row_i)
        s = _splat(builder, context.cast(builder, args[4], signature.args[4], dst.dtype), vec)
        fmuladd = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(vec, [vec, vec, vec]),
            f"llvm.fmuladd.v{LANES}{'f32' if dst.dtype == types.float32 else 'f64'}")
        align = context.get_abi_sizeof(context.get_data_type(dst.dtype))

        def body(offset):
            dp = builder.bitcast(builder.gep(d_ptr, [offset]), vec.as_pointer())
            sv = builder.load(builder.bitcast(builder.gep(s_ptr, [offset]), vec.as_pointer()),
                              align=align)
            builder.store(builder.call(fmuladd, [s, sv, builder.load(dp, align=align)]), dp,
                          align=align)

        _row_chunks(context, builder, width, body)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def row_dot(typingctx, a, j, b, i):
    """Σ_c a[j, c] · b[i, c] in LANES-wide vector operations (one horizontal sum at the end,
    so the order of the sum differs from a sequential one). Arguments as for
    :func:`row_axpy`; returns a scalar of the arrays' dtype."""
    if not (_is_padded_matrix(a) and _is_padded_matrix(b) and a.dtype == b.dtype
            and isinstance(j, types.Integer) and isinstance(i, types.Integer)):
        return None
    sig = a.dtype(a, j, b, i)

    def codegen(context, builder, signature, args):
        row_j = context.cast(builder, args[1], signature.args[1], types.intp)
        row_i = context.cast(builder, args[3], signature.args[3], types.intp)
        a_ptr, width, vec = _row_pointer(context, builder, a, args[0], row_j)
        b_ptr, _, _ = _row_pointer(context, builder, b, args[2], row_i)
        suffix = f"v{LANES}{'f32' if a.dtype == types.float32 else 'f64'}"
        fmuladd = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(vec, [vec, vec, vec]), f"llvm.fmuladd.{suffix}")
        align = context.get_abi_sizeof(context.get_data_type(a.dtype))
        acc = cgutils.alloca_once_value(builder, ir.Constant(vec, [0.0] * LANES))

        def body(offset):
            av = builder.load(builder.bitcast(builder.gep(a_ptr, [offset]), vec.as_pointer()),
                              align=align)
            bv = builder.load(builder.bitcast(builder.gep(b_ptr, [offset]), vec.as_pointer()),
                              align=align)
            builder.store(builder.call(fmuladd, [av, bv, builder.load(acc)]), acc)

        _row_chunks(context, builder, width, body)
        element = vec.element
        reduce = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(element, [element, vec]),
            f"llvm.vector.reduce.fadd.{suffix}")
        return builder.call(reduce, [ir.Constant(element, 0.0), builder.load(acc)],
                            fastmath=("reassoc",))

    return sig, codegen
