"""The sparse top layer out[n] = Σ_i θ[cols[n, i]] · vals[n, i] and its gradient in θ.

Every model's trainable part is this product (``RegressionModel.top_layer``). On CPU two
Numba kernels do it in one pass each, without the (N, a) temporaries of the torch
expression (a gather, a product and a sum forward; a product and an ``index_add_``
backward), which dominate a DSM training step on cached features; elsewhere (CUDA, other
dtypes) the torch expression runs. Reference: :func:`sparse_dot_reference`.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

__all__ = ["fused_sparse_dot", "row_dot", "sparse_dot", "sparse_dot_reference"]


@njit(cache=True, inline="always")
def row_dot(theta, c, v, n, zero):
    """Σ_i θ[c[i]]·v[i] for i < n over one row (c: (>= n,) integer, v: (>= n,)), accumulated
    in v's dtype.

    ``zero`` is 0 of v's dtype: the four accumulators are typed like v, so no term is widened.
    Four accumulators break the chain of dependent additions (gathers of θ measured slower
    than scalar loads here); the sum is therefore taken in a different order than the
    reference's, equal to rounding. Shared by ``sparse_dot`` and the DSM kernel's fused
    forward, so both give the same bits. Inlined where it is called (``inline="always"``): a
    call per row would take and release a reference to each array argument, an atomic
    operation each, which cost more than the sum for a few hundred terms.
    """
    a0, a1, a2, a3 = zero, zero, zero, zero
    i = 0
    while i + 4 <= n:
        a0 += theta[c[i]] * v[i]
        a1 += theta[c[i + 1]] * v[i + 1]
        a2 += theta[c[i + 2]] * v[i + 2]
        a3 += theta[c[i + 3]] * v[i + 3]
        i += 4
    while i < n:
        a0 += theta[c[i]] * v[i]
        i += 1
    return (a0 + a1) + (a2 + a3)


@njit(cache=True)
def _forward(theta, cols, vals, out, zero):
    """out[r] = Σ_i θ[cols[r, i]]·vals[r, i] (:func:`row_dot` per row)."""
    for r in range(cols.shape[0]):
        # 1-D row views: 2-D indexing measured slower (strided addressing)
        out[r] = row_dot(theta, cols[r], vals[r], cols.shape[1], zero)


@njit(cache=True)
def _backward(grad_out, cols, vals, grad):
    for r in range(cols.shape[0]):
        g = grad_out[r]
        c, v = cols[r], vals[r]
        for i in range(c.shape[0]):
            grad[c[i]] += g * v[i]


def sparse_dot_reference(theta, cols, vals):
    """Plain torch: (θ[cols] · vals).sum(1), differentiable by autograd."""
    return (theta[cols] * vals).sum(dim=1)


def _numba_ok(*tensors) -> bool:
    return all(t.device.type == "cpu" for t in tensors) and \
        tensors[0].dtype in (torch.float32, torch.float64) and tensors[0].dtype == tensors[2].dtype


def _theta_grad(grad_out, cols, vals, shape):
    """dL/dθ of out[n] = Σ_i θ[cols[n, i]]·vals[n, i], given dL/dout (N,), in θ's ``shape``
    (n_coef elements, flattened in C order)."""
    if _numba_ok(grad_out, cols, vals):
        grad = np.zeros(shape.numel(), vals.numpy().dtype)
        _backward(grad_out.contiguous().numpy(), cols.contiguous().numpy(),
                  vals.contiguous().numpy(), grad)
        return torch.from_numpy(grad).view(shape)
    grad = torch.zeros(shape.numel(), dtype=vals.dtype, device=vals.device)
    grad.index_add_(0, cols.reshape(-1), (grad_out[:, None] * vals).reshape(-1))
    return grad.view(shape)


def _with_bias(out, bias):
    """out + bias in place (out is the product's fresh result; the same bits as ``out + bias``)."""
    return out if bias is None else out.add_(bias.detach())


def _bias_grad(ctx, grad_out):
    """dL/d(bias) for a bias added to every output: the sum of dL/dout, in the bias's shape."""
    return grad_out.sum().reshape(ctx.bias_shape) if ctx.needs_input_grad[1] else None


class _SparseDot(torch.autograd.Function):
    """Gradient for θ and the bias only: the features are frozen (vals does not require a
    gradient). θ comes as its parameter, of any shape, and the bias is added inside: a flat
    view of the parameter and a separate addition would each add an autograd node (together
    measured 10-15 % of a DSM training step on CPU)."""

    @staticmethod
    def forward(ctx, theta, bias, cols, vals):
        ctx.save_for_backward(cols, vals)
        ctx.theta_shape = theta.shape
        ctx.bias_shape = None if bias is None else bias.shape
        flat = theta.detach().reshape(-1)
        if _numba_ok(flat, cols, vals):
            vals_np = vals.contiguous().numpy()
            out = np.empty(cols.shape[0], vals_np.dtype)
            _forward(flat.contiguous().numpy(), cols.contiguous().numpy(), vals_np, out,
                     vals_np.dtype.type(0))
            return _with_bias(torch.from_numpy(out), bias)
        return _with_bias(sparse_dot_reference(flat, cols, vals), bias)

    @staticmethod
    def backward(ctx, grad_out):
        cols, vals = ctx.saved_tensors
        return (_theta_grad(grad_out, cols, vals, ctx.theta_shape), _bias_grad(ctx, grad_out),
                None, None)


class _FusedSparseDot(torch.autograd.Function):
    """``sparse_dot`` whose features and product come from one call (the DSM kernel)."""

    @staticmethod
    def forward(ctx, theta, bias, compute):
        out, cols, vals = compute(theta.detach().reshape(-1))
        ctx.save_for_backward(cols, vals)
        ctx.theta_shape = theta.shape
        ctx.bias_shape = None if bias is None else bias.shape
        return _with_bias(out, bias)

    @staticmethod
    def backward(ctx, grad_out):
        cols, vals = ctx.saved_tensors
        return (_theta_grad(grad_out, cols, vals, ctx.theta_shape), _bias_grad(ctx, grad_out),
                None)


def fused_sparse_dot(theta: torch.Tensor, compute, bias: torch.Tensor | None = None
                     ) -> torch.Tensor:
    """(N,) = Σ_i θ[cols[:, i]] · vals[:, i] (+ bias), where one call computes the features
    and the sum.

    For a model whose feature kernel can also take the product while each row's features
    are still in cache (the DSM kernel): it saves the pass of ``sparse_dot`` over the
    (N, a) features, which are read again only by the backward. Differentiable in θ and the
    bias.

    Arguments:
        theta: the n_coef coefficients, in any shape (the parameter itself: no view node);
            flattened in C order.
        compute: ``compute(theta_flat_detached) -> (out (N,), cols (N, a) integers (int64,
            int32 or uint16) in [0, n_coef), vals (N, a))``, with out equal to the sum above
            (a fresh tensor: the bias is added to it in place).
        bias: optional scalar (0-d) added to every output, as ``out + bias`` would.

    Returns:
        (N,) tensor of θ's dtype.
    """
    return _FusedSparseDot.apply(theta, bias, compute)


def sparse_dot(theta: torch.Tensor, cols: torch.Tensor, vals: torch.Tensor,
               bias: torch.Tensor | None = None) -> torch.Tensor:
    """(N,) = Σ_i θ[cols[:, i]] · vals[:, i] (+ bias), differentiable in θ and the bias (and
    in vals through autograd when vals requires a gradient, e.g. for dg/dx).

    Arguments:
        theta: the n_coef coefficients, in any shape (flattened in C order: pass the
            parameter itself, no view node enters the graph); its gradient has its shape.
        cols: (N, a) int64 in [0, n_coef) (or uint16/int32 where the CPU kernels run:
            ``Features.narrowed``).
        vals: (N, a).
        bias: optional scalar (0-d) added to every output, as ``out + bias`` would (bit for
            bit).
    """
    if vals.requires_grad or cols.shape[1] == 0:
        out = sparse_dot_reference(theta.reshape(-1), cols, vals)
        return out if bias is None else out + bias
    return _SparseDot.apply(theta, bias, cols, vals)
