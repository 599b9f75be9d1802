"""Same inputs, same bits: the reassociated (vectorised) sums of the router kernels must not
depend on where the allocator put their arrays.

A loop that both stores to an array and accumulates a reassociated sum is vectorised by LLVM
behind a runtime check that the stored array does not start within a few vectors after an
array the loop reads; when it does, the loop runs serially and the sum is taken in another
order. A COMET training step then gave outputs differing by an ulp from one call to the next
(rows 7 mod 8, whose scratch row sat just before the kernel's next allocation), and the
``routers`` sweep's results.csv differed between two runs of the same seeds. The kernels now
keep every such sum in a loop of its own (``routing.layers._expert_kernel._REASSOC``). The
first test places the arrays next to each other on purpose (the failure seen in COMET); the
second checks the compiled code of every reassociated kernel for the pattern (it found it in
the expert bank's backward and three loops of the PKM kernels too).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from numba import njit

from routing import _projection, _select
from routing.layers import _expert_kernel, _pkm_kernel, _unit_kernel

DTYPES = (np.float32, np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_unit_row_is_bitwise_independent_of_its_scratch_placement(dtype):
    # the scratch ``pre`` placed 0..8 elements after each input, in one buffer: the case that
    # made LLVM's alias check fail and the sum run serially (279 of these differed before)
    rng = np.random.default_rng(1)
    for n in [*range(1, 80), 200, 256]:
        inputs = [rng.standard_normal(n).astype(dtype) for _ in range(4)]  # scores, v, b, u0
        t = dtype(np.sort(inputs[1])[-max(1, n // 4)])
        offset = dtype(0.1)

        def row(scores, v, bias, u0, pre):
            return _unit_kernel._unit_row_masked(scores, v, t, n, bias, offset, u0, pre)

        apart = row(*inputs, np.empty(n + 16, dtype))
        for which in range(4):
            for gap in (0, 1, 3, 8):
                buffer = np.empty(2 * n + gap + 16, dtype)
                buffer[:n] = inputs[which]
                args = list(inputs)
                args[which] = buffer[:n]
                assert row(*args, buffer[n + gap:]) == apart, (n, which, gap)


def _vector_loops_summing_beside_stores(llvm_ir: str) -> tuple[int, list[str]]:
    """(vectorised loop bodies that carry a floating-point vector accumulator, those of them
    that also store to memory), from a function's optimised LLVM IR."""
    blocks, name = {}, None
    for line in llvm_ir.splitlines():
        label = re.match(r"^([\w.\-]+):", line)
        if label:
            name = label.group(1)
            blocks[name] = []
        elif name is not None:
            blocks[name].append(line)
    summing, bad = 0, []
    for name, lines in blocks.items():
        if "vector.body" not in name:
            continue
        accumulates = any(re.search(r"= phi [a-z ]*<\d+ x (float|double)>", s) for s in lines)
        stores = any(re.match(r"\s*store ", s) for s in lines)
        summing += accumulates
        if accumulates and stores:
            bad.append(name)
    return summing, bad


def _exercise_router_kernels():
    """Run every router kernel once in float32 and float64 (so each reassociated kernel has
    its signatures), through the layers' public forward and backward."""
    from routing.layers import (COMET, PKM, SDMLP, COMETConfig, PKMConfig, SDMLPConfig,
                                SigmaMoE, SigmaMoEConfig, TopKMoE, TopKMoEConfig)

    for dtype in (torch.float32, torch.float64):
        x = torch.rand(64, 8, dtype=dtype, generator=torch.Generator().manual_seed(0)) * 2 - 1
        layers = [COMET(COMETConfig(d_in=8, widths=(32,), d_out=2, p_k=0.25)),
                  SDMLP(SDMLPConfig(d_in=8, d_out=2, n_neurons=32, k_target=8)),
                  SigmaMoE(SigmaMoEConfig(d_in=8, d_out=2, n_experts=8, expert_size=4, k=2)),
                  TopKMoE(TopKMoEConfig(d_in=8, d_out=2, n_experts=8, expert_size=4, k=2))]
        layers += [PKM(PKMConfig(d_in=8, d_out=d_out, n_keys=8, k=k, activation=act,
                                 project_query=True, d_key=8))
                   for d_out in (1, 2) for k in (4, 16) for act in ("relu", "softmax")]
        for layer in layers:
            layer.to(dtype).train()
            y, aux = layer(x)
            loss = (y ** 2).mean() + sum(aux.values()) if aux else (y ** 2).mean()
            loss.backward()


@pytest.mark.slow
def test_no_reassociated_kernel_sums_in_a_loop_that_stores():
    _exercise_router_kernels()
    checked = 0
    for module in (_unit_kernel, _expert_kernel, _pkm_kernel, _select, _projection):
        for name, kernel in vars(module).items():
            options = getattr(kernel, "targetoptions", None)
            if not (options and options.get("fastmath") and kernel.signatures):
                continue
            # a fresh, uncached compilation: cached code cannot be inspected
            fresh = njit(fastmath=options["fastmath"])(kernel.py_func)
            for signature in kernel.signatures:
                fresh.compile(signature)
                summing, bad = _vector_loops_summing_beside_stores(
                    fresh.inspect_llvm(signature))
                assert not bad, f"{module.__name__}.{name}{signature}: {bad}"
                checked += summing
    # the pattern is looked for where it can occur: the kernels do have vectorised sums
    assert checked >= 10


def test_the_masked_unit_row_has_no_reassociated_sum_beside_a_store():
    """The fast tier's case of ``test_no_reassociated_kernel_sums_in_a_loop_that_stores``
    (marked slow: it compiles every reassociated kernel anew): the kernel whose scratch stores
    once made LLVM run its sum serially, compiled anew in both dtypes and inspected."""
    kernel = _unit_kernel._unit_row_masked
    fresh = njit(fastmath=kernel.targetoptions["fastmath"])(kernel.py_func)
    summing = 0
    for dtype in DTYPES:
        n = 64
        scores, v, bias, u0 = (np.linspace(-1, 1, n).astype(dtype) for _ in range(4))
        fresh(scores, v, dtype(0.5), n, bias, dtype(0.1), u0, np.empty(n + 16, dtype))
    for signature in fresh.signatures:
        found, bad = _vector_loops_summing_beside_stores(fresh.inspect_llvm(signature))
        assert not bad, f"_unit_row_masked{signature}: {bad}"
        summing += found
    assert len(fresh.signatures) == 2 and summing >= 2  # a vectorised sum in each dtype
