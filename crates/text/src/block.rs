//! 32 bytes of a file looked at at once: which of them equal a byte, or are at most one
//! (bit `i` of a mask for byte `i`). The CSV splitter ([`rows`](super::rows)) and the k6 Point
//! reader ([`point`](super::point)) find their separators, quotes and line ends this way
//! rather than a byte at a time. SSE2 on x86_64 (every x86_64 has it); a byte at a time on
//! other targets. The splitter, which looks at every byte of a CSV file, also runs with
//! AVX2 where the CPU has it ([`Wide`]): a comparison there is one instruction, not three.

/// Bytes looked at at once.
pub const LEN: usize = 32;

/// A block of [`LEN`] bytes, loaded for comparing.
#[derive(Clone, Copy)]
pub struct Block {
    #[cfg(target_arch = "x86_64")]
    halves: [std::arch::x86_64::__m128i; 2],
    #[cfg(not(target_arch = "x86_64"))]
    bytes: [u8; LEN],
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
impl Block {
    /// Loads `bytes`.
    #[inline]
    pub fn load(bytes: &[u8; LEN]) -> Block {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128};
        // SAFETY: each `_mm_loadu_si128` reads 16 of the 32 bytes `bytes` borrows, at any
        // alignment; SSE2 is part of every x86_64 target.
        unsafe {
            let p = bytes.as_ptr();
            Block {
                halves: [
                    _mm_loadu_si128(p.cast::<__m128i>()),
                    _mm_loadu_si128(p.add(16).cast::<__m128i>()),
                ],
            }
        }
    }

    /// The bytes equal to `b`.
    #[inline]
    pub fn eq(&self, b: u8) -> u32 {
        use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_movemask_epi8, _mm_set1_epi8};
        // SAFETY: SSE2 is part of every x86_64 target (these intrinsics only need it enabled).
        unsafe {
            let b = _mm_set1_epi8(b as i8);
            let [lo, hi] = self.halves;
            (_mm_movemask_epi8(_mm_cmpeq_epi8(lo, b)) as u32)
                | ((_mm_movemask_epi8(_mm_cmpeq_epi8(hi, b)) as u32) << 16)
        }
    }

    /// The bytes at most `b` (unsigned).
    #[inline]
    pub fn at_most(&self, b: u8) -> u32 {
        use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_max_epu8, _mm_movemask_epi8, _mm_set1_epi8};
        // SAFETY: as in `eq`. A byte is at most `b` when the larger of it and `b` is `b`.
        unsafe {
            let b = _mm_set1_epi8(b as i8);
            let [lo, hi] = self.halves;
            let le = |v| _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(v, b), b)) as u32;
            le(lo) | (le(hi) << 16)
        }
    }

    /// The bytes equal to `a` or `b`.
    #[inline]
    pub fn eq2(&self, a: u8, b: u8) -> u32 {
        use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8};
        // SAFETY: as in `eq`.
        unsafe {
            let (a, b) = (_mm_set1_epi8(a as i8), _mm_set1_epi8(b as i8));
            let [lo, hi] = self.halves;
            let either = |v| {
                _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, a), _mm_cmpeq_epi8(v, b))) as u32
            };
            either(lo) | (either(hi) << 16)
        }
    }

    /// The bytes that are not ASCII (high bit set).
    #[inline]
    pub fn high(&self) -> u32 {
        use std::arch::x86_64::_mm_movemask_epi8;
        // SAFETY: as in `eq`.
        unsafe {
            let [lo, hi] = self.halves;
            (_mm_movemask_epi8(lo) as u32) | ((_mm_movemask_epi8(hi) as u32) << 16)
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
impl Block {
    /// Loads `bytes`.
    #[inline]
    pub fn load(bytes: &[u8; LEN]) -> Block {
        Block { bytes: *bytes }
    }

    /// The bytes equal to `b`.
    #[inline]
    pub fn eq(&self, b: u8) -> u32 {
        bytewise(&self.bytes, |x| x == b)
    }

    /// The bytes at most `b` (unsigned).
    #[inline]
    pub fn at_most(&self, b: u8) -> u32 {
        bytewise(&self.bytes, |x| x <= b)
    }

    /// The bytes equal to `a` or `b`.
    #[inline]
    pub fn eq2(&self, a: u8, b: u8) -> u32 {
        bytewise(&self.bytes, |x| x == a || x == b)
    }

    /// The bytes that are not ASCII (high bit set).
    #[inline]
    pub fn high(&self) -> u32 {
        bytewise(&self.bytes, |x| x >= 0x80)
    }
}

/// A block of bytes as a splitter compares it: [`Block`], or [`Wide`] where the CPU has AVX2.
#[allow(unsafe_code)]
pub trait Lanes: Copy {
    /// Loads `bytes`.
    ///
    /// # Safety
    /// The CPU has the instructions the type uses (AVX2 for [`Wide`]; [`Block`] needs none
    /// beyond the target's).
    unsafe fn load(bytes: &[u8; LEN]) -> Self;
    /// The bytes equal to `b`.
    fn eq(&self, b: u8) -> u32;
    /// The bytes equal to `a` or `b`.
    fn eq2(&self, a: u8, b: u8) -> u32;
    /// The bytes that are not ASCII.
    fn high(&self) -> u32;
}

#[allow(unsafe_code)]
impl Lanes for Block {
    #[inline(always)]
    unsafe fn load(bytes: &[u8; LEN]) -> Block {
        Block::load(bytes)
    }
    #[inline(always)]
    fn eq(&self, b: u8) -> u32 {
        Block::eq(self, b)
    }
    #[inline(always)]
    fn eq2(&self, a: u8, b: u8) -> u32 {
        Block::eq2(self, a, b)
    }
    #[inline(always)]
    fn high(&self) -> u32 {
        Block::high(self)
    }
}

/// A block of [`LEN`] bytes in one AVX2 register. One exists only where the CPU has AVX2
/// ([`Lanes::load`]'s contract), which makes its comparisons sound.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub struct Wide(std::arch::x86_64::__m256i);

/// Whether this CPU has AVX2, and the bit instructions that came with it (BMI1's `tzcnt`
/// and `blsr` find a mask's bits; every AVX2 CPU has them, but each is asked). The answers
/// are cached by the standard library.
#[cfg(target_arch = "x86_64")]
#[inline]
pub fn wide() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("bmi1")
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
impl Lanes for Wide {
    #[inline(always)]
    unsafe fn load(bytes: &[u8; LEN]) -> Wide {
        // SAFETY: reads the 32 bytes `bytes` borrows, at any alignment; the caller vouches
        // for AVX2.
        unsafe { Wide(std::arch::x86_64::_mm256_loadu_si256(bytes.as_ptr().cast())) }
    }
    #[inline(always)]
    fn eq(&self, b: u8) -> u32 {
        use std::arch::x86_64::{_mm256_cmpeq_epi8, _mm256_movemask_epi8, _mm256_set1_epi8};
        // SAFETY: a `Wide` exists only where the CPU has AVX2 (`load`).
        unsafe { _mm256_movemask_epi8(_mm256_cmpeq_epi8(self.0, _mm256_set1_epi8(b as i8))) as u32 }
    }
    #[inline(always)]
    fn eq2(&self, a: u8, b: u8) -> u32 {
        use std::arch::x86_64::{
            _mm256_cmpeq_epi8, _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi8,
        };
        // SAFETY: as in `eq`.
        unsafe {
            let (a, b) = (
                _mm256_cmpeq_epi8(self.0, _mm256_set1_epi8(a as i8)),
                _mm256_cmpeq_epi8(self.0, _mm256_set1_epi8(b as i8)),
            );
            _mm256_movemask_epi8(_mm256_or_si256(a, b)) as u32
        }
    }
    #[inline(always)]
    fn high(&self) -> u32 {
        // SAFETY: as in `eq`.
        unsafe { std::arch::x86_64::_mm256_movemask_epi8(self.0) as u32 }
    }
}

/// The mask of the bytes for which `f` holds, a byte at a time.
#[cfg(any(test, not(target_arch = "x86_64")))]
fn bytewise(bytes: &[u8; LEN], f: impl Fn(u8) -> bool) -> u32 {
    bytes
        .iter()
        .enumerate()
        .fold(0, |m, (i, &x)| m | (u32::from(f(x)) << i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_are_what_a_byte_at_a_time_gives() {
        let mut rng = fastrand::Rng::with_seed(3);
        let alphabet = b"a,\t\n\r\"\\\x00\x1f\x20\x7f\x80\xff";
        for _ in 0..20_000 {
            let bytes: [u8; LEN] = std::array::from_fn(|_| alphabet[rng.usize(..alphabet.len())]);
            let block = Block::load(&bytes);
            for b in [
                b',', b'\t', b';', b'\n', b'"', b'\\', 0x00, 0x1f, 0x7f, 0x80, 0xff,
            ] {
                assert_eq!(
                    block.eq(b),
                    bytewise(&bytes, |x| x == b),
                    "{bytes:?} = {b:#x}"
                );
                assert_eq!(
                    block.at_most(b),
                    bytewise(&bytes, |x| x <= b),
                    "{bytes:?} <= {b:#x}"
                );
            }
            assert_eq!(
                block.high(),
                bytewise(&bytes, |x| !x.is_ascii()),
                "{bytes:?} not ASCII"
            );
            assert_eq!(
                block.eq2(b'"', b'\r'),
                bytewise(&bytes, |x| x == b'"' || x == b'\r'),
                "{bytes:?} quote or CR"
            );
            #[cfg(target_arch = "x86_64")]
            #[allow(unsafe_code)]
            if wide() {
                // SAFETY: the CPU has AVX2.
                let w = unsafe { <Wide as Lanes>::load(&bytes) };
                for b in [b',', b'\t', b'\n', b'"', 0x00, 0x80, 0xff] {
                    assert_eq!(w.eq(b), block.eq(b), "{bytes:?} = {b:#x}, AVX2");
                }
                assert_eq!(
                    w.eq2(b'"', b'\r'),
                    block.eq2(b'"', b'\r'),
                    "{bytes:?} quote or CR, AVX2"
                );
                assert_eq!(w.high(), block.high(), "{bytes:?} not ASCII, AVX2");
            }
        }
    }
}
