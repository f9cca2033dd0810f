//! `sightline viewshed`: the ground cells an observer's eye sees, reported and drawn top-down.

use crate::args::{self, SceneArgs};
use crate::{picture, AnyResult};
use glam::Vec3;
use sightline::scene::procedural;
use sightline::viewshed::{viewshed, CellState, ViewshedParams};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Eye position X,Y,Z in metres (default: the built-in scene's suggested observer).
    #[arg(long, value_parser = args::parse_vec3, allow_hyphen_values = true)]
    observer: Option<Vec3>,
    /// Cell size in metres.
    #[arg(long, default_value_t = 0.25)]
    cell: f32,
    #[arg(long)]
    png: Option<PathBuf>,
}

/// Computes the viewshed from `a.observer` (or the built-in scene's observer), prints its
/// counts and writes the picture when `a.png` is given.
pub fn command(scene: &SceneArgs, a: &Args) -> AnyResult<()> {
    let s = args::load_scene(scene)?;
    let observer = match a
        .observer
        .or_else(|| procedural::default_observer(&scene.scene))
    {
        Some(o) => o,
        None => return Err("give --observer X,Y,Z (metres) for a mesh file".into()),
    };
    let e = args::engine(scene)?;
    let cell = a.cell;
    let params = ViewshedParams {
        cell,
        ..Default::default()
    };
    let v = viewshed(e, &s, observer, &params)?;
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
    if let Some(path) = &a.png {
        let title = format!("viewshed, {} from {observer}", scene.scene);
        picture::viewshed(e, &s, &v, &title)?.save(path)?;
    }
    Ok(())
}
