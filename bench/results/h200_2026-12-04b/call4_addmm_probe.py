"""H200 call 4: what an SO(2) block-0 GEMM with bias costs when its output is a column range of a
wider row-major tensor, as impl::so2_linear writes it (at::addmm_out into z.narrow(1, 0, cols)),
against the same GEMM without bias, with a contiguous output, and with the bias added by a
separate pass. Shapes: UMA-S at 4096-atom diamond (646 590 edges): so2_1 block 0 [E, 768] x
[768, 640] into z [E, 1408]; so2_2 block 0 [E, 384] x [384, 384] into w [E, 1152]. TF32 on.
Prints the median time of each variant and the CUDA kernels each launches (torch.profiler).

    python3 bench/results/h200_2026-12-04b/call4_addmm_probe.py
"""
import statistics

import torch

torch.backends.cuda.matmul.allow_tf32 = True
E = 646590
dev = "cuda"


def timed(f, reps=20):
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        f()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def kernels(f):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
        f()
        torch.cuda.synchronize()
    names = [e.name for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return [n[:90] for n in names]


for label, k, n, width in (("so2_1 block 0", 768, 640, 1408), ("so2_2 block 0", 384, 384, 1152)):
    x = torch.randn(E, k, device=dev)
    w = torch.randn(n, k, device=dev) / k**0.5
    bias = torch.randn(n, device=dev)
    wide = torch.empty(E, width, device=dev)
    out = wide.narrow(1, 0, n)
    contiguous = torch.empty(E, n, device=dev)
    variants = {
        "addmm_out into the column range (edgeframe today)": lambda: torch.addmm(bias, x, w.t(), out=out),
        "mm_out into the column range, no bias": lambda: torch.mm(x, w.t(), out=out),
        "mm_out into the column range, then add_ of the bias": lambda: torch.mm(x, w.t(), out=out).add_(bias),
        "addmm_out contiguous (cuBLASLt bias epilogue)": lambda: torch.addmm(bias, x, w.t(), out=contiguous),
        "mm_out contiguous, no bias": lambda: torch.mm(x, w.t(), out=contiguous),
    }
    ref = torch.addmm(bias, x, w.t())
    print(f"== {label}: [{E}, {k}] x [{k}, {n}] into [{E}, {width}] columns 0..{n - 1}", flush=True)
    for name, f in variants.items():
        ms = timed(f)
        f()
        got = out if "column range" in name else contiguous
        err = (got - ref).abs().max().item() if "no bias" not in name else float("nan")
        print(f"   {ms:7.3f} ms  {name}  (max |diff| to addmm {err:.1e})", flush=True)
        for kname in kernels(f):
            print(f"             kernel: {kname}", flush=True)
