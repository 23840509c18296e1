"""Dense Wigner D (tests-only construction) and the directly built band."""

import math

import pytest
import torch

from edgeframe_ref.band import (CHART_THRESHOLD, band_blocks, band_layout, band_size, edge_frame,
                                frame_matrix, wigner_band)
from edgeframe_ref.sph import dense_wigner_d, real_sph_harm

TOL_D = 1e-12        # absolute, float64: D entries are O(1) and built from exact identities
TOL_BAND = 1e-12     # absolute, float64: band vs dense D, both exact up to rounding


def random_rotations(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, r = torch.linalg.qr(torch.randn(n, 3, 3, dtype=torch.float64, generator=g))
    q = q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1))[:, None, :]
    det = torch.det(q)
    q[:, :, 0] *= det[:, None]
    return q


def special_edges():
    """Axes, poles, near-poles, and both sides of the chart switch |n_y| = 0.9."""
    s = math.sqrt(1 - 0.81)
    below = math.nextafter(0.9, 0.0)
    above = math.nextafter(0.9, 1.0)
    v = [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1],
         [2.5, 0, 0], [0, 0, -3.1],
         [1e-9, 1, -1e-9], [-1e-12, -1, 1e-12], [1e-9, 1e-9, 1], [-1e-9, 1e-9, -1],
         [s, 0.9, 0], [0, -0.9, s], [s / math.sqrt(2), 0.9, s / math.sqrt(2)],
         [math.sqrt(1 - below ** 2), below, 0], [math.sqrt(1 - above ** 2), above, 0],
         [0, -below, math.sqrt(1 - below ** 2)], [0, -above, math.sqrt(1 - above ** 2)],
         [1, 1, 1], [-1, 2, 0.5]]
    return torch.tensor(v, dtype=torch.float64)


def random_edges(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 3, dtype=torch.float64, generator=g) * 2.0


# ------------------------------------------------------------------ dense D
@pytest.mark.parametrize("lmax", [1, 2, 3, 4, 6])
def test_dense_d_orthogonal(lmax):
    for l, d in enumerate(dense_wigner_d(random_rotations(8), lmax)):
        eye = torch.eye(2 * l + 1, dtype=torch.float64).expand_as(d)
        assert torch.allclose(d @ d.transpose(-1, -2), eye, atol=TOL_D, rtol=0)


@pytest.mark.parametrize("lmax", [1, 2, 3, 4, 6])
def test_dense_d_homomorphism(lmax):
    r1, r2 = random_rotations(6, 1), random_rotations(6, 2)
    d1, d2, d12 = (dense_wigner_d(r, lmax) for r in (r1, r2, r1 @ r2))
    for l in range(lmax + 1):
        assert torch.allclose(d12[l], d1[l] @ d2[l], atol=TOL_D, rtol=0)


@pytest.mark.parametrize("lmax", [1, 2, 3, 4, 6])
def test_dense_d_rotates_harmonics(lmax):
    rot = random_rotations(6, 3)
    pts = random_edges(10, 4)
    y = real_sph_harm(pts, lmax)                                    # [K, D]
    yr = real_sph_harm(torch.einsum("nab,kb->nka", rot, pts), lmax)  # [6, K, D] = Y(R r)
    for l, d in enumerate(dense_wigner_d(rot, lmax)):
        s = slice(l * l, (l + 1) ** 2)
        assert torch.allclose(yr[..., s], torch.einsum("nab,kb->nka", d, y[:, s]),
                              atol=TOL_D, rtol=0)


def test_dense_d_identity():
    for l, d in enumerate(dense_wigner_d(torch.eye(3, dtype=torch.float64)[None], 4)):
        assert torch.allclose(d[0], torch.eye(2 * l + 1, dtype=torch.float64), atol=TOL_D)


# ------------------------------------------------------------------ frame
def test_frame_orthonormal_right_handed():
    vec = torch.cat([special_edges(), random_edges(200)])
    rot = frame_matrix(vec)
    eye = torch.eye(3, dtype=torch.float64).expand_as(rot)
    assert torch.allclose(rot @ rot.transpose(1, 2), eye, atol=1e-14)
    assert torch.allclose(torch.det(rot), torch.ones(len(vec), dtype=torch.float64), atol=1e-14)
    n = vec / vec.norm(dim=-1, keepdim=True)
    z = torch.tensor([0, 0, 1.0], dtype=torch.float64).expand_as(n)
    assert torch.allclose(torch.einsum("eab,eb->ea", rot, n), z, atol=1e-14)


def test_chart_rule():
    vec = special_edges()
    e1, _, n, chart2 = edge_frame(vec)
    assert torch.equal(chart2, n[:, 1].abs() > CHART_THRESHOLD)
    # exactly on the switch the rule says chart 1 (helper y): e1 lies in the plane of y and n
    on = n[:, 1].abs() == 0.9
    assert on.sum() >= 2, "special_edges must contain edges with |n_y| exactly 0.9"
    assert not chart2[on].any()
    # both sides of the switch are present
    assert (n[:, 1].abs() > 0.9).any() and ((n[:, 1].abs() < 0.9) & (n[:, 1].abs() > 0.89)).any()
    # chart 1: e1 has no component along n x y; chart 2: e1 has none along n x x
    helper = torch.zeros_like(n)
    helper[chart2, 0] = 1.0
    helper[~chart2, 1] = 1.0
    normal = torch.linalg.cross(n, helper, dim=-1)
    assert torch.allclose((e1 * normal).sum(-1), torch.zeros(len(n), dtype=torch.float64),
                          atol=1e-14)
    # e1 leans towards the helper axis
    assert ((e1 * helper).sum(-1) > 0.43).all()


def test_charts_differ_by_a_roll_only():
    # on either side of the switch the two frames of nearly the same n differ by a rotation
    # about n: R2 R1^T is a rotation about z
    y = 0.9
    vec = torch.tensor([[math.sqrt(1 - y * y), y, 0.0]], dtype=torch.float64)
    e1, e2, n, _ = edge_frame(vec)
    helper_x = torch.tensor([[1.0, 0, 0]], dtype=torch.float64)
    f1 = helper_x - (helper_x * n).sum(-1, keepdim=True) * n
    f1 = f1 / f1.norm(dim=-1, keepdim=True)
    f2 = torch.linalg.cross(n, f1, dim=-1)
    r1 = torch.stack([e1, e2, n], dim=1)
    r2 = torch.stack([f1, f2, n], dim=1)
    rel = r2 @ r1.transpose(1, 2)
    assert torch.allclose(rel[0, 2], torch.tensor([0, 0, 1.0], dtype=torch.float64), atol=1e-14)


# ------------------------------------------------------------------ band
def test_band_size():
    for lmax in range(1, 7):
        d = (lmax + 1) ** 2
        assert band_size(lmax, 1) == 3 * d - 2
        assert band_size(lmax, 2) == sum((2 * min(l, 2) + 1) * (2 * l + 1)
                                         for l in range(lmax + 1))
    assert band_size(3, 1) == 46
    layout = band_layout(3, 2)
    assert [(l, k) for l, k, *_ in layout] == [(0, 0), (1, 1), (2, 2), (3, 2)]


@pytest.mark.parametrize("lmax", [1, 2, 3, 4])
@pytest.mark.parametrize("mmax", [1, 2])
def test_band_equals_dense_rows(lmax, mmax):
    vec = torch.cat([special_edges(), random_edges(100, lmax + 10 * mmax)])
    roll = torch.rand(len(vec), dtype=torch.float64) * 2 * math.pi
    for r in (None, roll):
        blocks = band_blocks(wigner_band(vec, lmax, mmax, r), lmax, mmax)
        dense = dense_wigner_d(frame_matrix(vec, r), lmax)
        for l in range(lmax + 1):
            k = min(l, mmax)
            assert blocks[l].shape == (len(vec), 2 * k + 1, 2 * l + 1)
            err = (blocks[l] - dense[l][:, l - k:l + k + 1, :]).abs().max()
            assert err < TOL_BAND, f"l={l} mmax={mmax} max error {err:.3e}"


@pytest.mark.parametrize("lmax", [1, 2, 3, 4])
def test_band_m0_row_is_harmonic(lmax):
    vec = torch.cat([special_edges(), random_edges(50, 7)])
    blocks = band_blocks(wigner_band(vec, lmax, 1), lmax, 1)
    y = real_sph_harm(vec, lmax)
    for l in range(lmax + 1):
        k = min(l, 1)
        want = math.sqrt(4 * math.pi / (2 * l + 1)) * y[:, l * l:(l + 1) ** 2]
        assert torch.allclose(blocks[l][:, k], want, atol=TOL_BAND, rtol=0)


@pytest.mark.parametrize("mmax", [1, 2])
def test_band_gradient(mmax):
    # d(band)/d(edge vector), the derivative the C++ backward needs, by gradcheck (float64).
    # Axes and poles included; not the chart switch, where the band jumps by a roll.
    vec = torch.cat([special_edges()[[0, 2, 4, 5, 8, 10]], random_edges(4, 9)])
    vec.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda v: wigner_band(v, 3, mmax), (vec,),
                                    eps=1e-6, atol=1e-7, rtol=1e-6, fast_mode=True)


def test_band_float32():
    vec = random_edges(100, 5)
    b64 = wigner_band(vec, 4, 2)
    b32 = wigner_band(vec.float(), 4, 2)
    assert b32.dtype == torch.float32
    assert (b32.double() - b64).abs().max() < 2e-6   # a few float32 ulps of O(1) entries
