//! Following a wall on the walk surface (a "Bug2" path planner): from where a straight walk
//! towards a goal stopped, keep the edge of the walkable ground on one hand, one axis step at
//! a time, until the straight line from that stop to the goal is crossed nearer the goal; walk
//! straight from there, and follow the next wall where that walk stops. The cost is the length
//! of the walls followed, not the area around them.

use crate::nav::{Walk, WalkSurface};
use glam::{Vec2, Vec3Swizzles};

/// Axis directions in counter-clockwise order (+x, +z, -x, -z), as indices into
/// [`axis_steps`].
const CCW: [usize; 4] = [0, 2, 1, 3];

/// Most places of a way reserved up front (a long follower grows its way as it goes).
const MAX_RESERVE: usize = 1024;

/// Which hand keeps to the wall.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Hand {
    Right,
    Left,
}

/// What the follower did with one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Move {
    /// Stepped to this place along the wall.
    Step(u32),
    /// Crossed the line to the goal nearer to it: walk straight from [`Follower::at`] to
    /// the goal and hand the walk to [`Follower::left_wall`].
    Line,
    /// Went all round, reached a dead end, or went too far.
    Lost,
}

/// A wall follower in progress.
pub(super) struct Follower {
    hand: Hand,
    /// Places from the start; consecutive ones a straight walk apart.
    path: Vec<u32>,
    /// Index into [`CCW`].
    heading: usize,
    /// The goal (`u32::MAX` for an explorer, which heads nowhere and only follows walls).
    goal: u32,
    goal_xz: Vec2,
    /// Where the last straight walk stopped, its distance to the goal, and which side of the
    /// line from there to the goal the follower was on.
    hit: Vec2,
    hit_dist: f32,
    side: f32,
    /// The state after the first step along the current wall: met again, the wall is gone
    /// round.
    first: Option<(u32, usize)>,
    /// It met that state again.
    round: bool,
    steps: usize,
    max_steps: usize,
}

impl Follower {
    /// A follower from `path` (the start, then where the straight walk towards `goal`
    /// stopped), taking at most `max_steps` steps.
    pub fn new(
        surface: &WalkSurface,
        path: Vec<u32>,
        goal: u32,
        hand: Hand,
        max_steps: usize,
    ) -> Follower {
        let goal_xz = surface.position(goal).xz();
        Follower::start(surface, path, goal, goal_xz, hand, max_steps)
    }

    /// A follower that only follows the wall where the straight walk of `path` (its start,
    /// then where the walk towards `toward` stopped) stopped, never leaving it for a goal.
    pub fn exploring(
        surface: &WalkSurface,
        path: Vec<u32>,
        toward: Vec2,
        hand: Hand,
        max_steps: usize,
    ) -> Follower {
        Follower::start(surface, path, u32::MAX, toward, hand, max_steps)
    }

    fn start(
        surface: &WalkSurface,
        path: Vec<u32>,
        goal: u32,
        goal_xz: Vec2,
        hand: Hand,
        max_steps: usize,
    ) -> Follower {
        let mut path = path;
        path.reserve(max_steps.min(MAX_RESERVE));
        let mut f = Follower {
            hand,
            path,
            heading: 0,
            goal,
            goal_xz,
            hit: Vec2::ZERO,
            hit_dist: 0.0,
            side: 0.0,
            first: None,
            round: false,
            steps: 0,
            max_steps,
        };
        f.stopped(surface);
        f
    }

    /// Where the follower stands.
    pub fn at(&self) -> u32 {
        *self.path.last().expect("a path has its start")
    }

    /// Whether it was lost by coming round its wall to where it began following it (a wall
    /// all round an island, or a closed room): the other hand would only go round the other
    /// way.
    pub fn came_round(&self) -> bool {
        self.round
    }

    pub fn hand(&self) -> Hand {
        self.hand
    }

    pub fn goal(&self) -> u32 {
        self.goal
    }

    /// Steps taken along walls.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// The way so far, ending on a node once [`Follower::arrive`]d.
    pub fn into_path(self) -> Vec<u32> {
        self.path
    }

    /// Ends the way on `node`, a straight walk from where the follower stands.
    pub fn arrive(&mut self, node: u32) {
        if self.at() != node {
            self.path.push(node);
        }
    }

    /// Sets up following the wall where a straight walk stopped (the follower's place).
    fn stopped(&mut self, surface: &WalkSurface) {
        self.hit = surface.position(self.at()).xz();
        self.hit_dist = self.hit.distance(self.goal_xz);
        self.side = 0.0;
        self.first = None;
        // The wall: the axis step towards the goal that the walk could not take (the larger
        // one first). Follow it with it on the hand's side.
        let d = self.goal_xz - self.hit;
        let x = if d.x >= 0.0 { 0 } else { 2 };
        let z = if d.y >= 0.0 { 1 } else { 3 };
        let (first, second) = if d.x.abs() >= d.y.abs() {
            (x, z)
        } else {
            (z, x)
        };
        let steps = axis_steps(surface, self.at());
        let wall = if steps[CCW[first]] == u32::MAX {
            first
        } else {
            second
        };
        self.heading = match self.hand {
            Hand::Right => (wall + 1) % 4,
            Hand::Left => (wall + 3) % 4,
        };
    }

    /// One step along the wall; `inside` says which ground the follower may stand on.
    pub fn next(&mut self, surface: &WalkSurface, inside: impl Fn(Vec2) -> bool) -> Move {
        if self.steps >= self.max_steps {
            return Move::Lost;
        }
        let steps = axis_steps(surface, self.at());
        let turns = match self.hand {
            Hand::Right => [3, 0, 1, 2],
            Hand::Left => [1, 0, 3, 2],
        };
        let Some((heading, q)) = turns.iter().find_map(|t| {
            let h = (self.heading + t) % 4;
            let q = steps[CCW[h]];
            (q != u32::MAX && inside(surface.position(q).xz())).then_some((h, q))
        }) else {
            return Move::Lost; // a single place
        };
        self.heading = heading;
        self.path.push(q);
        self.steps += 1;
        match self.first {
            None => self.first = Some((q, heading)),
            Some(s) if s == (q, heading) => {
                self.round = true;
                return Move::Lost;
            }
            Some(_) => {}
        }
        if self.goal == u32::MAX {
            return Move::Step(q);
        }
        let p = surface.position(q).xz();
        let side = (self.goal_xz - self.hit).perp_dot(p - self.hit);
        let crossed = self.side != 0.0 && (side == 0.0 || side.signum() != self.side.signum());
        if side != 0.0 {
            self.side = side;
        }
        if crossed && p.distance(self.goal_xz) < self.hit_dist - 0.5 * surface.step() {
            Move::Line
        } else {
            Move::Step(q)
        }
    }

    /// Takes the straight walk asked for by [`Move::Line`]; whether it reached the goal (the
    /// way then ends on it). A walk that got nearer the goal starts a new wall where it
    /// stopped; one that did not leaves the follower on its wall.
    pub fn left_wall(&mut self, surface: &WalkSurface, w: Walk) -> bool {
        if w.arrived() && w.end == self.goal {
            self.arrive(self.goal);
            return true;
        }
        let end = surface.position(w.end).xz();
        if w.steps > 0 && end.distance(self.goal_xz) < self.hit_dist - 0.5 * surface.step() {
            self.path.push(w.end);
            self.stopped(surface);
        }
        false
    }
}

/// Length of a way on the surface (metres, straight between consecutive places).
pub(super) fn length(surface: &WalkSurface, path: &[u32]) -> f32 {
    path.windows(2)
        .map(|w| surface.position(w[0]).distance(surface.position(w[1])))
        .sum()
}

/// The places a straight walk steps to from `p` along +x, -x, +z and -z (`u32::MAX`: none),
/// as [`WalkSurface::walk`] steps.
pub(super) fn axis_steps(surface: &WalkSurface, p: u32) -> [u32; 4] {
    surface.axis(p)
}
