#!/usr/bin/env python3
"""Derives the polynomial coefficients of the float32 exp and exact GELU in
src/kernels/elementwise_math.h, and prints each fit's error.

Needs mpmath (Debian: python3-mpmath). Not part of the build: run it by hand
when changing those approximations, and paste its output into the header.

  exp(r) on |r| <= ln2/2: a degree-6 polynomial;
  S(t) = Phi(-a) exp(a^2/2) / t with t = 1/(1 + 0.3 a), on a in [0, 13.5]:
  a degree-9 polynomial in t (Phi(-a) = t S(t) exp(-a^2/2)).

Both are Chebyshev least-squares fits (mpmath.chebyfit), within a small factor
of the minimax error. The relative error of S is checked with its coefficients
rounded to float32, as the kernel evaluates it.
"""
import struct

import mpmath as mp

mp.mp.dps = 30

K = mp.mpf("0.3")
A_MAX = mp.mpf("13.5")  # beyond, Phi(-a) is below float32's normal range


def to_f32(value):
    return mp.mpf(struct.unpack("f", struct.pack("f", float(value)))[0])


def s_of_t(t):
    a = (1 / t - 1) / K
    return mp.ncdf(-a) * mp.exp(a * a / 2) / t


def main():
    half_ln2 = mp.log(2) / 2
    coeffs, error = mp.chebyfit(mp.exp, [-half_ln2, half_ln2], 7, error=True)
    print(f"exp: degree 6, max abs error {mp.nstr(error, 3)}")
    print("  " + ", ".join(mp.nstr(c, 12) for c in coeffs))

    t_min = 1 / (1 + K * A_MAX)
    coeffs, error = mp.chebyfit(s_of_t, [t_min, 1], 10, error=True)
    rounded = [to_f32(c) for c in coeffs]
    worst = max(abs(mp.polyval(rounded, t) / s_of_t(t) - 1)
                for t in mp.linspace(t_min, 1, 4001))
    print(f"S(t): degree 9, max abs error {mp.nstr(error, 3)}, "
          f"max rel error with float32 coefficients {mp.nstr(worst, 3)}")
    print("  " + ", ".join(mp.nstr(c, 10) for c in coeffs))


if __name__ == "__main__":
    main()
