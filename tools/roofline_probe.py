#!/usr/bin/env python3
"""The card's copy bandwidth and GEMM rates, measured in the same call as a profile (issue #7
asks for kernels' bandwidth against the copy bandwidth of the same run). Prints one line each:
device-to-device copy (bytes read + written per second) and a 300000x512x512 product in fp32,
tf32 and bf16 (2 m n k FLOP). Median of 10 after 3 warm-ups, CUDA events."""
import torch


def timed(fn, reps=10, warmup=3):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    return sorted(times)[len(times) // 2]


def main():
    src = torch.empty(2 ** 30, dtype=torch.float32, device="cuda")    # 4 GiB
    dst = torch.empty_like(src)
    t = timed(lambda: dst.copy_(src))
    print(f"roofline: copy {2 * src.numel() * 4 / t / 1e12:.2f} TB/s (read + write, 4 GiB)")
    del src, dst
    m, n, k = 300000, 512, 512
    for name, dtype, tf32 in (("fp32", torch.float32, False), ("tf32", torch.float32, True), ("bf16", torch.bfloat16, False)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        b = torch.randn(k, n, device="cuda", dtype=dtype)
        t = timed(lambda: a @ b)
        print(f"roofline: GEMM {name} {2 * m * n * k / t / 1e12:.1f} TFLOP/s ({m}x{n}x{k})")
    torch.backends.cuda.matmul.allow_tf32 = False


if __name__ == "__main__":
    main()
