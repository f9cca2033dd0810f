//! The search's open list: a monotone radix heap (Ahuja, Mehlhorn, Orlin and Tarjan) over
//! integer path lengths. Dijkstra never pushes a key below the last one taken, so a key sits
//! in the bucket of the highest bit where it differs from that one, and taking the smallest
//! redistributes one bucket: no comparisons per level as in a binary heap.

/// Keys per bucket: bucket 0 holds keys equal to `last`, bucket `b` those whose highest bit
/// differing from `last` is bit `b - 1`.
const BUCKETS: usize = 33;

#[derive(Clone)]
pub(super) struct RadixHeap {
    last: u32,
    len: usize,
    buckets: [Vec<(u32, u32)>; BUCKETS],
}

impl Default for RadixHeap {
    fn default() -> Self {
        RadixHeap {
            last: 0,
            len: 0,
            buckets: std::array::from_fn(|_| Vec::new()),
        }
    }
}

fn bucket(key: u32, last: u32) -> usize {
    (u32::BITS - (key ^ last).leading_zeros()) as usize
}

impl RadixHeap {
    /// Adds `node` at `key`, which must not be below the last key taken.
    pub fn push(&mut self, key: u32, node: u32) {
        debug_assert!(key >= self.last, "radix heap: {key} below {}", self.last);
        self.buckets[bucket(key, self.last)].push((key, node));
        self.len += 1;
    }

    /// The entry with the smallest key (of equal keys, the one pushed last), without taking it.
    pub fn peek(&mut self) -> Option<(u32, u32)> {
        self.refill();
        self.buckets[0].last().copied()
    }

    /// Takes the entry [`RadixHeap::peek`] names.
    pub fn pop(&mut self) -> Option<(u32, u32)> {
        self.refill();
        let top = self.buckets[0].pop();
        self.len -= usize::from(top.is_some());
        top
    }

    /// Every entry held, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &(u32, u32)> {
        self.buckets.iter().flatten()
    }

    /// Makes bucket 0 hold the smallest key, when any is held: the first non-empty bucket's
    /// smallest key becomes `last` and that bucket's entries move down.
    fn refill(&mut self) {
        if !self.buckets[0].is_empty() || self.len == 0 {
            return;
        }
        let b = (1..BUCKETS)
            .find(|&b| !self.buckets[b].is_empty())
            .expect("a non-empty heap has a non-empty bucket");
        let moved = std::mem::take(&mut self.buckets[b]);
        self.last = moved.iter().map(|e| e.0).min().expect("non-empty bucket");
        for &(k, n) in &moved {
            self.buckets[bucket(k, self.last)].push((k, n));
        }
        // Every entry went to a lower bucket (they all share bit `b - 1` with the new `last`);
        // keep the allocation for the next time this bucket fills.
        let mut moved = moved;
        moved.clear();
        self.buckets[b] = moved;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// A Dijkstra-like workload (each push at or above the last key taken, peeks between)
    /// takes keys in the order a binary heap does.
    #[test]
    fn takes_keys_in_order_like_a_binary_heap() {
        let mut rng = crate::trace::SplitMix64(11);
        let mut radix = RadixHeap::default();
        let mut reference = BinaryHeap::new();
        let mut last = 0u32;
        for round in 0..200_000u32 {
            if !rng.next_u64().is_multiple_of(3) || reference.is_empty() {
                let key = last + (rng.next_u64() % 40_000) as u32;
                radix.push(key, round);
                reference.push(Reverse(key));
            } else {
                let peeked = radix.peek().map(|e| e.0);
                let got = radix.pop().map(|e| e.0);
                assert_eq!(peeked, got);
                assert_eq!(got, reference.pop().map(|r| r.0));
                last = got.unwrap();
            }
            if round % 1000 == 0 {
                assert_eq!(radix.iter().count(), reference.len());
            }
        }
        while let Some(Reverse(k)) = reference.pop() {
            assert_eq!(radix.pop().map(|e| e.0), Some(k));
        }
        assert_eq!(radix.pop(), None);
        assert_eq!(radix.peek(), None);
    }
}
