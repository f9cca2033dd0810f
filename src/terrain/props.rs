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
use std::path::Path;

pub use super::keys::{find_key_locations, read_key_locations, KeyKind, KeyLocation, KeyParams};

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
pub(super) fn near_horizontally(p: Vec3, q: Vec3, radius: f32) -> bool {
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
pub(super) fn check_metres(values: &[(&'static str, f32)], max: f32) -> Result<()> {
    match values.iter().find(|(_, x)| !(*x > 0.0 && *x <= max)) {
        Some(&(name, x)) => Err(Error::param(name, x, format!("metres in (0, {max}]"))),
        None => Ok(()),
    }
}

/// Rejects NaN, infinite or far-away points with [`Error::NonFiniteQuery`].
pub(super) fn check_points(points: &[Vec3]) -> Result<()> {
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
