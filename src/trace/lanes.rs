//! Sixteen `f32` lanes and the operations the packet walks ([`super::packet`]) need, once per
//! instruction set: AVX-512 (one register, lane masks in a mask register), AVX2 (two
//! registers) and plain code. Each operation is one IEEE operation per lane, as the
//! single-ray code writes it (`max` and `min` as SSE's `maxps` and `minps`: the second
//! operand unless the first compares greater or less), so every implementation gives the
//! same bits. The methods are always inlined: the walks are compiled once per instruction
//! set, inside a function that enables it, so the intrinsics inline there.

/// Lanes in a packet.
pub const WIDTH: usize = 16;

/// Sixteen lanes of `f32` and their masks.
pub(crate) trait Lanes: Copy {
    /// A mask of lanes.
    type M: Copy;
    fn splat(x: f32) -> Self;
    fn load(a: &[f32; WIDTH]) -> Self;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    /// `self > o ? self : o` per lane.
    fn max(self, o: Self) -> Self;
    /// `self < o ? self : o` per lane.
    fn min(self, o: Self) -> Self;
    fn abs(self) -> Self;
    /// Ordered comparisons (false where a lane is NaN).
    fn lt(self, o: Self) -> Self::M;
    fn le(self, o: Self) -> Self::M;
    fn gt(self, o: Self) -> Self::M;
    fn ge(self, o: Self) -> Self::M;
    /// `!=` as Rust reads it (true where a lane is NaN).
    fn ne(self, o: Self) -> Self::M;
    /// `m ? a : b` per lane.
    fn select(m: Self::M, a: Self, b: Self) -> Self;
    fn and(a: Self::M, b: Self::M) -> Self::M;
    fn or(a: Self::M, b: Self::M) -> Self::M;
    /// `a & !b`.
    fn and_not(a: Self::M, b: Self::M) -> Self::M;
    fn not(a: Self::M) -> Self::M;
    /// Lanes whose sign bit is set (`-0.0` among them).
    fn sign(self) -> Self::M;
    /// Lane `l` of `m` as bit `l`.
    fn bits(m: Self::M) -> u32;
    /// The mask of the lanes whose bit is set in `bits`.
    fn mask(bits: u32) -> Self::M;
    /// The least and the greatest lane (of lanes that are not NaN).
    fn reduce_min(self) -> f32;
    fn reduce_max(self) -> f32;
}

/// Plain code: one lane at a time.
#[derive(Clone, Copy)]
pub(crate) struct Plain([f32; WIDTH]);

impl Plain {
    #[inline(always)]
    fn map2(self, o: Self, f: impl Fn(f32, f32) -> f32) -> Self {
        Plain(std::array::from_fn(|l| f(self.0[l], o.0[l])))
    }

    #[inline(always)]
    fn test(self, o: Self, f: impl Fn(f32, f32) -> bool) -> u32 {
        (0..WIDTH).fold(0, |m, l| m | u32::from(f(self.0[l], o.0[l])) << l)
    }
}

impl Lanes for Plain {
    type M = u32;
    #[inline(always)]
    fn splat(x: f32) -> Self {
        Plain([x; WIDTH])
    }
    #[inline(always)]
    fn load(a: &[f32; WIDTH]) -> Self {
        Plain(*a)
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self.map2(o, |a, b| a + b)
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        self.map2(o, |a, b| a - b)
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self.map2(o, |a, b| a * b)
    }
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        self.map2(o, |a, b| a / b)
    }
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        self.map2(o, |a, b| if a > b { a } else { b })
    }
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        self.map2(o, |a, b| if a < b { a } else { b })
    }
    #[inline(always)]
    fn abs(self) -> Self {
        Plain(self.0.map(f32::abs))
    }
    #[inline(always)]
    fn lt(self, o: Self) -> u32 {
        self.test(o, |a, b| a < b)
    }
    #[inline(always)]
    fn le(self, o: Self) -> u32 {
        self.test(o, |a, b| a <= b)
    }
    #[inline(always)]
    fn gt(self, o: Self) -> u32 {
        self.test(o, |a, b| a > b)
    }
    #[inline(always)]
    fn ge(self, o: Self) -> u32 {
        self.test(o, |a, b| a >= b)
    }
    #[inline(always)]
    fn ne(self, o: Self) -> u32 {
        self.test(o, |a, b| a != b)
    }
    #[inline(always)]
    fn select(m: u32, a: Self, b: Self) -> Self {
        Plain(std::array::from_fn(|l| {
            if m >> l & 1 == 1 {
                a.0[l]
            } else {
                b.0[l]
            }
        }))
    }
    #[inline(always)]
    fn and(a: u32, b: u32) -> u32 {
        a & b
    }
    #[inline(always)]
    fn or(a: u32, b: u32) -> u32 {
        a | b
    }
    #[inline(always)]
    fn and_not(a: u32, b: u32) -> u32 {
        a & !b
    }
    #[inline(always)]
    fn not(a: u32) -> u32 {
        !a & ((1 << WIDTH) - 1)
    }
    #[inline(always)]
    fn sign(self) -> u32 {
        (0..WIDTH).fold(0, |m, l| m | u32::from(self.0[l].is_sign_negative()) << l)
    }
    #[inline(always)]
    fn bits(m: u32) -> u32 {
        m
    }
    #[inline(always)]
    fn mask(bits: u32) -> u32 {
        bits & ((1 << WIDTH) - 1)
    }
    #[inline(always)]
    fn reduce_min(self) -> f32 {
        self.0.into_iter().fold(f32::INFINITY, f32::min)
    }
    #[inline(always)]
    fn reduce_max(self) -> f32 {
        self.0.into_iter().fold(f32::NEG_INFINITY, f32::max)
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) use x86::{Avx2, Avx512};

#[cfg(target_arch = "x86_64")]
mod x86 {
    // SAFETY (every `unsafe` block below): the intrinsics need AVX-512F or AVX2; these types
    // are used only inside functions compiled with that feature, which run only after the
    // processor was found to have it (`packet::simd`).
    use super::{Lanes, WIDTH};
    use std::arch::x86_64::*;

    /// AVX-512F: the sixteen lanes in one register, masks in a mask register.
    #[derive(Clone, Copy)]
    pub(crate) struct Avx512(__m512);

    macro_rules! avx512_cmp {
        ($name:ident, $pred:ident) => {
            #[inline(always)]
            fn $name(self, o: Self) -> __mmask16 {
                unsafe { _mm512_cmp_ps_mask::<$pred>(self.0, o.0) }
            }
        };
    }

    impl Lanes for Avx512 {
        type M = __mmask16;
        #[inline(always)]
        fn splat(x: f32) -> Self {
            Avx512(unsafe { _mm512_set1_ps(x) })
        }
        #[inline(always)]
        fn load(a: &[f32; WIDTH]) -> Self {
            Avx512(unsafe { _mm512_loadu_ps(a.as_ptr()) })
        }
        #[inline(always)]
        fn add(self, o: Self) -> Self {
            Avx512(unsafe { _mm512_add_ps(self.0, o.0) })
        }
        #[inline(always)]
        fn sub(self, o: Self) -> Self {
            Avx512(unsafe { _mm512_sub_ps(self.0, o.0) })
        }
        #[inline(always)]
        fn mul(self, o: Self) -> Self {
            Avx512(unsafe { _mm512_mul_ps(self.0, o.0) })
        }
        #[inline(always)]
        fn div(self, o: Self) -> Self {
            Avx512(unsafe { _mm512_div_ps(self.0, o.0) })
        }
        #[inline(always)]
        fn max(self, o: Self) -> Self {
            Avx512(unsafe { _mm512_max_ps(self.0, o.0) })
        }
        #[inline(always)]
        fn min(self, o: Self) -> Self {
            Avx512(unsafe { _mm512_min_ps(self.0, o.0) })
        }
        #[inline(always)]
        fn abs(self) -> Self {
            Avx512(unsafe { _mm512_abs_ps(self.0) })
        }
        avx512_cmp!(lt, _CMP_LT_OQ);
        avx512_cmp!(le, _CMP_LE_OQ);
        avx512_cmp!(gt, _CMP_GT_OQ);
        avx512_cmp!(ge, _CMP_GE_OQ);
        avx512_cmp!(ne, _CMP_NEQ_UQ);
        #[inline(always)]
        fn select(m: __mmask16, a: Self, b: Self) -> Self {
            Avx512(unsafe { _mm512_mask_blend_ps(m, b.0, a.0) })
        }
        #[inline(always)]
        fn and(a: __mmask16, b: __mmask16) -> __mmask16 {
            a & b
        }
        #[inline(always)]
        fn or(a: __mmask16, b: __mmask16) -> __mmask16 {
            a | b
        }
        #[inline(always)]
        fn and_not(a: __mmask16, b: __mmask16) -> __mmask16 {
            a & !b
        }
        #[inline(always)]
        fn not(a: __mmask16) -> __mmask16 {
            !a
        }
        #[inline(always)]
        fn sign(self) -> __mmask16 {
            unsafe {
                _mm512_test_epi32_mask(_mm512_castps_si512(self.0), _mm512_set1_epi32(i32::MIN))
            }
        }
        #[inline(always)]
        fn bits(m: __mmask16) -> u32 {
            u32::from(m)
        }
        #[inline(always)]
        fn mask(bits: u32) -> __mmask16 {
            bits as __mmask16
        }
        #[inline(always)]
        fn reduce_min(self) -> f32 {
            unsafe { _mm512_reduce_min_ps(self.0) }
        }
        #[inline(always)]
        fn reduce_max(self) -> f32 {
            unsafe { _mm512_reduce_max_ps(self.0) }
        }
    }

    /// Eight lanes folded to one by `f`, halving each step.
    #[inline(always)]
    unsafe fn reduce8(v: __m256, f: impl Fn(__m128, __m128) -> __m128) -> f32 {
        let v = f(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let v = f(v, _mm_movehl_ps(v, v));
        _mm_cvtss_f32(f(v, _mm_shuffle_ps::<1>(v, v)))
    }

    /// AVX2: the sixteen lanes in two registers, masks as all-ones lanes.
    #[derive(Clone, Copy)]
    pub(crate) struct Avx2([__m256; 2]);

    impl Avx2 {
        #[inline(always)]
        fn map2(self, o: Self, f: impl Fn(__m256, __m256) -> __m256) -> Self {
            Avx2([f(self.0[0], o.0[0]), f(self.0[1], o.0[1])])
        }
        #[inline(always)]
        fn masks(
            a: [__m256; 2],
            b: [__m256; 2],
            f: impl Fn(__m256, __m256) -> __m256,
        ) -> [__m256; 2] {
            [f(a[0], b[0]), f(a[1], b[1])]
        }
    }

    macro_rules! avx2_cmp {
        ($name:ident, $pred:ident) => {
            #[inline(always)]
            fn $name(self, o: Self) -> [__m256; 2] {
                Self::masks(self.0, o.0, |a, b| unsafe { _mm256_cmp_ps::<$pred>(a, b) })
            }
        };
    }

    impl Lanes for Avx2 {
        type M = [__m256; 2];
        #[inline(always)]
        fn splat(x: f32) -> Self {
            let v = unsafe { _mm256_set1_ps(x) };
            Avx2([v, v])
        }
        #[inline(always)]
        fn load(a: &[f32; WIDTH]) -> Self {
            unsafe {
                Avx2([
                    _mm256_loadu_ps(a.as_ptr()),
                    _mm256_loadu_ps(a.as_ptr().add(8)),
                ])
            }
        }
        #[inline(always)]
        fn add(self, o: Self) -> Self {
            self.map2(o, |a, b| unsafe { _mm256_add_ps(a, b) })
        }
        #[inline(always)]
        fn sub(self, o: Self) -> Self {
            self.map2(o, |a, b| unsafe { _mm256_sub_ps(a, b) })
        }
        #[inline(always)]
        fn mul(self, o: Self) -> Self {
            self.map2(o, |a, b| unsafe { _mm256_mul_ps(a, b) })
        }
        #[inline(always)]
        fn div(self, o: Self) -> Self {
            self.map2(o, |a, b| unsafe { _mm256_div_ps(a, b) })
        }
        #[inline(always)]
        fn max(self, o: Self) -> Self {
            self.map2(o, |a, b| unsafe { _mm256_max_ps(a, b) })
        }
        #[inline(always)]
        fn min(self, o: Self) -> Self {
            self.map2(o, |a, b| unsafe { _mm256_min_ps(a, b) })
        }
        #[inline(always)]
        fn abs(self) -> Self {
            let m = unsafe { _mm256_castsi256_ps(_mm256_set1_epi32(i32::MAX)) };
            self.map2(Avx2([m, m]), |a, m| unsafe { _mm256_and_ps(a, m) })
        }
        avx2_cmp!(lt, _CMP_LT_OQ);
        avx2_cmp!(le, _CMP_LE_OQ);
        avx2_cmp!(gt, _CMP_GT_OQ);
        avx2_cmp!(ge, _CMP_GE_OQ);
        avx2_cmp!(ne, _CMP_NEQ_UQ);
        #[inline(always)]
        fn select(m: [__m256; 2], a: Self, b: Self) -> Self {
            unsafe {
                Avx2([
                    _mm256_blendv_ps(b.0[0], a.0[0], m[0]),
                    _mm256_blendv_ps(b.0[1], a.0[1], m[1]),
                ])
            }
        }
        #[inline(always)]
        fn and(a: [__m256; 2], b: [__m256; 2]) -> [__m256; 2] {
            Self::masks(a, b, |a, b| unsafe { _mm256_and_ps(a, b) })
        }
        #[inline(always)]
        fn or(a: [__m256; 2], b: [__m256; 2]) -> [__m256; 2] {
            Self::masks(a, b, |a, b| unsafe { _mm256_or_ps(a, b) })
        }
        #[inline(always)]
        fn and_not(a: [__m256; 2], b: [__m256; 2]) -> [__m256; 2] {
            Self::masks(b, a, |b, a| unsafe { _mm256_andnot_ps(b, a) })
        }
        #[inline(always)]
        fn not(a: [__m256; 2]) -> [__m256; 2] {
            let ones = unsafe { _mm256_castsi256_ps(_mm256_set1_epi32(-1)) };
            Self::masks(a, [ones, ones], |a, b| unsafe { _mm256_xor_ps(a, b) })
        }
        #[inline(always)]
        fn sign(self) -> [__m256; 2] {
            self.0.map(|v| unsafe {
                _mm256_castsi256_ps(_mm256_srai_epi32::<31>(_mm256_castps_si256(v)))
            })
        }
        #[inline(always)]
        fn bits(m: [__m256; 2]) -> u32 {
            unsafe { (_mm256_movemask_ps(m[0]) as u32) | (_mm256_movemask_ps(m[1]) as u32) << 8 }
        }
        #[inline(always)]
        fn mask(bits: u32) -> [__m256; 2] {
            unsafe {
                let lane = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
                let half = |b: u32| {
                    let v = _mm256_and_si256(_mm256_set1_epi32(b as i32), lane);
                    _mm256_castsi256_ps(_mm256_cmpeq_epi32(v, lane))
                };
                [half(bits & 0xff), half(bits >> 8 & 0xff)]
            }
        }
        #[inline(always)]
        fn reduce_min(self) -> f32 {
            unsafe { reduce8(_mm256_min_ps(self.0[0], self.0[1]), |a, b| _mm_min_ps(a, b)) }
        }
        #[inline(always)]
        fn reduce_max(self) -> f32 {
            unsafe { reduce8(_mm256_max_ps(self.0[0], self.0[1]), |a, b| _mm_max_ps(a, b)) }
        }
    }
}
