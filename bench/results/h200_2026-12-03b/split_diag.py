"""Which part of a 3xTF32 product loses accuracy on the H200: the same split as
src/engine/gemm.cpp (torch ops), with and without a bias, a column-major second operand and a
column-view output. Prints max |error| / max |product| against fp64 for each."""
import torch

torch.manual_seed(2)
dev = "cuda"
def rnd(*s):
    return torch.randn(*s, device=dev) * torch.exp(2 * torch.randn(*s, device=dev))
def split(x):
    hi = ((x.view(torch.int32) + (1 << 12)) & ~((1 << 13) - 1)).view(torch.float32)
    return hi, x - hi
a, b, bias = rnd(300, 384), rnd(384, 200), rnd(200)
def x3(a, b, bias, out, bias_last=False):
    (ah, al), (bh, bl) = split(a), split(b)
    torch.backends.cuda.matmul.allow_tf32 = True
    if bias is not None and not bias_last:
        torch.addmm(bias, al, bh, out=out)
    else:
        torch.mm(al, bh, out=out)
    out.addmm_(ah, bl)
    out.addmm_(ah, bh)
    if bias is not None and bias_last:
        out.add_(bias)
    torch.backends.cuda.matmul.allow_tf32 = False
    return out
def err(got, bias):
    want = a.double() @ b.double() + (bias.double() if bias is not None else 0)
    return ((got.double() - want).abs().max() / want.abs().max()).item()
torch.backends.cuda.matmul.allow_tf32 = False
print("fp32 plain", err(a @ b, None))
print("fp32 with bias", err(torch.addmm(bias, a, b), bias))
bt = b.t().contiguous().t()
for name, bb, bs, view, last in [("plain", b, None, False, False), ("col-major b", bt, None, False, False),
                                 ("bias", b, bias, False, False), ("bias last", b, bias, False, True),
                                 ("view out", b, None, True, False), ("all three", bt, bias, True, False),
                                 ("all three, bias last", bt, bias, True, True)]:
    wide = torch.zeros(300, 250, device=dev)
    out = wide.narrow(1, 20, 200) if view else torch.empty(300, 200, device=dev)
    print(f"x3 {name}", err(x3(a, bb, bs, out, last), bs))
# the engine's fix: sum the three products in a contiguous tensor, then copy into the view once
wide = torch.zeros(300, 250, device=dev)
view = wide.narrow(1, 20, 200)
view.copy_(x3(a, bt, bias, torch.empty(300, 200, device=dev)))
print("x3 all three, summed contiguous then copied into the view", err(view, bias))
