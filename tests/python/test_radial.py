"""Envelope and Bessel basis (doc/model.md step 2)."""

import math

import pytest
import torch

from edgeframe_ref.radial import bessel_rbf, envelope


@pytest.mark.parametrize("p", [3, 5, 6])
def test_envelope_vanishes_to_second_order(p):
    x = torch.tensor([1.0], dtype=torch.float64, requires_grad=True)
    # evaluate the polynomial branch at x -> 1 from below
    xb = torch.tensor([1.0 - 1e-12], dtype=torch.float64, requires_grad=True)
    u = envelope(xb, p)
    (du,) = torch.autograd.grad(u.sum(), xb, create_graph=True)
    (d2u,) = torch.autograd.grad(du.sum(), xb, create_graph=True)
    (d3u,) = torch.autograd.grad(d2u.sum(), xb)
    assert abs(u.item()) < 1e-10 and abs(du.item()) < 1e-9 and abs(d2u.item()) < 1e-6
    # u''' does not vanish: the order really is 2 (u'''(1) = -p(p+1)(p+2))
    assert abs(d3u.item() + p * (p + 1) * (p + 2)) < 1e-3 * p ** 3
    assert envelope(x, p).item() == 0.0
    assert envelope(torch.tensor([0.0], dtype=torch.float64), p).item() == 1.0
    assert envelope(torch.tensor([1.5], dtype=torch.float64), p).item() == 0.0


def test_envelope_derivative_closed_form():
    p = 5
    x = torch.linspace(0.05, 0.95, 19, dtype=torch.float64, requires_grad=True)
    (du,) = torch.autograd.grad(envelope(x, p).sum(), x)
    want = -p * (p + 1) * (p + 2) / 2 * x.detach() ** (p - 1) * (1 - x.detach()) ** 2
    assert torch.allclose(du, want, atol=1e-13)


def test_bessel_rbf_formula():
    r_cut, n_rbf, p = 5.0, 8, 5
    r = torch.tensor([0.7, 1.9, 3.3, 4.99, 5.0, 6.1], dtype=torch.float64)
    rbf, u = bessel_rbf(r, r_cut, n_rbf, p)
    for e, re in enumerate(r.tolist()):
        x = re / r_cut
        ue = 1 - 21 * x ** 5 + 35 * x ** 6 - 15 * x ** 7 if x < 1 else 0.0
        assert abs(u[e].item() - ue) < 1e-13
        for n in range(1, n_rbf + 1):
            want = math.sqrt(2 / r_cut) * math.sin(n * math.pi * re / r_cut) / re * ue
            assert abs(rbf[e, n - 1].item() - want) < 1e-13
    assert (rbf[4:] == 0).all()
