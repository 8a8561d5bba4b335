//! A hash every process computes alike.

/// 64-bit FNV-1a: a hash every instance and every host computes alike
/// (std's hasher is seeded per process), for keys named after unbounded
/// input.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}
