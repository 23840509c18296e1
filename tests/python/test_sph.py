"""Real spherical harmonics: conventions of doc/model.md (index layout, no Condon-Shortley
phase, orthonormality)."""

import math

import torch

from edgeframe_ref.sph import num_coeffs, real_sph_harm, sphere_quadrature

TOL = 1e-13   # absolute, float64: closed forms and quadrature are exact up to rounding


def random_unit(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(n, 3, dtype=torch.float64, generator=g)
    return v / v.norm(dim=-1, keepdim=True)


def test_l1_is_y_z_x():
    n = random_unit(50)
    y = real_sph_harm(n, 1)
    c = math.sqrt(3 / (4 * math.pi))
    assert torch.allclose(y[:, 1:4], c * n[:, [1, 2, 0]], atol=TOL, rtol=0)
    assert torch.allclose(y[:, 0], torch.full_like(y[:, 0], 1 / math.sqrt(4 * math.pi)), atol=TOL)


def test_l2_closed_forms():
    n = random_unit(50, 1)
    x, y, z = n.unbind(-1)
    c = 0.5 * math.sqrt(15 / math.pi)
    want = torch.stack([c * x * y, c * y * z, 0.25 * math.sqrt(5 / math.pi) * (3 * z * z - 1),
                        c * x * z, 0.5 * c * (x * x - y * y)], dim=-1)
    assert torch.allclose(real_sph_harm(n, 2)[:, 4:9], want, atol=TOL, rtol=0)


def test_no_condon_shortley_phase():
    # Y_l^l(x_hat) > 0 and Y_l^-l at angle pi/(2l) > 0 for every l: no (-1)^m factor.
    y = real_sph_harm(torch.tensor([[1.0, 0.0, 0.0]], dtype=torch.float64), 6)[0]
    for l in range(1, 7):
        assert y[l * l + 2 * l] > 0
        p = math.pi / (2 * l)
        v = torch.tensor([[math.cos(p), math.sin(p), 0.0]], dtype=torch.float64)
        assert real_sph_harm(v, l)[0, l * l] > 0


def test_z_axis_only_m0():
    y = real_sph_harm(torch.tensor([[0.0, 0.0, 2.5]], dtype=torch.float64), 6)[0]
    for l in range(7):
        for m in range(-l, l + 1):
            want = math.sqrt((2 * l + 1) / (4 * math.pi)) if m == 0 else 0.0
            assert abs(y[l * l + l + m] - want) < TOL


def test_orthonormal_up_to_l6():
    lmax = 6
    pts, w = sphere_quadrature(2 * lmax)
    y = real_sph_harm(pts, lmax)
    gram = torch.einsum("ka,kb,k->ab", y, y, w)
    assert torch.allclose(gram, torch.eye(num_coeffs(lmax), dtype=torch.float64), atol=1e-12)
