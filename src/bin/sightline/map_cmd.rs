//! `sightline map`: the scene from straight above, as every picture draws it under its results.

use crate::args::{self, SceneArgs};
use crate::{picture, AnyResult};
use glam::Vec3;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Draw only this part of the scene: X0,Z0,X1,Z1 in metres (default: all of it).
    #[arg(long, value_parser = args::parse_area, allow_hyphen_values = true)]
    area: Option<[f32; 4]>,
    #[arg(long)]
    png: PathBuf,
}

/// Draws the scene (or `a.area` of it) from above into `a.png` and reports its size and time.
pub fn command(scene: &SceneArgs, a: &Args) -> AnyResult<()> {
    let (s, e) = args::open(scene)?;
    let (lo, hi) = match a.area {
        Some([x0, z0, x1, z1]) => (
            Vec3::new(x0.min(x1), 0.0, z0.min(z1)),
            Vec3::new(x0.max(x1), 0.0, z0.max(z1)),
        ),
        None => s.bounds().ok_or("the scene is empty: nothing to draw")?,
    };
    let t = std::time::Instant::now();
    let c = picture::Canvas::over_box(e, &s, lo, hi, format!("{} from above", scene.scene))?;
    println!(
        "{} x {} pixels of {:.3} m in {:.3} s",
        c.img.width(),
        c.img.height(),
        1.0 / c.px(),
        t.elapsed().as_secs_f64()
    );
    c.save(&a.png)?;
    Ok(())
}
