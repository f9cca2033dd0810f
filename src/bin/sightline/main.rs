//! `sightline`: the command-line tool. This file parses the command line and hands each
//! subcommand to its module; [`args`] holds the arguments the commands share.

mod args;
mod picture;
mod stats;

mod cover_cmd;
mod fireteam_cmd;
mod map_cmd;
mod nav_cmd;
mod predict_cmd;
mod regions_cmd;
mod ring_cmd;
mod tables_cmd;
mod terrain_cmd;
mod tpm_cmd;
mod trace_cmd;
mod viewshed_cmd;

use args::{NavArgs, SceneArgs};
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

// `crate::parse_vec3` for the commands whose arguments name it so.
use args::parse_vec3;

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

#[derive(Subcommand)]
enum Command {
    /// Trace segments from a CSV file (x0,y0,z0,x1,y1,z1 per line); write hit,distance,triangle.
    Trace {
        #[command(flatten)]
        scene: SceneArgs,
        #[command(flatten)]
        args: trace_cmd::Args,
    },
    /// The scene from straight above, as every picture draws it under its results: ground
    /// shaded by height and slope, walls dark, roofs and bridges hatched, water and foliage.
    Map {
        #[command(flatten)]
        scene: SceneArgs,
        #[command(flatten)]
        args: map_cmd::Args,
    },
    /// The ground cells (0.25 m) an observer's eye sees, as a top-down picture.
    Viewshed {
        #[command(flatten)]
        scene: SceneArgs,
        #[command(flatten)]
        args: viewshed_cmd::Args,
    },
    /// Where an agent hides from observers (Darken, Morgan and Paull's sensor grid), over the cover field.
    Cover {
        #[command(flatten)]
        scene: SceneArgs,
        #[command(flatten)]
        args: cover_cmd::Args,
    },
    /// Precompute a nav graph and its waypoint tables (line of sight, intervis) into one
    /// versioned binary file.
    Precompute {
        #[command(flatten)]
        scene: SceneArgs,
        #[command(flatten)]
        nav: NavArgs,
        #[command(flatten)]
        args: tables_cmd::PrecomputeArgs,
    },
    /// A nav graph: nodes on every floor, edges an upright body can walk (report, JSON, CSV,
    /// picture).
    Navgraph {
        #[command(flatten)]
        scene: SceneArgs,
        #[command(flatten)]
        nav: NavArgs,
        #[command(flatten)]
        args: nav_cmd::Args,
    },
    /// A team searches from where it stands: where a threat probably is (the Threat
    /// Probability Model) and where each member looks, as a heat map over the scene.
    Tpm {
        #[command(flatten)]
        scene: SceneArgs,
        #[command(flatten)]
        nav: NavArgs,
        #[command(flatten)]
        args: tpm_cmd::Args,
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
        #[command(flatten)]
        args: tables_cmd::InspectArgs,
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
        #[command(flatten)]
        args: cover_cmd::FieldArgs,
    },
    /// Exact cover regions around a point (Morgan's shadow volumes): per posture, the
    /// connected areas where a body hides from every threat, their deepest points and routes
    /// there; a summary or JSON, GeoJSON and a picture.
    CoverRegions {
        #[command(flatten)]
        scene: SceneArgs,
        #[command(flatten)]
        args: regions_cmd::Args,
    },
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

pub type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

fn run(cli: Cli) -> AnyResult<()> {
    picture::set_width(cli.width)?;
    match cli.command {
        Command::Trace { scene, args } => trace_cmd::command(&scene, &args),
        Command::Map { scene, args } => map_cmd::command(&scene, &args),
        Command::Viewshed { scene, args } => viewshed_cmd::command(&scene, &args),
        Command::Cover { scene, args } => cover_cmd::command(&scene, &args),
        Command::CoverField { scene, args } => cover_cmd::field_command(&scene, &args),
        Command::CoverRegions { scene, args } => regions_cmd::command(&scene, &args),
        Command::Precompute { scene, nav, args } => {
            tables_cmd::precompute_command(&scene, &nav, &args)
        }
        Command::Navgraph { scene, nav, args } => nav_cmd::command(&scene, &nav, &args),
        Command::Tpm { scene, nav, args } => tpm_cmd::command(&scene, &nav, &args),
        Command::Fireteam { scene, nav, args } => fireteam_cmd::command(&scene, &nav, &args),
        Command::Predict { scene, nav, args } => predict_cmd::command(&scene, &nav, &args),
        Command::Terrain { scene, nav, args } => terrain_cmd::command(&scene, &nav, &args),
        Command::Ringgraph { scene, args: a } => {
            a.check()?;
            let (s, e) = args::open(&scene)?;
            ring_cmd::run(e, &s, &a)
        }
        Command::Inspect { args } => tables_cmd::inspect_command(&args),
        Command::Merge { out, shards } => tables_cmd::merge(&shards, &out),
    }
}
