//! The arguments many commands share (the scene, the backend, the nav graph, postures and
//! masks), their value parsers, and turning them into a loaded scene and an engine.

use crate::{nav_cmd, stats, AnyResult};
use clap::ValueEnum;
use glam::Vec3;
use sightline::scene::{self, procedural, LoadOptions, UpAxis, Winding};
use sightline::{Engine, EngineOptions, Fusion, Mask, RayQuery, Scene};
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, ValueEnum)]
pub enum BackendArg {
    /// The GPU if the adapter is a real GPU; the CPU when there is none or only a software
    /// rasterizer (lavapipe, llvmpipe, SwiftShader, WARP), which is slower than the CPU backend.
    Auto,
    Gpu,
    Cpu,
}

#[derive(clap::Args)]
pub struct SceneArgs {
    /// A built-in scene (rock, village, sniper, urban) or a mesh file (.obj, .gltf, .glb).
    #[arg(long, default_value = "village")]
    pub scene: String,
    /// Seed of a built-in scene.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Size knob of a built-in scene (triangles grow with its square).
    #[arg(long, default_value_t = 1)]
    detail: u32,
    /// The mesh file is Z-up (converted to the engine's +Y up).
    #[arg(long)]
    z_up: bool,
    /// Which way the mesh file's fronts are wound: auto (flip a clockwise file, and any part
    /// that is inside out, and say so), ccw (OpenGL, Recast, glTF) or cw (DirectX).
    #[arg(long, default_value = "auto")]
    winding: Winding,
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// With `--backend cpu`: fuse the triangle test's `a * b + c` as a contracting GPU compiler
    /// may (the first or the last product of each sum), to see what a real GPU may change.
    #[arg(long, value_enum)]
    pub fused: Option<FusedArg>,
    /// How the GPU backend walks the scene: auto (hardware ray queries where a GPU offers
    /// them, else the compute kernels, also on a software adapter such as lavapipe, whose own
    /// walk is slower), on (ray queries or an error) or off (compute kernels).
    /// SIGHTLINE_RAY_QUERY sets what auto means.
    #[arg(long, value_enum, default_value_t = RayQueryArg::Auto)]
    pub ray_query: RayQueryArg,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RayQueryArg {
    Auto,
    On,
    Off,
}

impl From<RayQueryArg> for RayQuery {
    fn from(a: RayQueryArg) -> RayQuery {
        match a {
            RayQueryArg::Auto => RayQuery::Auto,
            RayQueryArg::On => RayQuery::On,
            RayQueryArg::Off => RayQuery::Off,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum FusedArg {
    First,
    Last,
}

/// How a nav graph is made: generated at a spacing, connected from given nodes, or loaded.
#[derive(clap::Args)]
pub struct NavArgs {
    /// Node grid spacing in metres.
    #[arg(long, default_value_t = 2.0)]
    pub spacing: f32,
    /// Connect these nodes (CSV x,y,z per line or JSON [[x,y,z], ...]) instead of sampling a grid.
    #[arg(long, conflicts_with = "graph")]
    waypoints: Option<PathBuf>,
    /// Use this graph (JSON or CSV nodes and edges, as `navgraph --json/--csv` writes) as it is.
    #[arg(long)]
    graph: Option<PathBuf>,
    /// Do not search for openings narrower than the grid (doorways between grid lines).
    #[arg(long)]
    no_passages: bool,
    /// Keep only the largest connected component (the rest is reported, then dropped): no
    /// nodes on roofs or in closed rooms nobody can reach.
    #[arg(long)]
    largest_only: bool,
    /// Cost multiplier of stairs edges.
    #[arg(long, default_value_t = 1.5)]
    stairs_cost: f32,
    /// Cost multiplier of edges through water.
    #[arg(long, default_value_t = 3.0)]
    water_cost: f32,
    /// Cost multiplier of edges only a crouching body fits along.
    #[arg(long, default_value_t = 2.0)]
    crouch_cost: f32,
}

impl NavArgs {
    pub fn costs(&self) -> sightline::nav::CostParams {
        sightline::nav::CostParams {
            stairs: self.stairs_cost,
            water: self.water_cost,
            crouch: self.crouch_cost,
        }
    }
    fn params(&self) -> sightline::nav::NavParams {
        let mut p = sightline::nav::NavParams::with_spacing(self.spacing);
        p.passages = !self.no_passages;
        p
    }
    /// The graph these arguments describe, reported on the terminal.
    pub fn graph(&self, engine: &Engine, scene: &Scene) -> AnyResult<sightline::nav::NavGraph> {
        let params = self.params();
        let source = if let Some(g) = &self.graph {
            nav_cmd::Source::File(g)
        } else if let Some(w) = &self.waypoints {
            nav_cmd::Source::Connect(sightline::tables::read_waypoints(w)?, &params)
        } else {
            nav_cmd::Source::Generate(&params)
        };
        let g = nav_cmd::graph(engine, scene, source, &self.costs())?;
        if !self.largest_only {
            return Ok(g);
        }
        let label = g.components().label;
        let (kept, _) = g.subgraph(|i| label[i as usize] == 0, &self.costs())?;
        eprintln!("--largest-only: kept {} of {} nodes", kept.len(), g.len());
        Ok(kept)
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum PostureArg {
    Standing,
    Crouching,
    Prone,
}

impl PostureArg {
    pub fn posture(self) -> sightline::agent::Posture {
        use sightline::agent::Posture;
        match self {
            PostureArg::Standing => Posture::Standing,
            PostureArg::Crouching => Posture::Crouching,
            PostureArg::Prone => Posture::Prone,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum CoverMaskArg {
    /// Protection from fire: fire-blocking triangles (glass counts, foliage does not).
    Cover,
    /// Hidden from sight: sight-blocking triangles (foliage counts, glass does not).
    Concealment,
}

impl CoverMaskArg {
    pub fn mask(self) -> Mask {
        match self {
            CoverMaskArg::Cover => Mask::FIRE,
            CoverMaskArg::Concealment => Mask::SIGHT,
        }
    }
}

/// Comma-separated finite numbers within [`sightline::limits::MAX_COORDINATE`] metres.
fn parse_numbers(s: &str) -> Result<Vec<f32>, String> {
    let lim = sightline::limits::MAX_COORDINATE;
    s.split(',')
        .map(|p| match p.trim().parse::<f32>() {
            Ok(c) if c.is_finite() && c.abs() <= lim => Ok(c),
            Ok(c) => Err(format!(
                "'{p}' is {c}: coordinates must be finite metres within {lim:e}"
            )),
            Err(e) => Err(format!("'{p}': {e}")),
        })
        .collect()
}

pub fn parse_vec3(s: &str) -> Result<Vec3, String> {
    match parse_numbers(s)?[..] {
        [x, y, z] => Ok(Vec3::new(x, y, z)),
        _ => Err(format!("expected three numbers X,Y,Z, got '{s}'")),
    }
}

/// X,Z (y left NaN: the nearest node by horizontal distance) or X,Y,Z.
pub fn parse_place(s: &str) -> Result<Vec3, String> {
    match parse_numbers(s)?[..] {
        [x, z] => Ok(Vec3::new(x, f32::NAN, z)),
        [x, y, z] => Ok(Vec3::new(x, y, z)),
        _ => Err(format!("expected X,Z or X,Y,Z in metres, got '{s}'")),
    }
}

pub fn parse_area(s: &str) -> Result<[f32; 4], String> {
    match parse_numbers(s)?[..] {
        [x0, z0, x1, z1] if x0 != x1 && z0 != z1 => Ok([x0, z0, x1, z1]),
        _ => Err(format!(
            "expected four numbers X0,Z0,X1,Z1 (two opposite corners), got '{s}'"
        )),
    }
}

/// Loads or generates the scene and builds its BVH (timed, so query timings exclude it).
pub fn load_scene(a: &SceneArgs) -> AnyResult<Scene> {
    let scene = load_or_generate(a)?;
    let t = std::time::Instant::now();
    scene.tiers();
    eprintln!(
        "{}: {} triangles, BVH built in {:.3} s",
        a.scene,
        scene.triangle_count(),
        t.elapsed().as_secs_f64()
    );
    Ok(scene)
}

fn load_or_generate(a: &SceneArgs) -> AnyResult<Scene> {
    if procedural::NAMES.contains(&a.scene.as_str()) {
        return Ok(procedural::by_name(&a.scene, a.seed, a.detail)?);
    }
    if !Path::new(&a.scene).exists() {
        return Err(format!(
            "'{}' is neither a built-in scene ({}) nor an existing file",
            a.scene,
            procedural::NAMES.join(", ")
        )
        .into());
    }
    let opts = LoadOptions {
        up: if a.z_up { UpAxis::Z } else { UpAxis::Y },
        winding: a.winding,
        ..Default::default()
    };
    let (scene, report) = scene::load(&a.scene, &opts)?;
    eprintln!("{report}");
    Ok(scene)
}

/// The engine the backend arguments choose; one line on stderr says which backend runs, on
/// which adapter and how it walks the scene (or why the CPU backend was chosen).
pub fn engine(a: &SceneArgs) -> AnyResult<&'static Engine> {
    let options = EngineOptions {
        ray_query: a.ray_query.into(),
        ..Default::default()
    };
    let e = match (a.backend, a.fused) {
        (BackendArg::Auto | BackendArg::Gpu, Some(_)) => {
            return Err("--fused applies to the CPU backend: add --backend cpu".into())
        }
        (BackendArg::Cpu, _) if a.ray_query == RayQueryArg::On => {
            return Err("--ray-query on applies to the GPU backend: drop --backend cpu".into())
        }
        (BackendArg::Auto, None) => Engine::headless_with(options),
        (BackendArg::Gpu, None) => Engine::headless_gpu(options)?,
        (BackendArg::Cpu, None) => Engine::cpu(),
        (BackendArg::Cpu, Some(FusedArg::First)) => Engine::cpu_fused(Fusion::First),
        (BackendArg::Cpu, Some(FusedArg::Last)) => Engine::cpu_fused(Fusion::Last),
    };
    if a.ray_query == RayQueryArg::On && !e.uses_ray_query() {
        return Err(format!(
            "--ray-query on needs the GPU backend, and auto chose the CPU ({}): add --backend gpu",
            e.backend_reason().unwrap_or("no adapter")
        )
        .into());
    }
    let walk = match e.backend() {
        sightline::Backend::Gpu if e.uses_ray_query() => ", ray queries",
        sightline::Backend::Gpu => ", compute kernels",
        sightline::Backend::Cpu => "",
    };
    eprintln!(
        "backend: {:?}{}{walk}",
        e.backend(),
        match (e.adapter_name(), e.backend_reason()) {
            (Some(n), _) => format!(" on {n}"),
            (None, Some(why)) => format!(": {why}"),
            (None, None) => String::new(),
        }
    );
    Ok(stats::keep(e))
}

/// The scene `a` names, loaded (or generated) with its BVH, then the engine its backend
/// arguments choose; both report on stderr in that order.
pub fn open(a: &SceneArgs) -> AnyResult<(Scene, &'static Engine)> {
    let scene = load_scene(a)?;
    let engine = engine(a)?;
    Ok((scene, engine))
}
