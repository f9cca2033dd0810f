//! `sightline`: the command-line tool.

mod picture;
mod stats;

use clap::{Parser, Subcommand, ValueEnum};
use glam::Vec3;
use sightline::scene::{self, procedural, LoadOptions, UpAxis, Winding};
use sightline::viewshed::{viewshed, CellState, ViewshedParams};
use sightline::{Engine, Fusion, Mask, Scene};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "sightline",
    version,
    about = "GPU line-of-sight for tactical AI"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Width of every picture's map in pixels (the legend panel is added beside it).
    #[arg(long, global = true, default_value_t = picture::DEFAULT_WIDTH)]
    width: u32,
    /// Print the GPU work counted in the run (submissions, waits, bytes uploaded and read
    /// back, buffers and textures created) as the last line on stderr.
    #[arg(long, global = true)]
    stats: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum BackendArg {
    /// The GPU if the adapter is a real GPU; the CPU when there is none or only a software
    /// rasterizer (lavapipe, llvmpipe, SwiftShader, WARP), which is slower than the CPU backend.
    Auto,
    Gpu,
    Cpu,
}

#[derive(Clone, Copy, ValueEnum)]
enum MaskArg {
    /// Concealment: everything that blocks sight.
    Sight,
    /// Cover: everything that blocks fire.
    Fire,
}

#[derive(clap::Args)]
struct SceneArgs {
    /// A built-in scene (rock, village, sniper, urban) or a mesh file (.obj, .gltf, .glb).
    #[arg(long, default_value = "village")]
    scene: String,
    /// Seed of a built-in scene.
    #[arg(long, default_value_t = 1)]
    seed: u64,
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
    backend: BackendArg,
    /// With `--backend cpu`: fuse the triangle test's `a * b + c` as a contracting GPU compiler
    /// may (the first or the last product of each sum), to see what a real GPU may change.
    #[arg(long, value_enum)]
    fused: Option<FusedArg>,
}

#[derive(Clone, Copy, ValueEnum)]
enum FusedArg {
    First,
    Last,
}

/// How a nav graph is made: generated at a spacing, connected from given nodes, or loaded.
#[derive(clap::Args)]
struct NavArgs {
    /// Node grid spacing in metres.
    #[arg(long, default_value_t = 2.0)]
    spacing: f32,
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
    fn costs(&self) -> sightline::nav::CostParams {
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
    fn graph(&self, engine: &Engine, scene: &Scene) -> AnyResult<sightline::nav::NavGraph> {
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
enum PostureArg {
    Standing,
    Crouching,
    Prone,
}

impl PostureArg {
    fn posture(self) -> sightline::agent::Posture {
        use sightline::agent::Posture;
        match self {
            PostureArg::Standing => Posture::Standing,
            PostureArg::Crouching => Posture::Crouching,
            PostureArg::Prone => Posture::Prone,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum CoverMaskArg {
    /// Protection from fire: fire-blocking triangles (glass counts, foliage does not).
    Cover,
    /// Hidden from sight: sight-blocking triangles (foliage counts, glass does not).
    Concealment,
}

impl CoverMaskArg {
    fn mask(self) -> Mask {
        match self {
            CoverMaskArg::Cover => Mask::FIRE,
            CoverMaskArg::Concealment => Mask::SIGHT,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum MethodArg {
    /// The dense search (default).
    Dense,
    /// Darken, Morgan and Paull's sensor grid.
    SensorGrid,
}

#[derive(Subcommand)]
enum Command {
    /// Trace segments from a CSV file (x0,y0,z0,x1,y1,z1 per line); write hit,distance,triangle.
    Trace {
        #[command(flatten)]
        scene: SceneArgs,
        #[arg(long)]
        segments: PathBuf,
        #[arg(long, value_enum, default_value_t = MaskArg::Sight)]
        mask: MaskArg,
        #[arg(long)]
        out: PathBuf,
    },
    /// The scene from straight above, as every picture draws it under its results: ground
    /// shaded by height and slope, walls dark, roofs and bridges hatched, water and foliage.
    Map {
        #[command(flatten)]
        scene: SceneArgs,
        /// Draw only this part of the scene: X0,Z0,X1,Z1 in metres (default: all of it).
        #[arg(long, value_parser = parse_area, allow_hyphen_values = true)]
        area: Option<[f32; 4]>,
        #[arg(long)]
        png: PathBuf,
    },
    /// The ground cells (0.25 m) an observer's eye sees, as a top-down picture.
    Viewshed {
        #[command(flatten)]
        scene: SceneArgs,
        /// Eye position X,Y,Z in metres (default: the built-in scene's suggested observer).
        #[arg(long, value_parser = parse_vec3, allow_hyphen_values = true)]
        observer: Option<Vec3>,
        /// Cell size in metres.
        #[arg(long, default_value_t = 0.25)]
        cell: f32,
        #[arg(long)]
        png: Option<PathBuf>,
    },
    /// Where an agent hides from observers (Darken, Morgan and Paull's sensor grid), over the cover field.
    Cover {
        #[command(flatten)]
        scene: SceneArgs,
        /// The agent's feet X,Y,Z in metres.
        #[arg(long, value_parser = parse_vec3, allow_hyphen_values = true, required_unless_present = "agents")]
        agent: Option<Vec3>,
        /// Many agents: a file of their feet (CSV `x,y,z` a line, or a JSON array), all
        /// answered against the same observers in one batch (the dense method). `--json`
        /// gives `answers` (one per agent, in file order), `seconds` (the queries) and
        /// `setup_seconds` (building the walk surface).
        #[arg(long, conflicts_with = "agent")]
        agents: Option<PathBuf>,
        /// An observer's eye X,Y,Z (repeat for several).
        #[arg(long = "observer", value_parser = parse_vec3, allow_hyphen_values = true, required = true)]
        observers: Vec<Vec3>,
        #[arg(long, value_enum, default_value_t = CoverMaskArg::Cover)]
        mask: CoverMaskArg,
        /// Use the built-in village's waypoints as extra path points (village only; the
        /// sensor-grid method).
        #[arg(long)]
        waypoints: bool,
        /// How to search: every 0.25 m cell walked around obstacles (dense), or Darken, Morgan and Paull's
        /// 51-sensor grid (sensor-grid). Both check the whole body and the intervis humanoid.
        #[arg(long, value_enum, default_value_t = MethodArg::Dense)]
        method: MethodArg,
        /// Search radius of the dense method, metres.
        #[arg(long, default_value_t = 20.0)]
        radius: f32,
        #[arg(long)]
        png: Option<PathBuf>,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Precompute a nav graph and its waypoint tables (line of sight, intervis) into one
    /// versioned binary file.
    Precompute {
        #[command(flatten)]
        scene: SceneArgs,
        #[command(flatten)]
        nav: NavArgs,
        /// Pairs farther apart (metres) are not visible and not stored.
        #[arg(long)]
        range: Option<f32>,
        /// Compute one slice of the observer rows, K/N (merge the N files with `sightline merge`).
        #[arg(long)]
        shard: Option<String>,
        /// Also measure intervis records (exposed pixels, occlusion, contrast) per ordered pair
        /// within range; pair with --range, as every ordered pair is rendered.
        #[arg(long)]
        intervis: bool,
        /// The target's posture in the intervis records.
        #[arg(long, value_enum, default_value_t = PostureArg::Standing)]
        posture: PostureArg,
        #[arg(long)]
        out: PathBuf,
        /// Also write a top-down PNG of what this waypoint sees.
        #[arg(long, requires = "png")]
        view: Option<usize>,
        #[arg(long)]
        png: Option<PathBuf>,
    },
    /// A nav graph: nodes on every floor, edges an upright body can walk (report, JSON, CSV,
    /// picture).
    Navgraph {
        #[command(flatten)]
        scene: SceneArgs,
        #[command(flatten)]
        nav: NavArgs,
        /// Write the graph as JSON ({"nodes": [[x,y,z],...], "edges": [[a,b],...], ...}).
        #[arg(long)]
        json: Option<PathBuf>,
        /// Write the graph as CSV (node,x,y,z and edge,a,b,kinds,length rows).
        #[arg(long)]
        csv: Option<PathBuf>,
        /// Draw nodes and edges over the scene, coloured by height.
        #[arg(long)]
        png: Option<PathBuf>,
        /// Draw only this part of the scene: X0,Z0,X1,Z1 in metres.
        #[arg(long, value_parser = parse_area, allow_hyphen_values = true)]
        area: Option<[f32; 4]>,
    },
    /// A team searches from where it stands: where a threat probably is (the Threat
    /// Probability Model) and where each member looks, as a heat map over the scene.
    Tpm {
        #[command(flatten)]
        scene: SceneArgs,
        #[command(flatten)]
        nav: NavArgs,
        /// Use this table's nav graph, line of sight and intervis (from `sightline precompute`)
        /// instead of generating a graph and tracing views.
        #[arg(long)]
        table: Option<PathBuf>,
        /// A team member at the node nearest X,Z (or X,Y,Z); repeat for each member.
        #[arg(long = "member", value_parser = parse_place, allow_hyphen_values = true, required = true)]
        members: Vec<Vec3>,
        /// Seconds to simulate.
        #[arg(long, default_value_t = 30.0)]
        seconds: f32,
        /// Seconds a gaze is held (one search frame).
        #[arg(long, default_value_t = 1.0)]
        frame: f32,
        /// Angular sectors around each member.
        #[arg(long, default_value_t = 8)]
        sectors: u32,
        /// Field of view of a gaze, degrees.
        #[arg(long, default_value_t = 60.0)]
        fov: f32,
        /// Seed of the tie-breaking between equally threatening sectors.
        #[arg(long, default_value_t = 1)]
        search_seed: u64,
        /// The posture a threat is assumed to hold.
        #[arg(long, value_enum, default_value_t = PostureArg::Standing)]
        posture: PostureArg,
        /// Heat map: hot (red) where a threat is likely, cold (blue) where the team looked.
        #[arg(long)]
        png: Option<PathBuf>,
        /// The final map and every frame's gazes as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// A fireteam (or a squad of them) moves from one place to another: team path, staggered
    /// look-ahead plans, destinations, visual search; run.json and pictures in --out.
    Fireteam {
        #[command(flatten)]
        scene: SceneArgs,
        #[command(flatten)]
        nav: NavArgs,
        #[command(flatten)]
        args: fireteam_cmd::Args,
    },
    /// Where a threat that went out of sight presumably is (its last sighting extrapolated,
    /// corrected by the nav graph and by line of sight) and where to aim for it to reappear
    /// (van der Sterren, Terrain Reasoning for 3D Action Games).
    Predict {
        #[command(flatten)]
        scene: SceneArgs,
        #[command(flatten)]
        nav: NavArgs,
        #[command(flatten)]
        args: predict_cmd::Args,
    },
    /// Terrain reasoning on the nav graph (van der Sterren, Terrain Reasoning for 3D Action
    /// Games): sniping, ambush, combat, stronghold or sentry ratings per waypoint, as CSV and a
    /// heat map.
    Terrain {
        #[command(flatten)]
        scene: SceneArgs,
        #[command(flatten)]
        nav: NavArgs,
        #[command(flatten)]
        args: terrain_cmd::Args,
    },
    /// Where to take cover near a point: a ring node graph built around it on the walkable
    /// ground, scored against the threats, and the route to the best node (Slant Six Games,
    /// Situational Awareness: Terrain Reasoning for Tactical Shooter AI); a summary, JSON and a
    /// picture.
    Ringgraph {
        #[command(flatten)]
        scene: SceneArgs,
        #[command(flatten)]
        args: ring_cmd::Args,
    },
    /// Summarise and verify a table file.
    Inspect {
        file: PathBuf,
        /// Write a top-down PNG of what this waypoint sees.
        #[arg(long, requires = "png")]
        view: Option<usize>,
        #[arg(long)]
        png: Option<PathBuf>,
    },
    /// Join shard files into the file a single run would have written.
    Merge {
        #[arg(long)]
        out: PathBuf,
        #[arg(required = true)]
        shards: Vec<PathBuf>,
    },
    /// The highest posture hidden from every observer, per 0.25 m cell around a point.
    CoverField {
        #[command(flatten)]
        scene: SceneArgs,
        /// Centre of the square, X,Y,Z in metres.
        #[arg(long, value_parser = parse_vec3, allow_hyphen_values = true)]
        center: Vec3,
        #[arg(long = "observer", value_parser = parse_vec3, allow_hyphen_values = true, required = true)]
        observers: Vec<Vec3>,
        #[arg(long, value_enum, default_value_t = CoverMaskArg::Cover)]
        mask: CoverMaskArg,
        /// Side of the square in metres.
        #[arg(long, default_value_t = 40.0)]
        size: f32,
        #[arg(long, default_value_t = 0.25)]
        cell: f32,
        #[arg(long)]
        png: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
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

fn parse_vec3(s: &str) -> Result<Vec3, String> {
    match parse_numbers(s)?[..] {
        [x, y, z] => Ok(Vec3::new(x, y, z)),
        _ => Err(format!("expected three numbers X,Y,Z, got '{s}'")),
    }
}

/// X,Z (y left NaN: the nearest node by horizontal distance) or X,Y,Z.
fn parse_place(s: &str) -> Result<Vec3, String> {
    match parse_numbers(s)?[..] {
        [x, z] => Ok(Vec3::new(x, f32::NAN, z)),
        [x, y, z] => Ok(Vec3::new(x, y, z)),
        _ => Err(format!("expected X,Z or X,Y,Z in metres, got '{s}'")),
    }
}

fn parse_area(s: &str) -> Result<[f32; 4], String> {
    match parse_numbers(s)?[..] {
        [x0, z0, x1, z1] if x0 != x1 && z0 != z1 => Ok([x0, z0, x1, z1]),
        _ => Err(format!(
            "expected four numbers X0,Z0,X1,Z1 (two opposite corners), got '{s}'"
        )),
    }
}

fn main() -> ExitCode {
    quiet_device_select();
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = Cli::parse();
    let show = cli.stats;
    let code = match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    };
    if show {
        eprintln!("{}", stats::line());
    }
    code
}

/// Mesa's device-select Vulkan layer asks Wayland which GPU drives the display; without a
/// session (`XDG_RUNTIME_DIR` unset or not a directory: a server, a container, CI) libwayland
/// prints "error: XDG_RUNTIME_DIR is invalid" twice per adapter query, though nothing is
/// wrong and there is no display to choose by. Turn the layer off then (its documented switch),
/// before any thread or Vulkan call exists.
fn quiet_device_select() {
    let session = std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|d| Path::new(&d).is_dir());
    if !session && std::env::var_os("NODEVICE_SELECT").is_none() {
        std::env::set_var("NODEVICE_SELECT", "1");
    }
}

const BATCH: usize = 1 << 20;

pub type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Loads or generates the scene and builds its BVH (timed, so query timings exclude it).
fn load_scene(a: &SceneArgs) -> AnyResult<Scene> {
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

fn engine(b: BackendArg, fused: Option<FusedArg>) -> AnyResult<&'static Engine> {
    let e = match (b, fused) {
        (BackendArg::Auto | BackendArg::Gpu, Some(_)) => {
            return Err("--fused applies to the CPU backend: add --backend cpu".into())
        }
        (BackendArg::Auto, None) => Engine::headless(),
        (BackendArg::Gpu, None) => Engine::headless_gpu(Default::default())?,
        (BackendArg::Cpu, None) => Engine::cpu(),
        (BackendArg::Cpu, Some(FusedArg::First)) => Engine::cpu_fused(Fusion::First),
        (BackendArg::Cpu, Some(FusedArg::Last)) => Engine::cpu_fused(Fusion::Last),
    };
    // One line: the backend, and the adapter or why there is none.
    eprintln!(
        "backend: {:?}{}",
        e.backend(),
        match (e.adapter_name(), e.backend_reason()) {
            (Some(n), _) => format!(" on {n}"),
            (None, Some(why)) => format!(": {why}"),
            (None, None) => String::new(),
        }
    );
    Ok(stats::keep(e))
}

fn run(cli: Cli) -> AnyResult<()> {
    picture::set_width(cli.width)?;
    match cli.command {
        Command::Trace {
            scene,
            segments,
            mask,
            out,
        } => {
            let segs = sightline::trace::read_segments(&segments)?;
            let s = load_scene(&scene)?;
            let e = engine(scene.backend, scene.fused)?;
            let mask = match mask {
                MaskArg::Sight => Mask::SIGHT,
                MaskArg::Fire => Mask::FIRE,
            };
            let t = std::time::Instant::now();
            // The first hit between the ends: a closest-hit ray bounded at the segment's end.
            // A zero-length segment crosses nothing: it keeps a placeholder ray with no length
            // (t_max 0) so rows stay aligned, and is reported as no hit.
            let rays: Vec<_> = segs
                .iter()
                .map(|s| {
                    let d = s.end() - s.start();
                    if d == Vec3::ZERO {
                        sightline::Ray::new(s.start(), Vec3::X, 0.0)
                    } else {
                        sightline::Ray::new(s.start(), d, 1.0)
                    }
                })
                .collect();
            // Big files go in batches of 1M with a progress bar.
            let bar = indicatif::ProgressBar::new(rays.len() as u64);
            if rays.len() <= BATCH {
                bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
            }
            // Pipelined: the GPU traces one batch while the last one is read back.
            let mut hits = Vec::with_capacity(rays.len());
            e.closest_hit_stream(&s, rays.chunks(BATCH), mask, |_, batch| {
                bar.inc(batch.len() as u64);
                hits.extend(batch);
                Ok(())
            })?;
            bar.finish_and_clear();
            let secs = t.elapsed().as_secs_f64();
            let mut w = BufWriter::new(
                std::fs::File::create(&out).map_err(|e| format!("{}: {e}", out.display()))?,
            );
            writeln!(w, "hit,distance,triangle")?;
            for (h, seg) in hits.iter().zip(&segs) {
                match h {
                    Some(h) => writeln!(w, "1,{},{}", h.t * seg.length(), h.triangle)?,
                    None => writeln!(w, "0,,")?,
                }
            }
            w.flush()?;
            let blocked = hits.iter().filter(|h| h.is_some()).count();
            eprintln!(
                "{} segments, {blocked} blocked, in {:.3} s ({:.2} M rays/s) -> {}",
                segs.len(),
                secs,
                segs.len() as f64 / secs.max(1e-9) / 1e6,
                out.display()
            );
            Ok(())
        }
        Command::Cover {
            scene,
            agent,
            agents,
            observers,
            mask,
            waypoints,
            method,
            radius,
            png,
            json,
        } => {
            let s = load_scene(&scene)?;
            let e = engine(scene.backend, scene.fused)?;
            if let Some(file) = agents {
                if method != MethodArg::Dense || waypoints {
                    return Err("--agents answers a batch with the dense method: drop --method sensor-grid and --waypoints".into());
                }
                return cover_cmd::dense_batch(
                    &e,
                    &s,
                    &file,
                    observers,
                    mask.mask(),
                    radius,
                    png.as_deref(),
                    json,
                );
            }
            let agent = agent.ok_or("give --agent X,Y,Z or --agents FILE")?;
            if method == MethodArg::Dense {
                if waypoints {
                    return Err("--waypoints belongs to --method sensor-grid (the dense search walks the grid itself)".into());
                }
                return cover_cmd::dense(
                    &e,
                    &s,
                    agent,
                    observers,
                    mask.mask(),
                    radius,
                    png.as_deref(),
                    json,
                );
            }
            let waypoints = if waypoints {
                procedural::village_waypoints()
            } else {
                Vec::new()
            };
            cover_cmd::cover(
                &e,
                &s,
                agent,
                observers,
                mask.mask(),
                waypoints,
                png.as_deref(),
                json,
            )
        }
        Command::CoverField {
            scene,
            center,
            observers,
            mask,
            size,
            cell,
            png,
            json,
        } => {
            let s = load_scene(&scene)?;
            let e = engine(scene.backend, scene.fused)?;
            cover_cmd::cover_field(
                &e,
                &s,
                center,
                &observers,
                mask.mask(),
                size,
                cell,
                png.as_deref(),
                json,
            )
        }
        Command::Precompute {
            scene,
            nav,
            range,
            shard,
            intervis,
            posture,
            out,
            view,
            png,
        } => {
            let s = load_scene(&scene)?;
            let e = engine(scene.backend, scene.fused)?;
            let shard = shard
                .as_deref()
                .map(sightline::tables::parse_shard)
                .transpose()?;
            let graph = nav.graph(&e, &s)?;
            let params = sightline::tables::PrecomputeParams {
                spacing: nav.spacing,
                range,
                posture: posture.posture(),
                ..Default::default()
            };
            let ip = sightline::intervis::measure::IntervisParams::standard();
            let mut measure = sightline::tables::intervis_measure(
                &e,
                &s,
                params.los.eye_height,
                params.posture,
                &ip,
            );
            let measure: Option<&mut sightline::tables::MeasureFn<'_>> =
                if intervis { Some(&mut measure) } else { None };
            let table = tables_cmd::precompute(
                &e,
                &s,
                &scene.scene,
                &graph,
                &params,
                shard,
                measure,
                &out,
            )?;
            if let (Some(v), Some(p)) = (view, png) {
                tables_cmd::view_png(&table, v, Some((&e, &s)), &p)?;
            }
            Ok(())
        }
        Command::Navgraph {
            scene,
            nav,
            json,
            csv,
            png,
            area,
        } => {
            let s = load_scene(&scene)?;
            let e = engine(scene.backend, scene.fused)?;
            let g = nav.graph(&e, &s)?;
            if let Some(path) = json {
                std::fs::write(
                    &path,
                    serde_json::to_string(&stats::with_counters(g.to_json()))?,
                )
                .map_err(|err| format!("{}: {err}", path.display()))?;
                eprintln!("wrote {}", path.display());
            }
            if let Some(path) = csv {
                std::fs::write(&path, g.to_csv())
                    .map_err(|err| format!("{}: {err}", path.display()))?;
                eprintln!("wrote {}", path.display());
            }
            if let Some(path) = png {
                nav_cmd::picture(&e, &s, &g, area, &path)?;
            }
            Ok(())
        }
        Command::Fireteam { scene, nav, args } => {
            let s = load_scene(&scene)?;
            let e = engine(scene.backend, scene.fused)?;
            let table = args
                .table()
                .map(|t| tables_cmd::load_for_scene(t, &s))
                .transpose()?;
            let graph = match &table {
                Some(t) => sightline::nav::NavGraph::from_table(t, &nav.costs())?
                    .ok_or("the table holds no nav graph: recompute it with `sightline precompute`")
                    .map_err(Into::into),
                None => nav.graph(&e, &s),
            };
            fireteam_cmd::run(&e, &s, &scene.scene, scene.seed, graph, table, &args)
        }
        Command::Tpm {
            scene,
            nav,
            table,
            members,
            seconds,
            frame,
            sectors,
            fov,
            search_seed,
            posture,
            png,
            json,
        } => {
            let s = load_scene(&scene)?;
            let e = engine(scene.backend, scene.fused)?;
            let search = sightline::tpm::SearchParams {
                sectors,
                fov_degrees: fov,
                frame_seconds: frame,
            };
            let view = sightline::tpm::ViewParams {
                posture: posture.posture(),
                ..Default::default()
            };
            let table = table
                .as_deref()
                .map(|t| tables_cmd::load_for_scene(t, &s))
                .transpose()?;
            let (graph, sight) = match &table {
                Some(t) => (
                    sightline::nav::NavGraph::from_table(t, &nav.costs())?.ok_or(
                        "the table holds no nav graph (written before nav graphs were stored): \
                         recompute it with `sightline precompute`",
                    )?,
                    tpm_cmd::Sight::Table(t),
                ),
                None => (nav.graph(&e, &s)?, tpm_cmd::Sight::Engine(&e, &s)),
            };
            tpm_cmd::run(
                &e,
                &s,
                &graph,
                sight,
                &members,
                seconds,
                search,
                view,
                search_seed,
                png.as_deref(),
                json.as_deref(),
            )
        }
        Command::Predict { scene, nav, args } => {
            let s = load_scene(&scene)?;
            let e = engine(scene.backend, scene.fused)?;
            predict_cmd::run(&e, &s, &nav.graph(&e, &s)?, &args)
        }
        Command::Terrain { scene, nav, args } => {
            let s = load_scene(&scene)?;
            let e = engine(scene.backend, scene.fused)?;
            terrain_cmd::run(&e, &s, nav.graph(&e, &s)?, &args)
        }
        Command::Ringgraph { scene, args } => {
            args.check()?;
            let s = load_scene(&scene)?;
            let e = engine(scene.backend, scene.fused)?;
            ring_cmd::run(&e, &s, &args)
        }
        Command::Inspect { file, view, png } => {
            tables_cmd::inspect(&file)?;
            if let (Some(v), Some(p)) = (view, png) {
                tables_cmd::view_png(&sightline::tables::MappedTable::open(&file)?, v, None, &p)?;
            }
            Ok(())
        }
        Command::Merge { out, shards } => tables_cmd::merge(&shards, &out),
        Command::Map { scene, area, png } => {
            let s = load_scene(&scene)?;
            let e = engine(scene.backend, scene.fused)?;
            let (lo, hi) = match area {
                Some([x0, z0, x1, z1]) => (
                    Vec3::new(x0.min(x1), 0.0, z0.min(z1)),
                    Vec3::new(x0.max(x1), 0.0, z0.max(z1)),
                ),
                None => s.bounds().ok_or("the scene is empty: nothing to draw")?,
            };
            let t = std::time::Instant::now();
            let c =
                picture::Canvas::over_box(&e, &s, lo, hi, format!("{} from above", scene.scene))?;
            println!(
                "{} x {} pixels of {:.3} m in {:.3} s",
                c.img.width(),
                c.img.height(),
                1.0 / c.px(),
                t.elapsed().as_secs_f64()
            );
            c.save(&png)?;
            Ok(())
        }
        Command::Viewshed {
            scene,
            observer,
            cell,
            png,
        } => {
            let s = load_scene(&scene)?;
            let observer = match observer.or_else(|| procedural::default_observer(&scene.scene)) {
                Some(o) => o,
                None => return Err("give --observer X,Y,Z (metres) for a mesh file".into()),
            };
            let e = engine(scene.backend, scene.fused)?;
            let params = ViewshedParams {
                cell,
                ..Default::default()
            };
            let v = viewshed(&e, &s, observer, &params)?;
            println!(
                "viewshed from {observer}: {} x {} cells of {cell} m, {} ground cells, {} visible, {} hidden; \
                 {} rays in {:.3} s ({:.2} M rays/s)",
                v.width,
                v.height,
                v.state.iter().filter(|c| matches!(c, CellState::Visible | CellState::Hidden)).count(),
                v.count(CellState::Visible),
                v.count(CellState::Hidden),
                v.rays,
                v.elapsed.as_secs_f64(),
                v.rays_per_second() / 1e6
            );
            if let Some(path) = png {
                let title = format!("viewshed, {} from {observer}", scene.scene);
                picture::viewshed(&e, &s, &v, &title)?.save(&path)?;
            }
            Ok(())
        }
    }
}

mod cover_cmd;
mod fireteam_cmd;
mod nav_cmd;
mod predict_cmd;
mod ring_cmd;
mod tables_cmd;
mod terrain_cmd;
mod tpm_cmd;
