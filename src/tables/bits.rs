//! Bit-string helpers for the packed line-of-sight rows (least significant bit first).

/// Up to 64 bits of `words` from bit `off`, least significant first.
pub(crate) fn read_bits(words: &[u64], off: u64, len: u32) -> u64 {
    debug_assert!((1..=64).contains(&len));
    let (w, s) = ((off / 64) as usize, (off % 64) as u32);
    let mut v = words[w] >> s;
    if s != 0 && s + len > 64 {
        v |= words[w + 1] << (64 - s);
    }
    if len == 64 {
        v
    } else {
        v & ((1 << len) - 1)
    }
}

/// ORs the low `len` bits of `v` into `words` at bit `off`.
pub(crate) fn or_bits(words: &mut [u64], off: u64, len: u32, v: u64) {
    let (w, s) = ((off / 64) as usize, (off % 64) as u32);
    words[w] |= v << s;
    if s != 0 && s + len > 64 {
        words[w + 1] |= v >> (64 - s);
    }
}

/// Up to 64 bits from bit `off` of a little-endian `u64` bit string held as bytes (a table
/// file's `LOSB` payload, a whole number of words).
pub(crate) fn read_bits_le(b: &[u8], off: u64, len: u32) -> u64 {
    let w = (off / 64) as usize;
    let word = |k: usize| u64::from_le_bytes(b[8 * k..8 * k + 8].try_into().unwrap());
    let pair = [
        word(w),
        if 8 * w + 16 <= b.len() {
            word(w + 1)
        } else {
            0
        },
    ];
    read_bits(&pair, off % 64, len)
}

/// Calls `f(d)` for every set bit `start + d` with `d < len`, in order.
pub(crate) fn for_each_set_bit(words: &[u64], start: u64, len: u64, f: impl FnMut(u64)) {
    scan(|off, take| read_bits(words, off, take), start, len, f);
}

/// [`for_each_set_bit`] over a bit string held as bytes ([`read_bits_le`]).
pub(crate) fn for_each_set_bit_le(bytes: &[u8], start: u64, len: u64, f: impl FnMut(u64)) {
    scan(|off, take| read_bits_le(bytes, off, take), start, len, f);
}

fn scan(read: impl Fn(u64, u32) -> u64, start: u64, len: u64, mut f: impl FnMut(u64)) {
    let mut d = 0;
    while d < len {
        let take = (len - d).min(64) as u32;
        let mut v = read(start + d, take);
        while v != 0 {
            f(d + u64::from(v.trailing_zeros()));
            v &= v - 1;
        }
        d += u64::from(take);
    }
}
