//! String-pulling a way found on the walk surface into straight walks between nodes, so every
//! connection of the graph stays a straight walk.

use super::{Builder, NodeKind};
use crate::nav::WalkSurface;
use glam::Vec3Swizzles;

/// String-pulling `path` (its first place a node's, each next place a straight walk from the
/// one before): a straight walk is known from `path[at]` to `path[good]`, and fails to
/// `path[bad]`; `last` is the node on `path[at]`.
pub(super) struct Pull {
    path: Vec<u32>,
    at: usize,
    good: usize,
    bad: Option<usize>,
    last: u32,
}

/// What one walk of string-pulling did.
pub(super) enum Pulled {
    /// It probed; more walks follow.
    More,
    /// It connected the node on the last corner, `from`, to `node` on the next (`new`: a
    /// [`NodeKind::Passage`] added there); `end`: the way is done.
    Corner {
        from: u32,
        node: u32,
        new: bool,
        end: bool,
    },
    /// Not even one step walks straight (each step of a way is a straight walk, so this does
    /// not happen).
    Failed,
}

impl Pull {
    /// A way from the node `first` (on `path[0]`); `path` has at least two places.
    pub fn new(path: Vec<u32>, first: u32) -> Pull {
        Pull {
            path,
            at: 0,
            good: 0,
            bad: None,
            last: first,
        }
    }
}

impl Builder {
    /// One walk of string-pulling: doubling the reach from the last corner while walks arrive,
    /// then halving between the last arrival and the first failure; a corner where they meet.
    pub(super) fn pull_walk(&mut self, pull: &mut Pull, surface: &WalkSurface) -> Pulled {
        let end = pull.path.len() - 1;
        let probe = match pull.bad {
            None => (pull.at + 2 * (pull.good - pull.at))
                .max(pull.at + 1)
                .min(end),
            Some(b) => (pull.good + b) / 2,
        };
        let to = surface.position(pull.path[probe]).xz();
        let w = self.walk(surface, pull.path[pull.at], to);
        if w.arrived() && w.end == pull.path[probe] {
            pull.good = probe;
        } else {
            pull.bad = Some(probe);
        }
        if pull.good < end && pull.bad.is_none_or(|b| b > pull.good + 1) {
            return Pulled::More;
        }
        if pull.good == pull.at {
            return Pulled::Failed;
        }
        let place = pull.path[pull.good];
        let (node, new) = match self.taken.get(&place) {
            Some(&s) => (s, false),
            None => (self.add_passage(place), true),
        };
        let from = pull.last;
        self.connect(from, node);
        pull.last = node;
        pull.at = pull.good;
        pull.bad = None;
        Pulled::Corner {
            from,
            node,
            new,
            end: pull.at == end,
        }
    }

    /// A new node on a way found on the surface.
    fn add_passage(&mut self, place: u32) -> u32 {
        let s = self.slots.len() as u32;
        self.slots.push(super::Slot {
            place: Some(place),
            kind: NodeKind::Passage,
            degree: 0,
            hint: 0.0,
            leashed: false,
            merged: false,
        });
        self.taken.insert(place, s);
        self.report.passages += 1;
        s
    }
}
