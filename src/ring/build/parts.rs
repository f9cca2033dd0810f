//! Which nodes the connections join into parts: a union-find over slots whose roots are each
//! part's least slot, so the centre's part (slot 0) has root 0.

pub(super) struct Parts {
    root: Vec<u32>,
}

impl Parts {
    /// The parts of `n` slots joined by `edges`.
    pub fn of(n: usize, edges: &[[u32; 2]]) -> Parts {
        let mut p = Parts {
            root: (0..n as u32).collect(),
        };
        for e in edges {
            p.union(e[0], e[1]);
        }
        p
    }

    pub fn find(&mut self, mut s: u32) -> u32 {
        while self.root[s as usize] != s {
            let up = self.root[self.root[s as usize] as usize];
            self.root[s as usize] = up;
            s = up;
        }
        s
    }

    pub fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        self.root[ra.max(rb) as usize] = ra.min(rb);
    }

    /// A new slot, a part of its own.
    pub fn push(&mut self) {
        self.root.push(self.root.len() as u32);
    }

    /// Every slot's part (its root).
    pub fn roots(&mut self) -> Vec<u32> {
        (0..self.root.len() as u32).map(|s| self.find(s)).collect()
    }
}
