//! Top-down pictures a person can read at a glance.

use image::{Rgb, RgbImage};
use sightline::viewshed::{CellState, Viewshed};

/// Visible ground bright yellow, hidden ground dark blue, both shaded by height; not ground
/// (roofs of cars, steep slopes, nothing) near-black; the observer a red ring. +X right, +Z down.
pub fn viewshed_png(v: &Viewshed) -> Result<RgbImage, String> {
    let side = sightline::limits::MAX_PICTURE_SIDE as usize;
    if v.width.max(v.height) > side {
        return Err(format!(
            "the viewshed is {} x {} cells, more than {side} a side for a picture: use a larger --cell",
            v.width, v.height
        ));
    }
    let scale = (512 / v.width.max(v.height)).max(1) as u32;
    let (lo, hi) = v
        .ground
        .iter()
        .filter(|g| g.is_finite())
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &g| {
            (a.min(g), b.max(g))
        });
    let shade = |g: f32| {
        if hi > lo {
            0.55 + 0.45 * (g - lo) / (hi - lo)
        } else {
            1.0
        }
    };
    let mut img = RgbImage::new(v.width as u32 * scale, v.height as u32 * scale);
    for (i, (&s, &g)) in v.state.iter().zip(&v.ground).enumerate() {
        let colour = match s {
            CellState::Visible => tint([250.0, 220.0, 60.0], shade(g)),
            CellState::Hidden => tint([40.0, 70.0, 150.0], shade(g)),
            CellState::OutOfRange => tint([90.0, 90.0, 90.0], shade(g)),
            CellState::NotGround => Rgb([25, 25, 25]),
        };
        let (c, r) = ((i % v.width) as u32, (i / v.width) as u32);
        for dy in 0..scale {
            for dx in 0..scale {
                img.put_pixel(c * scale + dx, r * scale + dy, colour);
            }
        }
    }
    let centre = (
        (v.observer.x - v.origin.x) / v.cell * scale as f32,
        (v.observer.z - v.origin.y) / v.cell * scale as f32,
    );
    ring(
        &mut img,
        centre,
        6.0 * scale as f32 / 2.0 + 4.0,
        Rgb([230, 30, 30]),
    );
    Ok(img)
}

fn tint(c: [f32; 3], k: f32) -> Rgb<u8> {
    Rgb(c.map(|x| (x * k).clamp(0.0, 255.0) as u8))
}

fn ring(img: &mut RgbImage, (cx, cy): (f32, f32), radius: f32, colour: Rgb<u8>) {
    let (w, h) = img.dimensions();
    let r = radius.ceil() as i64 + 2;
    for y in (cy as i64 - r)..=(cy as i64 + r) {
        for x in (cx as i64 - r)..=(cx as i64 + r) {
            let d = ((x as f32 - cx).powi(2) + (y as f32 - cy).powi(2)).sqrt();
            if (0..w as i64).contains(&x)
                && (0..h as i64).contains(&y)
                && d <= radius
                && d >= radius - 2.5
                || d < 2.0
            {
                if (0..w as i64).contains(&x) && (0..h as i64).contains(&y) {
                    img.put_pixel(x as u32, y as u32, colour);
                }
            }
        }
    }
}

/// A top-down canvas over a square of the world, `px` pixels per metre.
/// Longest side of a canvas, in pixels.
pub const MAX_SIDE: u32 = 4096;

#[derive(Clone)]
pub struct Canvas {
    pub img: RgbImage,
    origin: (f32, f32),
    px: f32,
}

impl Canvas {
    /// A square `size` metres a side at `px` pixels a metre, or fewer: the side never exceeds
    /// [`MAX_SIDE`] pixels, however far apart the things drawn on it are.
    pub fn new(center: glam::Vec3, size: f32, px: f32) -> Canvas {
        let size = if size.is_finite() && size > 0.0 {
            size
        } else {
            1.0
        };
        let px = px.min(MAX_SIDE as f32 / size);
        let n = ((size * px).ceil() as u32).clamp(1, MAX_SIDE);
        Canvas {
            img: RgbImage::from_pixel(n, n, Rgb([25, 25, 25])),
            origin: (center.x - size / 2.0, center.z - size / 2.0),
            px,
        }
    }
    /// Writes the picture and says so on stderr.
    pub fn save(&self, path: &std::path::Path) -> Result<(), String> {
        self.img
            .save(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
        Ok(())
    }
    /// Pixels per metre.
    pub fn px(&self) -> f32 {
        self.px
    }
    fn to_px(&self, p: glam::Vec3) -> (f32, f32) {
        (
            (p.x - self.origin.0) * self.px,
            (p.z - self.origin.1) * self.px,
        )
    }
    /// Fills the world-space square cell with corner `(x, z)` and side `cell`.
    pub fn cell(&mut self, x: f32, z: f32, cell: f32, colour: Rgb<u8>) {
        let (x0, y0) = self.to_px(glam::Vec3::new(x, 0.0, z));
        let s = cell * self.px;
        let (w, h) = self.img.dimensions();
        for y in (y0.max(0.0) as u32)..((y0 + s).ceil().max(0.0) as u32).min(h) {
            for x in (x0.max(0.0) as u32)..((x0 + s).ceil().max(0.0) as u32).min(w) {
                self.img.put_pixel(x, y, colour);
            }
        }
    }
    pub fn disc(&mut self, p: glam::Vec3, radius: f32, colour: Rgb<u8>) {
        let (cx, cy) = self.to_px(p);
        let (w, h) = self.img.dimensions();
        let r = radius.ceil() as i64;
        for y in (cy as i64 - r)..=(cy as i64 + r) {
            for x in (cx as i64 - r)..=(cx as i64 + r) {
                let d2 = (x as f32 - cx).powi(2) + (y as f32 - cy).powi(2);
                if d2 <= radius * radius && (0..w as i64).contains(&x) && (0..h as i64).contains(&y)
                {
                    self.img.put_pixel(x as u32, y as u32, colour);
                }
            }
        }
    }
    pub fn ring(&mut self, p: glam::Vec3, radius: f32, colour: Rgb<u8>) {
        let c = self.to_px(p);
        ring(&mut self.img, c, radius, colour);
    }
    pub fn line(&mut self, a: glam::Vec3, b: glam::Vec3, colour: Rgb<u8>) {
        self.gradient(a, b, colour, colour);
    }
    /// A line whose colour runs from `ca` at `a` to `cb` at `b`.
    pub fn gradient(&mut self, a: glam::Vec3, b: glam::Vec3, ca: Rgb<u8>, cb: Rgb<u8>) {
        let (pa, pb) = (self.to_px(a), self.to_px(b));
        let steps = ((pb.0 - pa.0).abs().max((pb.1 - pa.1).abs()).ceil() as usize).max(1);
        let (w, h) = self.img.dimensions();
        for i in 0..=steps {
            let t = i as f32 / steps as f32;
            let (x, y) = (pa.0 + (pb.0 - pa.0) * t, pa.1 + (pb.1 - pa.1) * t);
            let colour = Rgb(std::array::from_fn(|k| {
                (f32::from(ca.0[k]) + (f32::from(cb.0[k]) - f32::from(ca.0[k])) * t) as u8
            }));
            for (dx, dy) in [(0, 0), (1, 0), (0, 1)] {
                let (x, y) = (x as i64 + dx, y as i64 + dy);
                if (0..w as i64).contains(&x) && (0..h as i64).contains(&y) {
                    self.img.put_pixel(x as u32, y as u32, colour);
                }
            }
        }
    }
}

/// Underlay colour of a cover-field cell: tan where exposed, greens by the highest hidden
/// posture (darker = hidden standing), near-black where there is no ground.
pub fn cover_colour(c: sightline::cover::field::CellCover) -> Rgb<u8> {
    use sightline::cover::{field::CellCover, Posture};
    match c {
        CellCover::NotGround => Rgb([30, 30, 30]),
        CellCover::Exposed => Rgb([205, 185, 145]),
        CellCover::Hidden(Posture::Prone) => Rgb([160, 210, 150]),
        CellCover::Hidden(Posture::Crouching) => Rgb([90, 170, 90]),
        CellCover::Hidden(Posture::Standing) => Rgb([30, 115, 50]),
    }
}

/// Sensor colour by fate: red seen, blues hidden (darker = higher posture), orange unreachable,
/// grey not standable, purple obstructed (the body does not fit), black no ground, white skipped.
pub fn fate_colour(f: sightline::cover::sensor_grid::SensorFate) -> Rgb<u8> {
    use sightline::cover::{sensor_grid::SensorFate, Posture};
    match f {
        SensorFate::NoGround => Rgb([0, 0, 0]),
        SensorFate::NotStandable => Rgb([128, 128, 128]),
        SensorFate::Obstructed => Rgb([150, 60, 170]),
        SensorFate::Visible => Rgb([230, 40, 40]),
        SensorFate::Unreachable => Rgb([255, 150, 0]),
        SensorFate::Hidden(Posture::Prone) => Rgb([130, 200, 255]),
        SensorFate::Hidden(Posture::Crouching) => Rgb([40, 130, 255]),
        SensorFate::Hidden(Posture::Standing) => Rgb([0, 40, 200]),
        SensorFate::Skipped => Rgb([255, 255, 255]),
    }
}

/// A blue-cyan-green-yellow-red spectrum ("jet"): `t` 0 is cold dark blue, 1 is hot red.
pub fn spectrum(t: f32) -> Rgb<u8> {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let ramp = |c: f32| (1.5 - (4.0 * t - c).abs()).clamp(0.0, 1.0);
    Rgb([
        (255.0 * ramp(3.0)) as u8,
        (255.0 * ramp(2.0)) as u8,
        (255.0 * ramp(1.0)) as u8,
    ])
}

/// A top-down canvas over the x/z box `lo..hi` (plus a margin) with the scene drawn under it:
/// the top surface's height in greys (higher is lighter), outlines where the height jumps
/// (walls, kerbs, cliffs), near-black where nothing walkable is on top.
pub fn scene_canvas(
    engine: &sightline::Engine,
    scene: &sightline::Scene,
    lo: glam::Vec3,
    hi: glam::Vec3,
    max_px: f32,
) -> sightline::Result<Canvas> {
    let size = (hi.x - lo.x).max(hi.z - lo.z).max(1.0) + 4.0;
    // At most `max_px` pixels a side, whatever the scene's size.
    let px = (max_px / size).min(40.0);
    let centre = (lo + hi) * 0.5;
    let mut canvas = Canvas::new(centre, size, px);
    let cell = (1.0 / px).max(0.05);
    let n = (size / cell).ceil() as usize;
    let origin = glam::Vec2::new(centre.x - size / 2.0, centre.z - size / 2.0);
    let g = sightline::ground::ground_grid(
        engine,
        scene,
        origin,
        cell,
        n,
        n,
        std::f32::consts::FRAC_PI_2,
    )?;
    let (glo, ghi) = g
        .iter()
        .filter(|h| h.is_finite())
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &h| {
            (a.min(h), b.max(h))
        });
    for (i, &h) in g.iter().enumerate() {
        let (c, r) = (i % n, i / n);
        let jump = [(1, 0), (0, 1)].iter().any(|&(dx, dz)| {
            let (c2, r2) = (c + dx, r + dz);
            c2 < n && r2 < n && {
                let h2 = g[r2 * n + c2];
                h.is_finite() != h2.is_finite() || (h - h2).abs() > 0.4
            }
        });
        let colour = if !h.is_finite() {
            Rgb([20, 20, 24])
        } else if jump {
            Rgb([35, 35, 40])
        } else {
            let k = if ghi > glo {
                (h - glo) / (ghi - glo)
            } else {
                0.5
            };
            let v = (70.0 + 90.0 * k) as u8;
            Rgb([v, v, v])
        };
        canvas.cell(
            origin.x + c as f32 * cell,
            origin.y + r as f32 * cell,
            cell,
            colour,
        );
    }
    Ok(canvas)
}
