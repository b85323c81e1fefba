"""Frequency transforms shared by the frequency detectors (F3Net, SPSL, iFWA).

- :func:`phase_spectrum`: the phase-only reconstruction ``IDFT(exp(i * angle(DFT(x))))`` used by
  SPSL (Liu et al., CVPR 2021, Sec. 3.2: the phase spectrum keeps the up-sampling artefacts and
  the edges of an image, Oppenheim & Lim 1981) and by iFWA (DeepfakeBench, Appendix, Table 7).
- :func:`dct_matrix`, :func:`dct2d`, :func:`idct2d`: the orthonormal DCT-II basis and the
  separable 2-D transform ``D x D^T`` of F3Net (Qian et al., ECCV 2020, Sec. 3.1, Eq. 1).
- :func:`band_mask`: the binary diagonal band ``start <= i + j < end`` of a DCT spectrum that
  F3Net's FAD and LFS filters are built from (Sec. 3.1-3.2).
"""

from __future__ import annotations

import math

import torch


def phase_spectrum(image: torch.Tensor, gray: bool = True) -> torch.Tensor:
    """Phase-only reconstruction of ``image`` [..., C, H, W]: amplitude set to 1, inverse DFT.

    With ``gray`` the channels are averaged first and the result has one channel
    ([..., 1, H, W]), as SPSL feeds it as the fourth input channel; otherwise each channel is
    transformed on its own. The 2-D DFT runs over the last two axes only (never over the batch).
    """
    if image.dim() < 3:
        raise ValueError(f"phase_spectrum expects [..., C, H, W], got shape {tuple(image.shape)}")
    if not image.is_floating_point():
        raise TypeError(f"phase_spectrum expects a float tensor, got {image.dtype}")
    x = image.to(torch.promote_types(image.dtype, torch.float32))  # no half FFTs; float64 stays
    if gray:
        x = x.mean(dim=-3, keepdim=True)
    spectrum = torch.fft.fft2(x, dim=(-2, -1))
    unit = torch.polar(torch.ones_like(spectrum.real), torch.angle(spectrum))
    return torch.fft.ifft2(unit, dim=(-2, -1)).real.to(image.dtype)


def dct_matrix(n: int) -> torch.Tensor:
    """Orthonormal DCT-II matrix ``D`` [n, n]: ``D[k, j] = c_k cos((j + 1/2) pi k / n)``."""
    if n < 1:
        raise ValueError(f"DCT size must be >= 1, got {n}")
    k = torch.arange(n, dtype=torch.float64).unsqueeze(1)
    j = torch.arange(n, dtype=torch.float64).unsqueeze(0)
    mat = torch.cos((j + 0.5) * math.pi * k / n) * math.sqrt(2.0 / n)
    mat[0] = math.sqrt(1.0 / n)
    return mat.float()


def dct2d(x: torch.Tensor, mat: torch.Tensor) -> torch.Tensor:
    """2-D DCT ``D x D^T`` over the last two axes (square inputs of the matrix's size)."""
    return mat @ x @ mat.transpose(0, 1)


def idct2d(coeffs: torch.Tensor, mat: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`dct2d`: ``D^T X D``."""
    return mat.transpose(0, 1) @ coeffs @ mat


def band_mask(size: int, start: float, end: float, inclusive: bool = False) -> torch.Tensor:
    """Binary [size, size] mask of the DCT band ``start <= i + j < end`` (low frequencies at 0).

    Half-open, so consecutive bands partition the spectrum; ``inclusive=True`` gives
    ``start <= i + j <= end`` (DeepfakeBench's F3Net ``generate_filter``, whose bands overlap).
    """
    idx = torch.arange(size, dtype=torch.float32)
    diag = idx.unsqueeze(1) + idx.unsqueeze(0)
    upper = diag <= end if inclusive else diag < end
    return ((diag >= start) & upper).float()
