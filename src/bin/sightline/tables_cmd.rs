//! `sightline precompute`, `inspect` and `merge`.

use crate::args::{self, NavArgs, PostureArg, SceneArgs};
use crate::picture::{legend::Key, palette, Canvas};
use crate::AnyResult;
use sightline::tables::{self, MappedTable, PrecomputeParams, Stage, TableFile};
use sightline::{Engine, Scene};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct PrecomputeArgs {
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
}

#[derive(clap::Args)]
pub struct InspectArgs {
    file: PathBuf,
    /// Write a top-down PNG of what this waypoint sees.
    #[arg(long, requires = "png")]
    view: Option<usize>,
    #[arg(long)]
    png: Option<PathBuf>,
}

/// `sightline precompute`: the nav graph's tables into `a.out`, and the view of one waypoint
/// when asked.
pub fn precompute_command(scene: &SceneArgs, nav: &NavArgs, a: &PrecomputeArgs) -> AnyResult<()> {
    let (s, e) = args::open(scene)?;
    let shard = a
        .shard
        .as_deref()
        .map(sightline::tables::parse_shard)
        .transpose()?;
    let graph = nav.graph(e, &s)?;
    let params = PrecomputeParams {
        spacing: nav.spacing,
        range: a.range,
        posture: a.posture.posture(),
        ..Default::default()
    };
    let ip = sightline::intervis::measure::IntervisParams::standard();
    let mut measure = tables::intervis_measure(e, &s, params.los.eye_height, params.posture, &ip);
    let measure: Option<&mut tables::MeasureFn<'_>> =
        if a.intervis { Some(&mut measure) } else { None };
    let table = precompute(e, &s, &scene.scene, &graph, &params, shard, measure, &a.out)?;
    if let (Some(v), Some(p)) = (a.view, &a.png) {
        view_png(&table, v, Some((e, &s)), p)?;
    }
    Ok(())
}

/// `sightline inspect`: the table's summary, and the view of one waypoint when asked.
pub fn inspect_command(a: &InspectArgs) -> AnyResult<()> {
    inspect(&a.file)?;
    if let (Some(v), Some(p)) = (a.view, &a.png) {
        view_png(&MappedTable::open(&a.file)?, v, None, p)?;
    }
    Ok(())
}

/// Line of sight (and intervis when `measure` is given) on the nav graph's nodes, with the
/// graph's edges stored beside them, with a progress bar (items done, per second, time left)
/// and, every ten seconds of the intervis stage, a log line with the same figures (for logs,
/// where the bar is not drawn); streams the table to `out` and returns it mapped.
#[allow(clippy::too_many_arguments)]
pub fn precompute(
    engine: &Engine,
    scene: &Scene,
    name: &str,
    graph: &sightline::nav::NavGraph,
    params: &PrecomputeParams,
    shard: Option<(u32, u32)>,
    measure: Option<&mut tables::MeasureFn<'_>>,
    out: &Path,
) -> AnyResult<MappedTable> {
    let bar = indicatif::ProgressBar::new(1);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg:>14} [{bar:40}] {pos}/{len} ({percent}%, {per_sec}, {eta} left)",
        )?
        .progress_chars("=> "),
    );
    let t = std::time::Instant::now();
    let mut log = Progress::default();
    let params = PrecomputeParams {
        waypoints: Some(graph.nodes().to_vec()),
        edges: Some(graph.edges().to_vec()),
        ..params.clone()
    };
    let table = tables::precompute_to_file(
        engine,
        scene,
        name,
        &params,
        shard,
        measure,
        out,
        |stage, done, total| {
            bar.set_message(match stage {
                Stage::Waypoints => "waypoints",
                Stage::LineOfSight => "line of sight",
                Stage::Intervis => "intervis",
            });
            if bar.length() != Some(total) {
                bar.reset();
                bar.set_length(total);
            }
            bar.set_position(done);
            if stage == Stage::Intervis {
                bar.suspend(|| log.pairs(done, total));
            }
        },
    )?;
    bar.finish_and_clear();
    eprintln!(
        "{} waypoints in {:.2} s -> {}",
        table.n(),
        t.elapsed().as_secs_f64(),
        out.display()
    );
    Ok(table)
}

/// Log lines of the intervis stage's progress: pairs done, pairs per second, time left, at
/// most every ten seconds and at the end.
#[derive(Default)]
struct Progress {
    start: Option<std::time::Instant>,
    last: Option<std::time::Instant>,
}

impl Progress {
    fn pairs(&mut self, done: u64, total: u64) {
        let now = std::time::Instant::now();
        let start = *self.start.get_or_insert(now);
        let due = self
            .last
            .is_none_or(|l| now - l >= std::time::Duration::from_secs(10));
        if !(due || done == total) || done == 0 {
            return;
        }
        self.last = Some(now);
        let secs = (now - start).as_secs_f64().max(1e-9);
        let rate = done as f64 / secs;
        let left = (total - done) as f64 / rate.max(1e-9);
        log::info!(
            "intervis: {done}/{total} pairs ({:.1} %), {rate:.0} pairs/s, {left:.0} s left",
            done as f64 * 100.0 / total.max(1) as f64
        );
    }
}

fn inspect(path: &Path) -> AnyResult<()> {
    let t = std::time::Instant::now();
    let (table, version) = TableFile::read_versioned(path)?;
    println!("{}", table.summary(version));
    println!(
        "read and verified in {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}

/// Streams the shards into `out` (see [`tables::merge_files`] for the memory it needs).
pub fn merge(inputs: &[PathBuf], out: &Path) -> AnyResult<()> {
    tables::merge_files(inputs, out)?;
    println!("merged {} shards -> {}", inputs.len(), out.display());
    Ok(())
}

/// Reads a table for use with `scene`, refusing one computed on other geometry.
pub fn load_for_scene(path: &Path, scene: &Scene) -> sightline::Result<TableFile> {
    let table = TableFile::read_from(path)?;
    table
        .check_scene(scene)
        .map_err(|e| sightline::Error::load(path.display(), e.to_string()))?;
    Ok(table)
}

/// One waypoint's view, top-down (Darken, McCue and Guerrero, figure 2): waypoints it sees in
/// yellow (by the target's contrast on the viridis scale when intervis is present), the rest
/// blue, the waypoint itself orange; over the scene when it is given (`inspect` has only the
/// table).
pub fn view_png(
    table: &MappedTable,
    from: usize,
    scene: Option<(&sightline::Engine, &sightline::Scene)>,
    path: &Path,
) -> AnyResult<()> {
    let n = table.n() as usize;
    if from >= n {
        return Err(format!(
            "--view {from}: the table has {n} waypoints (0..{})",
            n.saturating_sub(1)
        )
        .into());
    }
    let waypoints: Vec<_> = (0..table.n()).map(|i| table.waypoint(i)).collect();
    let (mut lo, mut hi) = (waypoints[0], waypoints[0]);
    for &w in &waypoints {
        lo = lo.min(w);
        hi = hi.max(w);
    }
    let size = (hi - lo).x.max((hi - lo).z) + 4.0;
    let centre = (lo + hi) * 0.5;
    let title = format!("waypoint {from}'s view");
    let mut canvas = match scene {
        Some((e, s)) => Canvas::over(e, s, centre, size, title)?,
        None => Canvas::blank(centre, size, format!("{title} (scene not drawn)")),
    };
    let max_c = (0..table.intervis_len())
        .map(|e| table.intervis_entry(e).2.contrast)
        .fold(1e-6, f32::max);
    for (j, &w) in waypoints.iter().enumerate() {
        let colour = if j == from {
            continue;
        } else if !table.visible(from as u32, j as u32) {
            palette::BLUE
        } else if let Some(rec) = table.intervis(from as u32, j as u32) {
            palette::viridis(0.5 + 0.5 * (rec.contrast / max_c).clamp(0.0, 1.0))
        } else {
            palette::YELLOW
        };
        canvas.disc(w, 2.5, colour);
    }
    canvas.disc(waypoints[from], 6.0, palette::ORANGE);
    canvas.key(Key::disc(palette::ORANGE, format!("waypoint {from}")));
    canvas.key(Key::disc(palette::YELLOW, "waypoint it sees"));
    if table.intervis_len() > 0 {
        canvas.key(Key::ramp(
            "contrast of a seen target",
            "0",
            format!("{max_c:.2}"),
        ));
    }
    canvas.key(Key::disc(palette::BLUE, "waypoint it does not see"));
    canvas.save(path)?;
    Ok(())
}
