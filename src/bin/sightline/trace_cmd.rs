//! `sightline trace`: the first hit along each segment of a CSV file, written as CSV.

use crate::args::{self, SceneArgs};
use crate::AnyResult;
use clap::ValueEnum;
use glam::Vec3;
use sightline::{Hit, Mask, Ray, Segment};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Rays per batch: bigger files go in batches with a progress bar.
const BATCH: usize = 1 << 20;

#[derive(Clone, Copy, ValueEnum)]
pub enum MaskArg {
    /// Concealment: everything that blocks sight.
    Sight,
    /// Cover: everything that blocks fire.
    Fire,
}

#[derive(clap::Args)]
pub struct Args {
    #[arg(long)]
    segments: PathBuf,
    #[arg(long, value_enum, default_value_t = MaskArg::Sight)]
    mask: MaskArg,
    #[arg(long)]
    out: PathBuf,
}

/// Traces every segment of `a.segments` and writes `hit,distance,triangle` rows to `a.out`.
pub fn command(scene: &SceneArgs, a: &Args) -> AnyResult<()> {
    let segs = sightline::trace::read_segments(&a.segments)?;
    let (s, e) = args::open(scene)?;
    let mask = match a.mask {
        MaskArg::Sight => Mask::SIGHT,
        MaskArg::Fire => Mask::FIRE,
    };
    let t = std::time::Instant::now();
    let rays = segment_rays(&segs);
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
    write_hits(&a.out, &hits, &segs)?;
    let blocked = hits.iter().filter(|h| h.is_some()).count();
    eprintln!(
        "{} segments, {blocked} blocked, in {:.3} s ({:.2} M rays/s) -> {}",
        segs.len(),
        secs,
        segs.len() as f64 / secs.max(1e-9) / 1e6,
        a.out.display()
    );
    Ok(())
}

/// The first hit between the ends: a closest-hit ray bounded at the segment's end. A
/// zero-length segment crosses nothing: it keeps a placeholder ray with no length (t_max 0)
/// so rows stay aligned, and is reported as no hit.
fn segment_rays(segs: &[Segment]) -> Vec<Ray> {
    segs.iter()
        .map(|s| {
            let d = s.end() - s.start();
            if d == Vec3::ZERO {
                Ray::new(s.start(), Vec3::X, 0.0)
            } else {
                Ray::new(s.start(), d, 1.0)
            }
        })
        .collect()
}

/// One `hit,distance,triangle` row per segment (`0,,` where nothing blocks it).
fn write_hits(out: &Path, hits: &[Option<Hit>], segs: &[Segment]) -> AnyResult<()> {
    let mut w =
        BufWriter::new(std::fs::File::create(out).map_err(|e| format!("{}: {e}", out.display()))?);
    writeln!(w, "hit,distance,triangle")?;
    for (h, seg) in hits.iter().zip(segs) {
        match h {
            Some(h) => writeln!(w, "1,{},{}", h.t * seg.length(), h.triangle)?,
            None => writeln!(w, "0,,")?,
        }
    }
    w.flush()?;
    Ok(())
}
