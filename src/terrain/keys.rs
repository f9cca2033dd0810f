//! Key locations, doors and windows, found in the geometry or read from a file: the key
//! locations of van der Sterren's sniping quality F ("overlooks many key locations", *Terrain
//! Reasoning for 3D Action Games*), the door flags of movement types and the portals between
//! areas. Every ray goes through the [`Engine`] in a few batched calls.

use super::props::{check_metres, near_horizontally, MAX_RAYS};
use crate::limits;
use crate::nav::NavGraph;
use crate::{Engine, Error, Mask, Ray, Result, Scene, Segment};
use glam::Vec3;
use std::collections::HashSet;
use std::path::Path;

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
        .collect::<Result<Vec<_>>>()
        .and_then(|keys| {
            if keys.is_empty() {
                Err(Error::load(
                    &name,
                    "no key locations in the file: give one kind,x,y,z[,nx,nz] line per door \
                     or window, or leave the option out to find them in the geometry",
                ))
            } else {
                Ok(keys)
            }
        })
}
