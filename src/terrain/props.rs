//! Per-waypoint properties: the "local environment" and "membership" characteristics of van
//! der Sterren, *Terrain Reasoning for 3D Action Games* ("Waypoint Calculations"): how dark a
//! waypoint is (sniping quality A, an inconspicuous spot), which kinds of movement it needs
//! and whether a door is in the way (quality I), where the doors and windows are (the key
//! locations of quality F), and which area (room, outdoor zone) it belongs to.
//!
//! Every property that needs geometry traces its rays in a few batched calls to the
//! [`Engine`], so the GPU and CPU backends give the same answers.

use crate::limits;
use crate::nav::NavGraph;
use crate::{Engine, Error, Mask, MaterialFlags, Ray, Result, Scene, Segment};
use glam::Vec3;
use std::collections::HashSet;
use std::path::Path;

/// Most rays or segments one property call may trace: 64 M.
pub const MAX_RAYS: u64 = 1 << 26;

/// Bits: how a waypoint is moved through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Movement(pub u32);

impl Movement {
    pub const PLAIN: Movement = Movement(0);
    /// An incident edge climbs stairs.
    pub const STAIRS: Movement = Movement(1);
    /// An incident edge wades through water.
    pub const WATER: Movement = Movement(2);
    /// An incident edge needs a crouch.
    pub const CROUCH: Movement = Movement(4);
    /// The waypoint lies at a door.
    pub const DOOR: Movement = Movement(8);
    const NAMED: [(Movement, &'static str); 4] = [
        (Movement::STAIRS, "stairs"),
        (Movement::WATER, "water"),
        (Movement::CROUCH, "crouch"),
        (Movement::DOOR, "door"),
    ];

    #[must_use]
    pub const fn contains(self, o: Movement) -> bool {
        self.0 & o.0 == o.0
    }
    #[must_use]
    pub const fn union(self, o: Movement) -> Movement {
        Movement(self.0 | o.0)
    }
    /// No special movement at all.
    #[must_use]
    pub fn is_plain(self) -> bool {
        self.0 == 0
    }
    /// The kinds joined by `+` (`"stairs+water"`), `""` for plain.
    #[must_use]
    pub fn names(self) -> String {
        let names: Vec<&str> = Self::NAMED
            .iter()
            .filter(|(m, _)| self.contains(*m))
            .map(|(_, n)| *n)
            .collect();
        names.join("+")
    }
}

/// Horizontal closeness used for doors: within `radius` metres in x and z, and less than 2 m
/// apart in height (the same floor).
fn near_horizontally(p: Vec3, q: Vec3, radius: f32) -> bool {
    let d = p - q;
    d.x * d.x + d.z * d.z <= radius * radius && d.y.abs() < 2.0
}

/// A waypoint's movement: the union of the kinds (stairs, water, crouch) of its incident nav
/// edges, plus [`Movement::DOOR`] when the node lies within `door_radius` metres (horizontal
/// distance, |dy| < 2 m) of a door key location. A NaN or negative radius marks no doors.
#[must_use]
pub fn movement_types(graph: &NavGraph, keys: &[KeyLocation], door_radius: f32) -> Vec<Movement> {
    let edge_bits = Movement::STAIRS
        .union(Movement::WATER)
        .union(Movement::CROUCH)
        .0;
    let mut moves = vec![Movement::PLAIN; graph.len()];
    for e in graph.edges() {
        let kinds = Movement(e.kinds.0 & edge_bits);
        for end in [e.a, e.b] {
            moves[end as usize] = moves[end as usize].union(kinds);
        }
    }
    let doors: Vec<Vec3> = keys
        .iter()
        .filter(|k| k.kind == KeyKind::Door)
        .map(|k| k.position)
        .collect();
    for (m, &p) in moves.iter_mut().zip(graph.nodes()) {
        if doors.iter().any(|&d| near_horizontally(p, d, door_radius)) {
            *m = m.union(Movement::DOOR);
        }
    }
    moves
}

/// How [`light_levels`] lights a point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LightParams {
    /// Unit vector pointing to the sun (any non-zero length is normalised).
    pub toward_sun: Vec3,
    /// Weight of direct sunlight.
    pub sun: f32,
    /// Weight of the sky dome.
    pub sky: f32,
    /// Cosine-weighted sky rays per point, 1..=1024.
    pub sky_samples: u32,
    /// Metres above the waypoint where light is measured.
    pub height: f32,
    /// Length of the sun and sky occlusion rays (metres); farther blockers cast no shade.
    pub reach: f32,
}

impl LightParams {
    /// The sun in the south-east (+X east, +Z south) at 40 degrees elevation, sun 0.7 and sky
    /// 0.3, 64 sky samples, measured 1 m above the waypoint with 50 m rays.
    #[must_use]
    pub const fn standard() -> LightParams {
        LightParams {
            // (cos 40 / sqrt 2, sin 40, cos 40 / sqrt 2)
            toward_sun: Vec3::new(0.541_675_2, 0.642_787_6, 0.541_675_2),
            sun: 0.7,
            sky: 0.3,
            sky_samples: 64,
            height: 1.0,
            reach: 50.0,
        }
    }

    /// Finite values, non-negative weights lighting an open spot, 1..=1024 sky samples,
    /// positive height and reach.
    pub fn validate(&self) -> Result<()> {
        let v = self.toward_sun;
        if !v.is_finite() || v.length() < 1e-6 {
            return Err(Error::param("toward_sun", v, "a finite non-zero vector"));
        }
        for (name, x) in [("sun", self.sun), ("sky", self.sky)] {
            if !(x.is_finite() && (0.0..=1e6).contains(&x)) {
                return Err(Error::param(name, x, "a finite weight in 0..=1e6"));
            }
        }
        if self.sun * v.normalize().y.max(0.0) + self.sky <= 0.0 {
            return Err(Error::param(
                "sky",
                self.sky,
                "more than 0, or a sun above the horizon with a positive weight",
            ));
        }
        if !(1..=1024).contains(&self.sky_samples) {
            return Err(Error::param("sky_samples", self.sky_samples, "1..=1024"));
        }
        check_metres(&[("height", self.height)], 100.0)?;
        check_metres(&[("reach", self.reach)], 1e4)
    }
}

impl Default for LightParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// `n` deterministic cosine-weighted directions on the upper hemisphere (a Hammersley set:
/// `u = (i + 0.5) / n` and the base-2 radical inverse of `i`, mapped by `r = sqrt(u)`), the
/// sky rays of [`light_levels`]. Each carries the same weight.
#[must_use]
pub fn sky_directions(n: u32) -> Vec<Vec3> {
    (0..n)
        .map(|i| {
            let u = (i as f32 + 0.5) / n as f32;
            let phi = std::f32::consts::TAU * (i.reverse_bits() as f32 / 4_294_967_296.0);
            let r = u.sqrt();
            Vec3::new(r * phi.cos(), (1.0 - u).sqrt(), r * phi.sin())
        })
        .collect()
}

/// Light level in `[0, 1]` per point, for sniping quality A (a dark spot is inconspicuous).
///
/// At `m = point + height * Y`: `albedo * (sun * visible * max(0, cos) + sky * open) / (sun *
/// max(0, cos) + sky)`, where `albedo` is the material of the first surface straight below
/// `m` (within `height + 1` m; 0.5 when there is none), `visible` is 1 when the segment from `m`
/// toward the sun (`reach` long) is clear, `cos` is the sun's elevation sine (a horizontal
/// surface) and `open` the share of [`sky_directions`] whose `reach`-long segments are clear.
/// A white, open, sun-lit horizontal spot is 1; a spot in shade keeps its sky share. All rays
/// go to the engine in one closest-hit and one occlusion batch ([`Mask::SIGHT`]).
pub fn light_levels(
    engine: &Engine,
    scene: &Scene,
    points: &[Vec3],
    p: &LightParams,
) -> Result<Vec<f32>> {
    p.validate()?;
    check_points(points)?;
    let per = p.sky_samples as usize + 1;
    let total = points.len() as u64 * per as u64;
    limits::check_size(
        "light rays",
        total,
        MAX_RAYS,
        "pass fewer points or sky samples",
    )?;
    let sun = p.toward_sun.normalize();
    let sky = sky_directions(p.sky_samples);
    let eyes: Vec<Vec3> = points.iter().map(|&q| q + Vec3::Y * p.height).collect();
    let down: Vec<Ray> = eyes
        .iter()
        .map(|&e| Ray::new(e, Vec3::NEG_Y, p.height + 1.0))
        .collect();
    let ground = Mask(MaterialFlags::SOLID.union(MaterialFlags::WALKABLE));
    let below = engine.closest_hit(scene, &down, ground)?;
    let mut segs = limits::vec_with_capacity(total as usize, "light segments", "fewer points")?;
    for &e in &eyes {
        segs.push(Segment::new(e, e + sun * p.reach));
        segs.extend(sky.iter().map(|&d| Segment::new(e, e + d * p.reach)));
    }
    let occ = engine.occluded(scene, &segs, Mask::SIGHT)?;
    let cos = sun.y.max(0.0);
    let norm = p.sun * cos + p.sky;
    Ok(below
        .iter()
        .enumerate()
        .map(|(i, hit)| {
            let albedo = hit
                .and_then(|h| scene.materials().get(h.material as usize))
                .map_or(0.5, |m| m.albedo);
            let lit = if occ.get(i * per) { 0.0 } else { 1.0 };
            let open = (1..per).filter(|&k| !occ.get(i * per + k)).count();
            let sky_share = open as f32 / p.sky_samples as f32;
            albedo * (p.sun * cos * lit + p.sky * sky_share) / norm
        })
        .collect())
}

/// Each `(name, value)` in `(0, max]` metres, else [`Error::InvalidParameter`] for the first
/// that is not (NaN and infinities included).
fn check_metres(values: &[(&'static str, f32)], max: f32) -> Result<()> {
    match values.iter().find(|(_, x)| !(*x > 0.0 && *x <= max)) {
        Some(&(name, x)) => Err(Error::param(name, x, format!("metres in (0, {max}]"))),
        None => Ok(()),
    }
}

/// Rejects NaN, infinite or far-away points with [`Error::NonFiniteQuery`].
fn check_points(points: &[Vec3]) -> Result<()> {
    match points
        .iter()
        .position(|p| !(p.is_finite() && p.abs().max_element() <= limits::MAX_COORDINATE))
    {
        Some(index) => Err(Error::NonFiniteQuery {
            index,
            what: "a NaN, infinite or too distant point",
        }),
        None => Ok(()),
    }
}

/// Which kind of opening a key location is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyKind {
    Door,
    Window,
}

impl KeyKind {
    /// `door` or `window`, as files write it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            KeyKind::Door => "door",
            KeyKind::Window => "window",
        }
    }
}

/// A door or window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeyLocation {
    pub kind: KeyKind,
    /// Centre of the opening on the wall's mid-plane; a door's at ground level.
    pub position: Vec3,
    /// Horizontal unit normal of the wall, either side (zero when a file gives none).
    pub normal: Vec3,
}

/// How [`find_key_locations`] probes walls. Heights are above each node (the floor).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeyParams {
    /// Horizontal directions probed from each node, evenly spaced: 32.
    pub directions: u32,
    /// Probe heights: knee 0.5 m, chest 1.5 m, above the head (a lintel) 2.5 m.
    pub heights: [f32; 3],
    /// Length of the horizontal probes: 4 m (twice the nav spacing).
    pub reach: f32,
    /// A lower probe passes the opening when it goes at least this much farther than the
    /// lintel hit: 0.5 m (more than a wall is thick).
    pub through: f32,
    /// A sill and a lintel are one wall when hit within this distance of each other: 0.3 m.
    pub same_wall: f32,
    /// Widths a doorway may have: 0.6..=2.0 m.
    pub door_width: [f32; 2],
    /// Widths a window may have: 0.3..=2.5 m.
    pub window_width: [f32; 2],
    /// Least height of a doorway: 1.6 m.
    pub door_height: f32,
    /// Spacing of the profile probes across and up the wall: 0.05 m.
    pub step: f32,
    /// Detections closer than this (horizontally) are one opening: 1 m.
    pub merge_radius: f32,
}

impl KeyParams {
    #[must_use]
    pub const fn standard() -> KeyParams {
        KeyParams {
            directions: 32,
            heights: [0.5, 1.5, 2.5],
            reach: 4.0,
            through: 0.5,
            same_wall: 0.3,
            door_width: [0.6, 2.0],
            window_width: [0.3, 2.5],
            door_height: 1.6,
            step: 0.05,
            merge_radius: 1.0,
        }
    }

    /// 4..=360 directions, heights ascending in (0, 10], finite positive distances, width
    /// ranges ascending within 10 m, a step in 0.01..=0.5 m.
    pub fn validate(&self) -> Result<()> {
        if !(4..=360).contains(&self.directions) {
            return Err(Error::param("directions", self.directions, "4..=360"));
        }
        let [a, b, c] = self.heights;
        if !(a > 0.0 && a < b && b < c && c <= 10.0) {
            return Err(Error::param(
                "heights",
                format!("{:?}", self.heights),
                "knee < chest < head, in (0, 10] m",
            ));
        }
        check_metres(
            &[
                ("reach", self.reach),
                ("through", self.through),
                ("same_wall", self.same_wall),
                ("door_height", self.door_height),
                ("merge_radius", self.merge_radius),
            ],
            100.0,
        )?;
        for (name, [lo, hi]) in [
            ("door_width", self.door_width),
            ("window_width", self.window_width),
        ] {
            if !(lo > 0.0 && lo < hi && hi <= 10.0) {
                return Err(Error::param(
                    name,
                    format!("{lo}..{hi}"),
                    "0 < min < max <= 10 m",
                ));
            }
        }
        if !(0.01..=0.5).contains(&self.step) {
            return Err(Error::param("step", self.step, "0.01..=0.5 m"));
        }
        Ok(())
    }
}

impl Default for KeyParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// A possible opening seen from one node: where the lintel probe hit the wall's face.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    kind: KeyKind,
    floor: f32,
    face: Vec3,
    normal: Vec3,
}

/// How far in front of and behind a wall's face the profile probes reach (walls up to 1 m).
const FRONT: f32 = 0.3;
const BACK: f32 = 1.0;
/// Highest threshold a doorway may have above the node's floor (metres); a higher bottom
/// edge is a window's sill.
const THRESHOLD: f32 = 0.3;

/// Doors and windows found in the geometry near the graph's nodes, for sniping quality F.
///
/// 1. *Probe*: from each node, `directions` horizontal rays at knee, chest and lintel height
///    (one batch). Where the lintel ray hits a vertical wall, a **door** candidate is where the
///    knee and chest rays both pass on through it, a **window** candidate where the knee ray
///    hits the same wall (a sill, within `same_wall`) but the chest ray passes.
/// 2. *Measure*: across each candidate's wall, segments through the wall every `step` metres
///    sideways (at 1 m for doors, chest height for windows) must find a free run bounded by
///    blocked jambs within the kind's widths; up the wall at the run's centre, a free run
///    bounded by a lintel, reaching the floor for a door (at least `door_height` tall) and
///    over a sill for a window. One ray from behind the lintel measures the wall's thickness.
/// 3. *Merge*: detections within `merge_radius` are one opening; the majority kind wins and
///    its detections are averaged.
///
/// Open door leaves are part of the geometry as it is; so is glass (it does not block sight).
pub fn find_key_locations(
    engine: &Engine,
    scene: &Scene,
    graph: &NavGraph,
    p: &KeyParams,
) -> Result<Vec<KeyLocation>> {
    p.validate()?;
    let dirs = p.directions as usize;
    let total = graph.len() as u64 * dirs as u64 * 3;
    limits::check_size(
        "key location rays",
        total,
        MAX_RAYS,
        "use fewer directions or nodes",
    )?;
    let mut rays = limits::vec_with_capacity(total as usize, "key location rays", "fewer nodes")?;
    for &node in graph.nodes() {
        for k in 0..dirs {
            let a = std::f32::consts::TAU * k as f32 / dirs as f32;
            let d = Vec3::new(a.cos(), 0.0, a.sin());
            rays.extend(p.heights.map(|h| Ray::new(node + Vec3::Y * h, d, p.reach)));
        }
    }
    let hits = engine.closest_hit(scene, &rays, Mask::SIGHT)?;
    let mut seen = HashSet::new();
    let mut candidates = Vec::new();
    for (j, h) in hits.chunks_exact(3).enumerate() {
        let Some(head) = h[2].filter(|x| x.normal.y.abs() < 0.3) else {
            continue;
        };
        let passes = |x: &Option<crate::Hit>| x.is_none_or(|x| x.t > head.t + p.through);
        let sill = h[0].is_some_and(|x| (x.t - head.t).abs() <= p.same_wall);
        let kind = match (passes(&h[0]), sill, passes(&h[1])) {
            (true, _, true) => KeyKind::Door,
            (_, true, true) => KeyKind::Window,
            _ => continue,
        };
        let ray = &rays[j * 3 + 2];
        let face = ray.origin() + ray.dir() * head.t;
        let key = ((face / 0.25).floor().as_ivec3(), kind);
        if seen.insert(key) {
            let normal = Vec3::new(head.normal.x, 0.0, head.normal.z).normalize();
            let floor = rays[j * 3].origin[1] - p.heights[0];
            candidates.push(Candidate {
                kind,
                floor,
                face,
                normal,
            });
        }
    }
    let detections = measure_openings(engine, scene, &candidates, p)?;
    Ok(merge_detections(&detections, p.merge_radius))
}

/// The probe segment through a wall at `at` (a point on its face) along `-normal`.
fn through_wall(at: Vec3, normal: Vec3) -> Segment {
    Segment::new(at + normal * FRONT, at - normal * BACK)
}

/// The free run of samples around `at` in a blocked/free profile: `(first, last)`, or `None`
/// when `at` itself is blocked.
fn free_run(blocked: &[bool], at: usize) -> Option<(usize, usize)> {
    if *blocked.get(at)? {
        return None;
    }
    let lo = blocked[..at].iter().rposition(|&b| b).map_or(0, |i| i + 1);
    let hi = blocked[at..]
        .iter()
        .position(|&b| b)
        .map_or(blocked.len(), |i| at + i)
        - 1;
    Some((lo, hi))
}

/// Where a candidate's profiles are taken: 1 m up for doors, chest height for windows.
fn probe_height(c: &Candidate, p: &KeyParams) -> f32 {
    match c.kind {
        KeyKind::Door => 0.5 * (p.heights[0] + p.heights[1]),
        KeyKind::Window => p.heights[1],
    }
}

/// The point on `c`'s wall face `along` metres sideways, at `height` above its floor.
fn on_face(c: &Candidate, along: f32, height: f32) -> Vec3 {
    let side = Vec3::Y.cross(c.normal);
    Vec3::new(c.face.x, c.floor + height, c.face.z) + side * along
}

/// The sideways offset of the opening's centre from the lintel hit, from the profile across
/// the wall (sample `i` at `(i - half) * step`): the free run around the hit must end in
/// jambs on both sides and be as wide as the kind allows.
fn across_centre(blocked: &[bool], half: usize, c: &Candidate, p: &KeyParams) -> Option<f32> {
    let (lo, hi) = free_run(blocked, half).filter(|&(lo, hi)| lo > 0 && hi + 1 < blocked.len())?;
    let width = (hi - lo + 1) as f32 * p.step;
    let [wmin, wmax] = match c.kind {
        KeyKind::Door => p.door_width,
        KeyKind::Window => p.window_width,
    };
    (wmin..=wmax)
        .contains(&width)
        .then(|| ((lo + hi) as f32 * 0.5 - half as f32) * p.step)
}

/// The opening's bottom and top above the floor, from the profile up the wall (sample `i` at
/// `(i + 0.5) * step`): the free run around the probe height must end under a lintel, start
/// at the floor (a low threshold) for a door at least `door_height` tall, over a sill for a
/// window.
fn up_extent(blocked: &[bool], c: &Candidate, p: &KeyParams) -> Option<(f32, f32)> {
    let at = ((probe_height(c, p) / p.step) as usize).min(blocked.len() - 1);
    let (lo, hi) = free_run(blocked, at).filter(|&(_, hi)| hi + 1 < blocked.len())?;
    let (bottom, top) = (lo as f32 * p.step, (hi + 1) as f32 * p.step);
    let ok = match c.kind {
        KeyKind::Door => bottom <= THRESHOLD && top >= p.door_height,
        KeyKind::Window => bottom > THRESHOLD,
    };
    ok.then_some((bottom, top))
}

/// Step 2 of [`find_key_locations`]: each candidate's opening measured across and up its
/// wall, and the wall's thickness behind the lintel (three batches for all candidates).
fn measure_openings(
    engine: &Engine,
    scene: &Scene,
    candidates: &[Candidate],
    p: &KeyParams,
) -> Result<Vec<KeyLocation>> {
    let half = (p.door_width[1].max(p.window_width[1]) / p.step).ceil() as usize + 1;
    let across_n = 2 * half + 1;
    let across: Vec<Segment> = candidates
        .iter()
        .flat_map(|c| {
            (0..across_n).map(move |i| {
                let s = (i as f32 - half as f32) * p.step;
                through_wall(on_face(c, s, probe_height(c, p)), c.normal)
            })
        })
        .collect();
    let occ = engine.occluded(scene, &across, Mask::SIGHT)?;
    let mut centred = Vec::new();
    for (k, c) in candidates.iter().enumerate() {
        let blocked: Vec<bool> = (0..across_n).map(|i| occ.get(k * across_n + i)).collect();
        if let Some(s) = across_centre(&blocked, half, c, p) {
            centred.push(Candidate {
                face: on_face(c, s, p.heights[2]),
                ..*c
            });
        }
    }
    let up_n = ((p.heights[2] + 0.5) / p.step).ceil() as usize;
    let up: Vec<Segment> = centred
        .iter()
        .flat_map(|c| {
            let at = move |i| on_face(c, 0.0, (i as f32 + 0.5) * p.step);
            (0..up_n).map(move |i| through_wall(at(i), c.normal))
        })
        .collect();
    let occ = engine.occluded(scene, &up, Mask::SIGHT)?;
    let mut found = Vec::new();
    for (k, c) in centred.iter().enumerate() {
        let blocked: Vec<bool> = (0..up_n).map(|i| occ.get(k * up_n + i)).collect();
        if let Some((bottom, top)) = up_extent(&blocked, c, p) {
            let y = if c.kind == KeyKind::Door {
                0.0
            } else {
                0.5 * (bottom + top)
            };
            found.push((c, on_face(c, 0.0, y), on_face(c, 0.0, top + 0.5 * p.step)));
        }
    }
    // The wall's thickness: a ray from behind the lintel back to its face.
    let back: Vec<Ray> = found
        .iter()
        .map(|&(c, _, lintel)| Ray::new(lintel - c.normal * BACK, c.normal, BACK))
        .collect();
    let behind = engine.closest_hit(scene, &back, Mask::SIGHT)?;
    Ok(found
        .iter()
        .zip(&behind)
        .map(|(&(c, at, _), hit)| {
            let thickness = hit.map_or(0.0, |h| (BACK - h.t).clamp(0.0, BACK));
            KeyLocation {
                kind: c.kind,
                position: at - c.normal * (0.5 * thickness),
                normal: c.normal,
            }
        })
        .collect())
}

/// One opening seen by several detections.
struct Cluster {
    first: Vec3,
    normal: Vec3,
    sums: [(Vec3, u32); 2],
}

/// Step 3 of [`find_key_locations`]: detections within `radius` (horizontally, |dy| < 2 m) of
/// a cluster's first detection join it; each cluster becomes one key location of its majority
/// kind (ties: door) at the mean of that kind's detections.
fn merge_detections(found: &[KeyLocation], radius: f32) -> Vec<KeyLocation> {
    let mut clusters: Vec<Cluster> = Vec::new();
    for d in found {
        let slot = usize::from(d.kind == KeyKind::Window);
        let near = |c: &Cluster| near_horizontally(c.first, d.position, radius);
        let i = clusters.iter().position(near).unwrap_or_else(|| {
            clusters.push(Cluster {
                first: d.position,
                normal: Vec3::ZERO,
                sums: [(Vec3::ZERO, 0); 2],
            });
            clusters.len() - 1
        });
        let c = &mut clusters[i];
        // Normals from the two sides of a wall point opposite ways: align before adding.
        c.normal += d.normal * c.normal.dot(d.normal).signum();
        c.sums[slot].0 += d.position;
        c.sums[slot].1 += 1;
    }
    clusters
        .iter()
        .map(|c| {
            let slot = usize::from(c.sums[1].1 > c.sums[0].1);
            let (sum, n) = c.sums[slot];
            KeyLocation {
                kind: [KeyKind::Door, KeyKind::Window][slot],
                position: sum / n as f32,
                normal: c.normal.normalize_or_zero(),
            }
        })
        .collect()
}

/// Reads key locations: `kind,x,y,z[,nx,nz]` per line, `kind` `door` or `window`, an optional
/// header; a missing normal is zero. Errors are [`Error::Load`] naming the file and line.
pub fn read_key_locations(path: impl AsRef<Path>) -> Result<Vec<KeyLocation>> {
    let name = path.as_ref().display().to_string();
    let text = std::fs::read_to_string(path.as_ref())
        .map_err(|e| Error::load(&name, format!("cannot read the key location file: {e}")))?;
    crate::csv::records(&text)
        .map(|(line, f)| {
            let bad = |m: String| {
                Error::load_at(&name, line, format!("expected kind,x,y,z[,nx,nz]: {m}"))
            };
            let kind = match f[0].to_ascii_lowercase().as_str() {
                "door" => KeyKind::Door,
                "window" => KeyKind::Window,
                other => return Err(bad(format!("kind `{other}` is not door or window"))),
            };
            if f.len() != 4 && f.len() != 6 {
                return Err(bad(format!("found {} fields", f.len())));
            }
            let v = crate::csv::numbers::<3>(&f[1..4]).map_err(bad)?;
            let normal = if f.len() == 6 {
                let n = crate::csv::numbers::<2>(&f[4..6]).map_err(bad)?;
                Vec3::new(n[0], 0.0, n[1])
                    .try_normalize()
                    .ok_or_else(|| bad("the normal nx,nz is zero".into()))?
            } else {
                Vec3::ZERO
            };
            Ok(KeyLocation {
                kind,
                position: Vec3::from(v),
                normal,
            })
        })
        .collect()
}

/// Areas (rooms, outdoor zones) as a label per node.
#[derive(Clone, Debug, PartialEq)]
pub struct Areas {
    /// Area of each node, `0..count`.
    pub of_node: Vec<u32>,
    pub count: u32,
    /// Per area: whether its nodes are under a roof.
    pub indoor: Vec<bool>,
}

impl Areas {
    /// The areas as `waypoint,area,indoor` lines (indoor `1` or `0`) with a header, as
    /// [`read_areas`] reads them.
    #[must_use]
    pub fn to_csv(&self) -> String {
        let mut s = String::from("waypoint,area,indoor\n");
        for (i, &a) in self.of_node.iter().enumerate() {
            let indoor = self.indoor.get(a as usize).copied().unwrap_or(false);
            s += &format!("{i},{a},{}\n", u8::from(indoor));
        }
        s
    }
}

/// How [`find_areas`] splits the graph.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AreaParams {
    /// The upward ray starts this far above the node: 1 m.
    pub lift: f32,
    /// A node is indoor when something blocking fire lies within this distance above the
    /// lifted point: 8 m.
    pub roof_reach: f32,
    /// An edge across a door's wall whose midpoint lies within this horizontal distance of
    /// the door (|dy| < 2 m) is a portal between areas: 1 m.
    pub portal_radius: f32,
    /// Outdoor zones are cut into tiles at most this wide in x and z: 20 m.
    pub cell: f32,
}

impl AreaParams {
    #[must_use]
    pub const fn standard() -> AreaParams {
        AreaParams {
            lift: 1.0,
            roof_reach: 8.0,
            portal_radius: 1.0,
            cell: 20.0,
        }
    }

    /// Finite positive metres (at most 1e4).
    pub fn validate(&self) -> Result<()> {
        check_metres(
            &[
                ("lift", self.lift),
                ("roof_reach", self.roof_reach),
                ("portal_radius", self.portal_radius),
                ("cell", self.cell),
            ],
            1e4,
        )
    }
}

impl Default for AreaParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// Disjoint sets over `0..n` (union by index, path halving).
fn find(parent: &mut [u32], mut i: u32) -> u32 {
    while parent[i as usize] != i {
        parent[i as usize] = parent[parent[i as usize] as usize];
        i = parent[i as usize];
    }
    i
}

/// Components of the nodes joined by the edges `join` accepts, as a representative per node.
fn components(graph: &NavGraph, join: impl Fn(usize, u32, u32) -> bool) -> Vec<u32> {
    let mut parent: Vec<u32> = (0..graph.len() as u32).collect();
    for (k, e) in graph.edges().iter().enumerate() {
        if join(k, e.a, e.b) {
            let (ra, rb) = (find(&mut parent, e.a), find(&mut parent, e.b));
            parent[ra.max(rb) as usize] = ra.min(rb);
        }
    }
    (0..graph.len() as u32)
        .map(|i| find(&mut parent, i))
        .collect()
}

/// Areas found from the graph and geometry (the "membership" characteristic: rooms and
/// outdoor zones):
///
/// 1. A node is *indoor* when a segment from `lift` above it, `roof_reach` long straight up,
///    meets something that blocks fire (a roof, a ceiling, a bridge deck); one batch.
/// 2. Edges joining an indoor and an outdoor node, and *portals* (edges crossing a door's
///    wall with their midpoint within `portal_radius` of the door), are cut; the connected components of
///    the rest are the rooms and the outdoor regions.
/// 3. An outdoor region is cut into compact zones: its bounding box is divided into the
///    fewest equal tiles no wider than `cell`, and the region's nodes in one tile that are
///    connected within it form one zone.
///
/// Areas are numbered in the order of their lowest node.
pub fn find_areas(
    engine: &Engine,
    scene: &Scene,
    graph: &NavGraph,
    keys: &[KeyLocation],
    p: &AreaParams,
) -> Result<Areas> {
    p.validate()?;
    let n = graph.len();
    limits::check_size(
        "area nodes",
        n as u64,
        limits::MAX_WAYPOINTS,
        "use a smaller graph",
    )?;
    let up: Vec<Segment> = graph
        .nodes()
        .iter()
        .map(|&q| Segment::new(q + Vec3::Y * p.lift, q + Vec3::Y * (p.lift + p.roof_reach)))
        .collect();
    let occ = engine.occluded(scene, &up, Mask::FIRE)?;
    let indoor: Vec<bool> = (0..n).map(|i| occ.get(i)).collect();
    let nodes = graph.nodes();
    let portal: Vec<bool> = graph
        .edges()
        .iter()
        .map(|e| {
            let (a, b) = (nodes[e.a as usize], nodes[e.b as usize]);
            keys.iter().any(|k| passes_door(a, b, k, p.portal_radius))
        })
        .collect();
    let joins = |k: usize, a: u32, b: u32| !portal[k] && indoor[a as usize] == indoor[b as usize];
    let region = components(graph, joins);
    let tile = outdoor_tiles(nodes, &region, &indoor, p.cell);
    let zone = components(graph, |k, a, b| {
        joins(k, a, b) && tile[a as usize] == tile[b as usize]
    });
    let mut label = vec![u32::MAX; n];
    let mut of_node = Vec::with_capacity(n);
    let mut area_indoor = Vec::new();
    for (i, &z) in zone.iter().enumerate() {
        if label[z as usize] == u32::MAX {
            label[z as usize] = area_indoor.len() as u32;
            area_indoor.push(indoor[i]);
        }
        of_node.push(label[z as usize]);
    }
    Ok(Areas {
        of_node,
        count: area_indoor.len() as u32,
        indoor: area_indoor,
    })
}

/// Whether the edge `a`-`b` is a portal through door `k`: its midpoint lies within `radius`
/// of the door (|dy| < 2 m) and its ends on opposite sides of the door's wall (any such edge
/// when the door has no normal). The nodes in a doorway thus join the room on their side.
fn passes_door(a: Vec3, b: Vec3, k: &KeyLocation, radius: f32) -> bool {
    let side = |q: Vec3| (q - k.position).dot(k.normal) > 0.0;
    k.kind == KeyKind::Door
        && near_horizontally(0.5 * (a + b), k.position, radius)
        && (k.normal == Vec3::ZERO || side(a) != side(b))
}

/// Step 3 of [`find_areas`]: the tile of each outdoor node within its region's bounding box
/// (indoor nodes: tile 0).
fn outdoor_tiles(nodes: &[Vec3], region: &[u32], indoor: &[bool], cell: f32) -> Vec<(u32, u32)> {
    let mut boxes = vec![(Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)); nodes.len()];
    for (&q, &r) in nodes.iter().zip(region) {
        let b = &mut boxes[r as usize];
        *b = (b.0.min(q), b.1.max(q));
    }
    let axis = |x: f32, lo: f32, hi: f32| {
        let tiles = ((hi - lo) / cell).ceil().max(1.0);
        (((x - lo) / (hi - lo).max(f32::MIN_POSITIVE) * tiles) as u32).min(tiles as u32 - 1)
    };
    (0..nodes.len())
        .map(|i| {
            let (lo, hi) = boxes[region[i] as usize];
            let q = nodes[i];
            match indoor[i] {
                true => (0, 0),
                false => (axis(q.x, lo.x, hi.x), axis(q.z, lo.z, hi.z)),
            }
        })
        .collect()
}

/// Reads areas: `waypoint,area[,indoor]` per line (an optional header; `indoor` `1`/`0`,
/// `false` where absent), every waypoint of `0..nodes` exactly once and the areas numbered
/// `0..count` without gaps. Errors are [`Error::Load`] naming the file and, where one is to
/// blame, the line.
pub fn read_areas(path: impl AsRef<Path>, nodes: usize) -> Result<Areas> {
    let name = path.as_ref().display().to_string();
    limits::check_size(
        "area nodes",
        nodes as u64,
        limits::MAX_WAYPOINTS,
        "use a smaller graph",
    )?;
    let text = std::fs::read_to_string(path.as_ref())
        .map_err(|e| Error::load(&name, format!("cannot read the area file: {e}")))?;
    let mut of_node = vec![u32::MAX; nodes];
    let mut indoor_of: Vec<Option<(bool, usize)>> = vec![None; nodes];
    for (line, f) in crate::csv::records(&text) {
        let bad = |m: String| {
            Error::load_at(&name, line, format!("expected waypoint,area[,indoor]: {m}"))
        };
        if f.len() != 2 && f.len() != 3 {
            return Err(bad(format!("found {} fields", f.len())));
        }
        let index = |s: &str, what: &str| {
            s.parse::<u32>()
                .ok()
                .filter(|&v| (v as usize) < nodes)
                .ok_or_else(|| bad(format!("{what} `{s}` is not an integer in 0..{nodes}")))
        };
        let (w, a) = (index(f[0], "waypoint")?, index(f[1], "area")?);
        let indoor = match f.get(2).copied() {
            None | Some("0") => false,
            Some("1") => true,
            Some(x) => return Err(bad(format!("indoor `{x}` is not 0 or 1"))),
        };
        if of_node[w as usize] != u32::MAX {
            return Err(bad(format!("waypoint {w} is listed twice")));
        }
        of_node[w as usize] = a;
        match indoor_of[a as usize] {
            Some((i, first)) if i != indoor => {
                return Err(bad(format!(
                    "area {a} was marked indoor={} on line {first}",
                    u8::from(i)
                )))
            }
            Some(_) => {}
            None => indoor_of[a as usize] = Some((indoor, line)),
        }
    }
    if let Some(w) = of_node.iter().position(|&a| a == u32::MAX) {
        return Err(Error::load(
            &name,
            format!("waypoint {w} has no area; list all {nodes} waypoints"),
        ));
    }
    let count = of_node.iter().max().map_or(0, |&m| m + 1);
    if let Some(a) = indoor_of[..count as usize].iter().position(Option::is_none) {
        return Err(Error::load(
            &name,
            format!("area {a} has no waypoint; number the areas 0..{count} without gaps"),
        ));
    }
    let indoor = indoor_of[..count as usize]
        .iter()
        .map(|x| x.is_some_and(|(i, _)| i))
        .collect();
    Ok(Areas {
        of_node,
        count,
        indoor,
    })
}
