//! Top-down pictures a person can read at a glance: the scene drawn underneath
//! ([`scene`], from [`sightline::underlay`]), results laid over it with transparency, and a
//! panel beside it with the legend, a scale bar and a north arrow ([`legend`]). +x runs right,
//! +z down, so north (-z) is up. Colours: [`palette`].

pub mod legend;
pub mod palette;
pub mod scene;

use image::{Rgb, RgbImage};
use legend::{Key, Target};
use palette::{BLACK, BLUE, GREY, ORANGE, PURPLE, VERMILLION, WHITE, YELLOW};
use sightline::viewshed::{CellState, Viewshed};
use std::sync::OnceLock;

/// Side of a picture's map in pixels when `--width` is not given: fits a laptop screen with
/// the legend beside it.
pub const DEFAULT_WIDTH: u32 = 1024;
/// Narrowest map `--width` accepts: below it the markers and the legend do not fit.
pub const MIN_WIDTH: u32 = 128;
/// Widest map `--width` accepts (one ray per pixel for the scene underneath).
pub const MAX_WIDTH: u32 = 8192;
/// Opacity of result areas over the scene: walls and roofs still show through.
pub const RESULT_ALPHA: f32 = 0.45;

static WIDTH: OnceLock<u32> = OnceLock::new();

/// Sets the map width of every picture this run draws (`--width`), checked against
/// [`MIN_WIDTH`] and [`MAX_WIDTH`].
pub fn set_width(w: u32) -> Result<(), String> {
    if !(MIN_WIDTH..=MAX_WIDTH).contains(&w) {
        return Err(format!(
            "--width {w}: pictures are {MIN_WIDTH} to {MAX_WIDTH} pixels wide"
        ));
    }
    let _ = WIDTH.set(w);
    Ok(())
}

/// The map width this run draws at.
pub fn width() -> u32 {
    *WIDTH.get().unwrap_or(&DEFAULT_WIDTH)
}

/// A square map of the world with the scene under it, plus its legend.
#[derive(Clone)]
pub struct Canvas {
    /// The map alone (the legend panel is added by [`Canvas::finish`]).
    pub img: RgbImage,
    origin: (f32, f32),
    px: f32,
    title: String,
    keys: Vec<Key>,
}

impl Canvas {
    /// A square `size` metres a side around `centre` (x, z), [`--width`](set_width) pixels a
    /// side, with the scene drawn underneath and its legend entries.
    pub fn over(
        engine: &sightline::Engine,
        scene: &sightline::Scene,
        centre: glam::Vec3,
        size: f32,
        title: impl Into<String>,
    ) -> sightline::Result<Canvas> {
        Canvas::over_sized(engine, scene, centre, size, title, width())
    }

    /// [`Canvas::over`] `n` pixels a side.
    pub fn over_sized(
        engine: &sightline::Engine,
        scene: &sightline::Scene,
        centre: glam::Vec3,
        size: f32,
        title: impl Into<String>,
        n: u32,
    ) -> sightline::Result<Canvas> {
        let mut c = Canvas::blank_sized(centre, size, title, n);
        let n = c.img.width() as usize;
        let u = sightline::underlay::underlay(
            engine,
            scene,
            glam::Vec2::new(c.origin.0, c.origin.1),
            1.0 / c.px,
            n,
            n,
        )?;
        c.img = scene::draw(&u, (6.0 * c.unit()).round() as u32);
        c.keys = scene::keys(&u);
        Ok(c)
    }

    /// [`Canvas::over`] the x/z box `lo..hi` plus a 2 m margin, as a square.
    pub fn over_box(
        engine: &sightline::Engine,
        scene: &sightline::Scene,
        lo: glam::Vec3,
        hi: glam::Vec3,
        title: impl Into<String>,
    ) -> sightline::Result<Canvas> {
        Canvas::over_box_sized(engine, scene, lo, hi, title, width())
    }

    /// [`Canvas::over_box`] `n` pixels a side.
    pub fn over_box_sized(
        engine: &sightline::Engine,
        scene: &sightline::Scene,
        lo: glam::Vec3,
        hi: glam::Vec3,
        title: impl Into<String>,
        n: u32,
    ) -> sightline::Result<Canvas> {
        let size = (hi.x - lo.x).max(hi.z - lo.z).max(1.0) + 4.0;
        Canvas::over_sized(engine, scene, (lo + hi) * 0.5, size, title, n)
    }

    /// A canvas with nothing underneath (white), for results without a scene.
    pub fn blank(centre: glam::Vec3, size: f32, title: impl Into<String>) -> Canvas {
        Canvas::blank_sized(centre, size, title, width())
    }

    fn blank_sized(centre: glam::Vec3, size: f32, title: impl Into<String>, n: u32) -> Canvas {
        let size = if size.is_finite() && size > 0.0 {
            size
        } else {
            1.0
        };
        let n = n.clamp(MIN_WIDTH / 2, MAX_WIDTH);
        Canvas {
            img: RgbImage::from_pixel(n, n, WHITE),
            origin: (centre.x - size / 2.0, centre.z - size / 2.0),
            px: n as f32 / size,
            title: title.into(),
            keys: Vec::new(),
        }
    }

    /// Adds a legend entry (after the scene's own).
    pub fn key(&mut self, k: Key) {
        if !self.keys.contains(&k) {
            self.keys.push(k);
        }
    }

    /// Pixels per metre.
    pub fn px(&self) -> f32 {
        self.px
    }

    /// Marker scale: 1 on a 900-pixel map, so markers keep their share of the picture.
    pub fn unit(&self) -> f32 {
        (self.img.width() as f32 / 900.0).max(0.75)
    }

    fn to_px(&self, p: glam::Vec3) -> (f32, f32) {
        (
            (p.x - self.origin.0) * self.px,
            (p.z - self.origin.1) * self.px,
        )
    }

    fn point(&self, p: glam::Vec3) -> embedded_graphics::prelude::Point {
        let (x, y) = self.to_px(p);
        let clamp = |v: f32| v.clamp(-1e6, 1e6).round() as i32;
        embedded_graphics::prelude::Point::new(clamp(x), clamp(y))
    }

    /// Lays `colour` over the world-space square with corner `(x, z)` and side `cell`, at
    /// [`RESULT_ALPHA`].
    pub fn cell(&mut self, x: f32, z: f32, cell: f32, colour: Rgb<u8>) {
        self.cell_alpha(x, z, cell, colour, RESULT_ALPHA);
    }

    /// [`Canvas::cell`] at opacity `alpha`.
    pub fn cell_alpha(&mut self, x: f32, z: f32, cell: f32, colour: Rgb<u8>, alpha: f32) {
        let (x0, y0) = self.to_px(glam::Vec3::new(x, 0.0, z));
        let s = cell * self.px;
        let (w, h) = self.img.dimensions();
        // Pixels whose centre lies in the square: neighbouring cells never share one.
        let span = |a: f32, n: u32| {
            let lo = (a - 0.5).ceil().clamp(0.0, n as f32) as u32;
            let hi = (a + s - 0.5).ceil().clamp(0.0, n as f32) as u32;
            lo..hi.max(lo + u32::from(s < 1.0 && lo < n))
        };
        for y in span(y0, h) {
            for x in span(x0, w) {
                let p = self.img.get_pixel_mut(x, y);
                *p = palette::mix(*p, colour, alpha);
            }
        }
    }

    /// Lays a row-major grid of cells (`width` a row, corner `origin` (x, z), side `cell`)
    /// over the map, each in the colour `colour` gives it (none: the scene shows).
    pub fn grid<T>(
        &mut self,
        origin: glam::Vec2,
        cell: f32,
        width: usize,
        cells: &[T],
        colour: impl Fn(&T) -> Option<Rgb<u8>>,
    ) {
        for (i, c) in cells.iter().enumerate() {
            if let Some(rgb) = colour(c) {
                let (col, row) = ((i % width) as f32, (i / width) as f32);
                self.cell(origin.x + col * cell, origin.y + row * cell, cell, rgb);
            }
        }
    }

    /// A filled disc of `radius` (scaled by [`Canvas::unit`]) with a thin black edge.
    pub fn disc(&mut self, p: glam::Vec3, radius: f32, colour: Rgb<u8>) {
        use embedded_graphics::prelude::*;
        use embedded_graphics::primitives::{Circle, PrimitiveStyleBuilder};
        let d = (2.0 * radius * self.unit()).round().max(2.0) as u32;
        let style = PrimitiveStyleBuilder::new()
            .fill_color(legend::rgb(colour))
            .stroke_color(legend::rgb(BLACK))
            .stroke_width(u32::from(d >= 6))
            .build();
        let _ = Circle::with_center(self.point(p), d)
            .into_styled(style)
            .draw(&mut Target::opaque(&mut self.img));
    }

    /// A ring of `radius` (scaled), drawn over a black one so it shows on any background.
    pub fn ring(&mut self, p: glam::Vec3, radius: f32, colour: Rgb<u8>) {
        use embedded_graphics::prelude::*;
        use embedded_graphics::primitives::{Circle, PrimitiveStyle};
        let d = (2.0 * radius * self.unit()).round().max(4.0) as u32;
        let w = (2.0 * self.unit()).round().max(1.0) as u32;
        let c = self.point(p);
        let mut t = Target::opaque(&mut self.img);
        let _ = Circle::with_center(c, d)
            .into_styled(PrimitiveStyle::with_stroke(legend::rgb(BLACK), w + 2))
            .draw(&mut t);
        let _ = Circle::with_center(c, d)
            .into_styled(PrimitiveStyle::with_stroke(legend::rgb(colour), w))
            .draw(&mut t);
    }

    /// A line about 1.5 pixels wide (scaled).
    pub fn line(&mut self, a: glam::Vec3, b: glam::Vec3, colour: Rgb<u8>) {
        let w = (1.5 * self.unit()).round().max(1.0) as u32;
        self.stroke(a, b, colour, w);
    }

    /// A line `w` pixels wide.
    pub fn stroke(&mut self, a: glam::Vec3, b: glam::Vec3, colour: Rgb<u8>, w: u32) {
        use embedded_graphics::prelude::*;
        use embedded_graphics::primitives::{Line, PrimitiveStyle};
        let _ = Line::new(self.point(a), self.point(b))
            .into_styled(PrimitiveStyle::with_stroke(legend::rgb(colour), w.max(1)))
            .draw(&mut Target::opaque(&mut self.img));
    }

    /// A path: white over a black edge, so it reads over any colour.
    pub fn path(&mut self, points: &[glam::Vec3], colour: Rgb<u8>) {
        let w = (2.0 * self.unit()).round().max(1.0) as u32;
        for pair in points.windows(2) {
            self.stroke(pair[0], pair[1], BLACK, w + 2);
        }
        for pair in points.windows(2) {
            self.stroke(pair[0], pair[1], colour, w);
        }
    }

    /// A line whose colour runs from `ca` at `a` to `cb` at `b`.
    pub fn gradient(&mut self, a: glam::Vec3, b: glam::Vec3, ca: Rgb<u8>, cb: Rgb<u8>) {
        let (pa, pb) = (self.to_px(a), self.to_px(b));
        let steps =
            ((pb.0 - pa.0).abs().max((pb.1 - pa.1).abs()).ceil() as usize).clamp(1, 1 << 16);
        let (w, h) = self.img.dimensions();
        let thick = (self.unit().round() as i64).max(1);
        for i in 0..=steps {
            let t = i as f32 / steps as f32;
            let (x, y) = (pa.0 + (pb.0 - pa.0) * t, pa.1 + (pb.1 - pa.1) * t);
            let colour = palette::mix(ca, cb, t);
            for dy in 0..thick {
                for dx in 0..thick {
                    let (x, y) = (x as i64 + dx, y as i64 + dy);
                    if (0..w as i64).contains(&x) && (0..h as i64).contains(&y) {
                        self.img.put_pixel(x as u32, y as u32, colour);
                    }
                }
            }
        }
    }

    /// The map with its legend panel.
    pub fn finish(&self) -> RgbImage {
        legend::attach(&self.img, &self.title, &self.keys, self.px)
    }

    /// Writes the picture with its legend and says so on stderr.
    pub fn save(&self, path: &std::path::Path) -> Result<(), String> {
        save(&self.finish(), path)
    }

    /// The legend entries so far.
    pub fn keys(&self) -> &[Key] {
        &self.keys
    }

    /// Replaces the title.
    pub fn set_title(&mut self, title: impl Into<String>) {
        self.title = title.into();
    }
}

/// Writes `img` and says so on stderr.
pub fn save(img: &RgbImage, path: &std::path::Path) -> Result<(), String> {
    img.save(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

/// Colour of a cover-field cell over the scene: vermillion where exposed, the hidden posture's
/// colour where hidden ([`palette::hidden`]), nothing where there is no ground.
pub fn cover_colour(c: sightline::cover::field::CellCover) -> Option<Rgb<u8>> {
    use sightline::cover::field::CellCover;
    match c {
        CellCover::NotGround => None,
        CellCover::Exposed => Some(VERMILLION),
        CellCover::Hidden(p) => Some(palette::hidden(p)),
    }
}

/// Legend entries of [`cover_colour`].
pub fn cover_keys(c: &mut Canvas) {
    use sightline::cover::Posture;
    c.key(Key::swatch(VERMILLION, "exposed (no posture hidden)"));
    for (p, label) in [
        (Posture::Prone, "hidden lying prone"),
        (Posture::Crouching, "hidden crouching"),
        (Posture::Standing, "hidden standing"),
    ] {
        c.key(Key::swatch(palette::hidden(p), label));
    }
}

/// Sensor colour by fate: vermillion seen, the hidden posture's colour where hidden, orange
/// unreachable, purple obstructed (the body does not fit), grey not standable, black no ground,
/// white skipped.
pub fn fate_colour(f: sightline::cover::sensor_grid::SensorFate) -> Rgb<u8> {
    use sightline::cover::sensor_grid::SensorFate;
    match f {
        SensorFate::NoGround => BLACK,
        SensorFate::NotStandable => GREY,
        SensorFate::Obstructed => PURPLE,
        SensorFate::Visible => VERMILLION,
        SensorFate::Unreachable => ORANGE,
        SensorFate::Hidden(p) => palette::hidden(p),
        SensorFate::Skipped => WHITE,
    }
}

/// Legend entries of the sensors drawn with [`fate_colour`].
pub fn fate_keys(
    c: &mut Canvas,
    fates: impl Iterator<Item = sightline::cover::sensor_grid::SensorFate>,
) {
    use sightline::cover::sensor_grid::SensorFate;
    for f in fates {
        let label = match f {
            SensorFate::NoGround => "sensor: no ground".to_string(),
            SensorFate::NotStandable => "sensor: not standable".to_string(),
            SensorFate::Obstructed => "sensor: body does not fit".to_string(),
            SensorFate::Visible => "sensor: seen".to_string(),
            SensorFate::Unreachable => "sensor: unreachable".to_string(),
            SensorFate::Hidden(p) => format!("sensor: hidden {}", p.name()),
            SensorFate::Skipped => "sensor: skipped".to_string(),
        };
        c.key(Key::disc(fate_colour(f), label));
    }
}

/// Marks observers (reddish-purple discs) and says so in the legend.
pub fn mark_observers(c: &mut Canvas, observers: &[glam::Vec3]) {
    for &o in observers {
        c.disc(o, 6.0, PURPLE);
    }
    if !observers.is_empty() {
        c.key(Key::disc(PURPLE, "observer / threat"));
    }
}

/// The ground an observer sees: yellow where seen, blue where hidden, both over the scene;
/// cells out of range or without ground show the scene alone; the observer an orange disc.
pub fn viewshed(
    engine: &sightline::Engine,
    scene: &sightline::Scene,
    v: &Viewshed,
    title: &str,
) -> sightline::Result<Canvas> {
    let size = v.width.max(v.height) as f32 * v.cell;
    let centre = glam::Vec3::new(
        v.origin.x + v.width as f32 * v.cell / 2.0,
        0.0,
        v.origin.y + v.height as f32 * v.cell / 2.0,
    );
    let mut c = Canvas::over(engine, scene, centre, size, title)?;
    c.grid(v.origin, v.cell, v.width, &v.state, |s| match s {
        CellState::Visible => Some(YELLOW),
        CellState::Hidden => Some(BLUE),
        CellState::OutOfRange | CellState::NotGround => None,
    });
    c.key(Key::swatch(YELLOW, "ground the observer sees"));
    c.key(Key::swatch(BLUE, "ground hidden from the observer"));
    c.disc(v.observer, 7.0, ORANGE);
    c.key(Key::disc(ORANGE, "observer's eye"));
    Ok(c)
}
