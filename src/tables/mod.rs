//! Precomputed waypoint tables (Darken, McCue and Guerrero Tables 2-3, van der Sterren "CPU Load, Lookup
//! Tables, and Memory Consumption"): line of sight between every pair of waypoints, and the
//! intervis record of every ordered pair, computed offline and looked up in-game.
//!
//! - [`waypoints`]: waypoints sampled on walkable ground ([`sample_waypoints`]) or read from a
//!   CSV/JSON file ([`read_waypoints`]).
//! - [`los`]: [`LosTable`], one bit per unordered pair plus flattened "sees" lists
//!   ([`compute_los`]): on a GPU engine the `los_table` kernel derives the pairs itself
//!   (`los_gpu.rs`), on the CPU engine bounded chunks of segments go through
//!   [`Engine::occluded`].
//! - [`intervis`]: [`IntervisTable`], records of ordered pairs where something is exposed, from
//!   a caller-supplied measurement ([`MeasureFn`]).
//! - [`edges`]: the nav graph's movement [`Edge`]s, stored beside the tables so one set of
//!   waypoints serves line of sight, intervis and movement (`sightline::nav` builds them).
//! - [`file`](mod@file): the `.slt` file ([`TableFile::write_to`], [`TableFile::read_from`]), byte
//!   offsets in its docs; [`layout`] the strict reader's checks; [`packed`] the 28-byte
//!   intervis entry and its error bounds.
//! - [`writer`]: [`TableWriter`], section by section with a running checksum;
//!   [`mapped`]: [`MappedTable`], queries straight from a memory-mapped file.
//!
//! Scale-out: [`precompute`] with `shard = Some((K, N))` computes the observer rows
//! `i % N == K` only; [`merge`] (in memory) and [`merge_files`] (streaming) join the `N` shard
//! files into a file byte-identical to a single run. [`precompute_to_file`] streams a run to
//! disk. `deploy/` runs the shards as a Kubernetes Indexed Job or a Slurm array.

mod bits;
pub mod edges;
pub mod file;
pub mod intervis;
pub mod layout;
pub mod los;
mod los_gpu;
pub mod mapped;
mod merge;
pub mod packed;
pub mod waypoints;
pub mod writer;

pub use edges::{check_edges, Edge, EdgeKinds};
pub use file::{FORMAT_VERSION, MAGIC};
pub use intervis::{
    compute_intervis, intervis_measure, IntervisFn, IntervisTable, MeasureFn, MEASURE_BATCH,
};
pub use los::{compute_los, compute_los_shard, LosParams, LosTable};
/// The head of the `los_table` kernel's input, for the shader layout test; not part of the API.
#[doc(hidden)]
pub use los_gpu::LosCall as GpuLosCall;
pub use mapped::MappedTable;
pub use merge::{merge, merge_files};
pub use packed::quantise;
pub use waypoints::{
    parse_waypoints_csv, parse_waypoints_json, read_waypoints, sample_floors, sample_waypoints,
    waypoint_digest, FloorSample, SampleParams,
};
pub use writer::TableWriter;

use crate::agent::Posture;

use crate::scene::Mask;
use crate::{Engine, Error, Result, Scene};
use glam::Vec3;

/// What a table was computed with (stored in the file header).
#[derive(Clone, Debug, PartialEq)]
pub struct TableMeta {
    /// The scene's name (for `inspect`; not checked against anything).
    pub scene: String,
    /// The [`Scene::geometry_digest`] of the scene the table was computed on; `None` in files
    /// written before tables recorded it (format versions 1 and 2).
    pub scene_digest: Option<u64>,
    /// Eye height above each waypoint (m).
    pub eye_height: f32,
    /// Pairs farther apart are not visible and not measured; `None` for unlimited.
    pub range: Option<f32>,
    /// Grid spacing the waypoints were sampled at; `None` when they came from a file.
    pub spacing: Option<f32>,
    /// Steepest standable ground for sampling (radians).
    pub max_slope: f32,
    /// What blocks sight.
    pub mask: Mask,
    /// The target's posture in the intervis records (standing unless measured otherwise).
    pub posture: Posture,
}

/// A table as stored in a `.slt` file: parameters, waypoints, line of sight, intervis if it
/// was computed, and the nav graph's edges between the waypoints if one was stored. A shard
/// file holds only its rows (see [`LosTable`]) but the whole edge list.
#[derive(Clone, Debug, PartialEq)]
pub struct TableFile {
    pub meta: TableMeta,
    pub waypoints: Vec<Vec3>,
    pub los: LosTable,
    pub intervis: Option<IntervisTable>,
    /// Movement edges between the waypoints, sorted by `(a, b)` ([`check_edges`]).
    pub edges: Option<Vec<Edge>>,
}

/// Parameters of [`precompute`].
#[derive(Clone, Debug, PartialEq)]
pub struct PrecomputeParams {
    /// Waypoint grid spacing (m) when sampling.
    pub spacing: f32,
    /// Steepest standable ground (radians) when sampling.
    pub max_slope: f32,
    /// Waypoints to use instead of sampling (from [`read_waypoints`]).
    pub waypoints: Option<Vec<Vec3>>,
    /// Eye height, sight mask, chunk size.
    pub los: LosParams,
    /// Pairs farther apart (m) are not visible and not measured; `None` for unlimited.
    pub range: Option<f32>,
    /// The target's posture the intervis measurement uses (recorded in the file).
    pub posture: Posture,
    /// Movement edges between the waypoints to store with the tables (a nav graph's).
    pub edges: Option<Vec<Edge>>,
}

impl Default for PrecomputeParams {
    /// Darken, McCue and Guerrero's setup: 2 m spacing, 45 degree slopes, 1.7 m eyes, unlimited
    /// range, standing targets.
    fn default() -> Self {
        PrecomputeParams {
            spacing: 2.0,
            max_slope: std::f32::consts::FRAC_PI_4,
            waypoints: None,
            los: LosParams::standard(),
            range: None,
            posture: Posture::Standing,
            edges: None,
        }
    }
}

/// The stage [`precompute`] reports progress for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Waypoints,
    LineOfSight,
    Intervis,
}

/// Waypoints (sampled, or `params.waypoints`), line of sight, and intervis when `measure` is
/// given, for every row or for shard `(K, N)`'s rows. `progress(stage, done, total)`.
///
/// Shards sample their own waypoints; run every shard on the same backend so the samples
/// agree bit for bit ([`merge`] refuses shards whose waypoints differ).
pub fn precompute(
    engine: &Engine,
    scene: &Scene,
    scene_name: &str,
    params: &PrecomputeParams,
    shard: Option<(u32, u32)>,
    measure: Option<&mut MeasureFn<'_>>,
    mut progress: impl FnMut(Stage, u64, u64),
) -> Result<TableFile> {
    let shard = shard.unwrap_or((0, 1));
    let (meta, waypoints) = prepare(engine, scene, scene_name, params, shard, &mut progress)?;
    let los = compute_los_shard(
        engine,
        scene,
        &waypoints,
        &params.los,
        params.range,
        shard,
        |d, t| progress(Stage::LineOfSight, d, t),
    )?;
    let intervis = match measure {
        Some(m) => Some(compute_intervis(
            &waypoints,
            params.range,
            shard,
            crate::intervis::measure::pairs_per_call(engine),
            m,
            |d, t| progress(Stage::Intervis, d, t),
        )?),
        None => None,
    };
    Ok(TableFile {
        meta,
        waypoints,
        los,
        intervis,
        edges: params.edges.clone(),
    })
}

/// [`precompute`] streamed to the file `path`: the line-of-sight bits are held (`n^2 / 16`
/// bytes), the sees lists and intervis records go to the file as they are produced, never
/// all in memory. Returns the written file, mapped ([`MappedTable`]); its bytes equal
/// [`precompute`]'s table written with [`TableFile::write_to`].
#[allow(clippy::too_many_arguments)]
pub fn precompute_to_file(
    engine: &Engine,
    scene: &Scene,
    scene_name: &str,
    params: &PrecomputeParams,
    shard: Option<(u32, u32)>,
    measure: Option<&mut MeasureFn<'_>>,
    path: impl AsRef<std::path::Path>,
    mut progress: impl FnMut(Stage, u64, u64),
) -> Result<MappedTable> {
    let shard = shard.unwrap_or((0, 1));
    let (meta, waypoints) = prepare(engine, scene, scene_name, params, shard, &mut progress)?;
    let los = los::trace_rows(
        engine,
        scene,
        &waypoints,
        &params.los,
        params.range,
        shard,
        |d, t| progress(Stage::LineOfSight, d, t),
    )?;
    let mut w = TableWriter::create(
        path.as_ref(),
        &meta,
        &waypoints,
        shard,
        measure.is_some(),
        params.edges.is_some(),
    )?;
    w.write_los(&los)?;
    drop(los);
    if let Some(m) = measure {
        intervis::measure_rows(
            &waypoints,
            params.range,
            (shard, crate::intervis::measure::pairs_per_call(engine)),
            m,
            |d, t| progress(Stage::Intervis, d, t),
            |i, j, r| w.push_intervis(i, j, &r),
        )?;
    }
    if let Some(e) = &params.edges {
        w.write_edges(e)?;
    }
    w.finish_file()?;
    MappedTable::open(path)
}

/// `len` waypoints as a `u32` count, refused over [`crate::limits::MAX_WAYPOINTS`].
pub(crate) fn waypoint_count(len: usize) -> Result<u32> {
    u32::try_from(len)
        .ok()
        .filter(|&n| u64::from(n) <= crate::limits::MAX_WAYPOINTS)
        .ok_or_else(|| {
            Error::too_large(
                "waypoint count",
                len as u64,
                crate::limits::MAX_WAYPOINTS,
                "use a larger --spacing, or split the level",
            )
        })
}

/// The waypoints (sampled or given) and the header of a run; checks the edges.
fn prepare(
    engine: &Engine,
    scene: &Scene,
    scene_name: &str,
    params: &PrecomputeParams,
    shard: (u32, u32),
    progress: &mut impl FnMut(Stage, u64, u64),
) -> Result<(TableMeta, Vec<Vec3>)> {
    check_shard(shard)?;
    progress(Stage::Waypoints, 0, 1);
    let waypoints = match &params.waypoints {
        Some(w) => w.clone(),
        None => sample_waypoints(engine, scene, params.spacing, params.max_slope)?,
    };
    progress(Stage::Waypoints, 1, 1);
    if waypoints.len() < 2 {
        return Err(Error::InvalidInput(format!(
            "{} waypoint(s): a table relates pairs, so it needs at least 2; give more waypoints \
             or, when sampling, a smaller spacing",
            waypoints.len()
        )));
    }
    if let Some(e) = &params.edges {
        check_edges(e, &waypoints).map_err(|e| {
            Error::InvalidInput(format!(
                "the nav graph's edges do not fit the waypoints: {e}"
            ))
        })?;
    }
    let meta = TableMeta {
        scene: scene_name.to_string(),
        scene_digest: Some(scene.geometry_digest()),
        eye_height: params.los.eye_height,
        range: params.range,
        spacing: params.waypoints.is_none().then_some(params.spacing),
        max_slope: params.max_slope,
        mask: params.los.mask,
        posture: params.posture,
    };
    Ok((meta, waypoints))
}

/// Parses `"K/N"` (as `--shard` takes it) into `(K, N)`: `0 <= K < N <= MAX_SHARDS`.
pub fn parse_shard(text: &str) -> Result<(u32, u32)> {
    let allowed = format!(
        "K/N with 0 <= K < N <= {} (limits::MAX_SHARDS), e.g. 0/4",
        crate::limits::MAX_SHARDS
    );
    let bad = || Error::param("--shard", text, allowed.clone());
    let (k, n) = text.split_once('/').ok_or_else(bad)?;
    let (k, n): (u64, u64) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if n > u64::from(crate::limits::MAX_SHARDS) || k >= n {
        return Err(bad());
    }
    Ok((k as u32, n as u32))
}

/// Refuses a shard `(K, N)` outside `0 <= K < N <= MAX_SHARDS`.
pub(crate) fn check_shard((k, n): (u32, u32)) -> Result<()> {
    if n == 0 || k >= n || n > crate::limits::MAX_SHARDS {
        return Err(Error::InvalidInput(format!(
            "shard {k}/{n}: need 0 <= K < N <= {} (K/N, e.g. 0/4)",
            crate::limits::MAX_SHARDS
        )));
    }
    Ok(())
}

/// The check behind [`TableFile::check_scene`]: the message says what to do.
pub(crate) fn check_scene_digest(
    meta: &TableMeta,
    scene: &Scene,
) -> std::result::Result<(), String> {
    let now = scene.geometry_digest();
    match meta.scene_digest {
        Some(d) if d == now => Ok(()),
        Some(d) => Err(format!(
            "the table was computed on other geometry (scene digest {d:016x}, this scene's is \
             {now:016x}): the scene changed since; recompute the table with `sightline precompute`"
        )),
        None => Err(
            "the table does not record the scene it was computed on (written by an older \
             sightline), so it cannot be checked against this scene; recompute it with \
             `sightline precompute`"
                .into(),
        ),
    }
}

impl TableFile {
    /// Refuses a table computed on other geometry than `scene` (moved, added or removed
    /// triangles, changed materials; see [`Scene::geometry_digest`]), or one that does not
    /// record its scene, with an error saying to recompute it.
    pub fn check_scene(&self, scene: &Scene) -> Result<()> {
        check_scene_digest(&self.meta, scene).map_err(Error::InvalidInput)
    }

    /// A human-readable description (for `sightline inspect`) of the table as read from a file
    /// of format `version` ([`TableFile::read_versioned`] tells it).
    #[must_use]
    pub fn summary(&self, version: u32) -> String {
        self.describe_setup(version) + &self.describe_contents()
    }

    /// The summary's first lines: the format, the scene, the waypoints, the digests, the
    /// parameters and the shard.
    fn describe_setup(&self, version: u32) -> String {
        let m = &self.meta;
        let n = self.waypoints.len() as u64;
        let (k, shards) = self.los.shard();
        let mut s = format!("sightline table, format version {version}\n");
        s += &format!(
            "scene: {}\n",
            if m.scene.is_empty() {
                "(unnamed)"
            } else {
                &m.scene
            }
        );
        s += &format!(
            "waypoints: {n} ({}), digest {:016x}\n",
            match m.spacing {
                Some(sp) => format!(
                    "sampled at {sp} m, max slope {:.1} deg",
                    m.max_slope.to_degrees()
                ),
                None => "given: a nav graph's nodes or a file".into(),
            },
            waypoint_digest(&self.waypoints)
        );
        s += &match m.scene_digest {
            Some(d) => format!("scene geometry digest: {d:016x}\n"),
            None => "scene geometry digest: not recorded (older file)\n".into(),
        };
        s += &format!(
            "eye height: {} m, range: {}, mask bits: {}\n",
            m.eye_height,
            m.range.map_or("unlimited".into(), |r| format!("{r} m")),
            m.mask.bits()
        );
        s += &if shards == 1 {
            "shard: complete table\n".to_string()
        } else {
            format!(
                "shard: {k}/{shards} (rows i % {shards} == {k}); merge with `sightline merge`\n"
            )
        };
        s
    }

    /// The summary's last lines: line of sight, the sees lists, intervis and the nav graph,
    /// with their sizes.
    fn describe_contents(&self) -> String {
        let m = &self.meta;
        let n = self.waypoints.len() as u64;
        let mb = |b: u64| b as f64 / 1e6;
        let pairs = self.los.bit_count();
        let vis = self.los.visible_pairs();
        let mut s = String::new();
        let pct = if pairs == 0 {
            0.0
        } else {
            100.0 * vis as f64 / pairs as f64
        };
        s += &format!(
            "line of sight: {pairs} pairs, {vis} visible ({pct:.1} %), bits {:.3} MB\n",
            mb(pairs.div_ceil(8))
        );
        if self.los.is_complete() {
            let (o, l) = self.los.sees_flat();
            let mean = if n == 0 {
                0.0
            } else {
                l.len() as f64 / n as f64
            };
            s += &format!(
                "sees lists: {:.3} MB, mean {mean:.1} waypoints seen\n",
                mb(8 * o.len() as u64 + 4 * l.len() as u64)
            );
        }
        s += &match &self.intervis {
            Some(t) => format!(
                "intervis: {} records with something exposed ({} targets), {:.3} MB\n",
                t.len(),
                m.posture.name(),
                mb((packed::ENTRY_BYTES * t.len()) as u64)
            ),
            None => "intervis: not computed\n".into(),
        };
        s += &match &self.edges {
            Some(e) => format!(
                "nav graph: {} edges, {:.3} MB\n",
                e.len(),
                mb(16 * e.len() as u64)
            ),
            None => "nav graph: not stored\n".into(),
        };
        s
    }
}
