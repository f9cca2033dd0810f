//! The search's open list: a bucket queue over integer path lengths. Dijkstra never pushes a
//! key below the last one taken, nor more than one step above it, so the open keys span less
//! than a ring of buckets: a push files its entry in its key's bucket without comparing, and
//! taking the smallest sorts one small bucket when it comes up.

#[derive(Clone)]
pub(super) struct BucketQueue {
    /// Keys per bucket, as a power of two.
    shift: u32,
    /// The bucket being taken from (`key >> shift`), sorted largest key first.
    at: u32,
    current: Vec<(u32, u32)>,
    /// Later buckets, by `(key >> shift) % ring.len()`; the length is a power of two.
    ring: Vec<Vec<(u32, u32)>>,
    /// Entries in `ring` (not counting `current`).
    held: usize,
}

impl BucketQueue {
    /// An empty queue for keys pushed at most `span` above the last one taken.
    pub fn new(span: u32) -> BucketQueue {
        // About 32 buckets per span: a few entries each on a search's ring of open cells.
        let shift = (span / 32).max(1).ilog2();
        let buckets = ((span >> shift) as usize + 2).next_power_of_two();
        BucketQueue {
            shift,
            at: 0,
            current: Vec::new(),
            ring: vec![Vec::new(); buckets],
            held: 0,
        }
    }

    /// Adds `node` at `key`, which must not be below the last key taken.
    pub fn push(&mut self, key: u32, node: u32) {
        let b = key >> self.shift;
        if b <= self.at {
            // The bucket being taken from (keys at or above the last one taken): in place,
            // before the equal keys held (of equal keys, the one pushed last comes first).
            let at = self.current.partition_point(|e| e.0 >= key);
            self.current.insert(at, (key, node));
            return;
        }
        if (b - self.at) as usize >= self.ring.len() {
            self.widen(b - self.at);
        }
        let n = self.ring.len();
        self.ring[b as usize & (n - 1)].push((key, node));
        self.held += 1;
    }

    /// The entry with the smallest key (of equal keys, the one pushed last), without taking it.
    pub fn peek(&mut self) -> Option<(u32, u32)> {
        self.refill();
        self.current.last().copied()
    }

    /// Takes the entry [`BucketQueue::peek`] names.
    pub fn pop(&mut self) -> Option<(u32, u32)> {
        self.refill();
        self.current.pop()
    }

    /// Every entry held, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &(u32, u32)> {
        self.current.iter().chain(self.ring.iter().flatten())
    }

    /// Makes `current` hold the next bucket with entries, sorted, once it is empty.
    fn refill(&mut self) {
        if !self.current.is_empty() || self.held == 0 {
            return;
        }
        let n = self.ring.len();
        loop {
            self.at += 1;
            let b = &mut self.ring[self.at as usize & (n - 1)];
            if !b.is_empty() {
                std::mem::swap(&mut self.current, b);
                break;
            }
        }
        self.held -= self.current.len();
        // Stable: equal keys stay in push order, so the one pushed last is taken first.
        self.current.sort_by_key(|e| std::cmp::Reverse(e.0));
    }

    /// Grows the ring to hold keys `ahead` buckets past the one being taken from (a push
    /// further ahead than the span given to [`BucketQueue::new`]).
    fn widen(&mut self, ahead: u32) {
        let n = (ahead as usize + 1).next_power_of_two();
        let mut ring = vec![Vec::new(); n];
        for e in self.ring.drain(..).flatten() {
            ring[(e.0 >> self.shift) as usize & (n - 1)].push(e);
        }
        self.ring = ring;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// A Dijkstra-like workload (each push at or above the last key taken, peeks between)
    /// takes entries in the order a binary heap ordered by key, then latest push, does:
    /// ties included, with pushes past the span and into the bucket being taken from.
    #[test]
    fn takes_entries_in_key_then_latest_push_order() {
        for (span, reach) in [(3536u32, 3600u32), (40_000, 40_000), (64, 5000), (1, 3)] {
            let mut rng = crate::trace::SplitMix64(11 + u64::from(span));
            let mut queue = BucketQueue::new(span);
            let mut reference = BinaryHeap::new();
            let mut last = 0u32;
            for round in 0..100_000u32 {
                if !rng.next_u64().is_multiple_of(3) || reference.is_empty() {
                    // Many equal keys: ties must come out latest push first.
                    let key = last + (rng.next_u64() % u64::from(reach)) as u32 / 7 * 7;
                    queue.push(key, round);
                    reference.push((Reverse(key), round));
                } else {
                    let peeked = queue.peek();
                    let got = queue.pop();
                    assert_eq!(peeked, got);
                    let want = reference.pop().map(|(Reverse(k), n)| (k, n));
                    assert_eq!(got, want, "span {span}");
                    last = got.unwrap().0;
                }
                if round % 1000 == 0 {
                    assert_eq!(queue.iter().count(), reference.len());
                }
            }
            while let Some((Reverse(k), n)) = reference.pop() {
                assert_eq!(queue.pop(), Some((k, n)));
            }
            assert_eq!(queue.pop(), None);
            assert_eq!(queue.peek(), None);
        }
    }
}
