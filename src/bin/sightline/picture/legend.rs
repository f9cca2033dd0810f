//! The panel beside every picture: a title, what each colour and marker means, a scale bar and
//! a north arrow, drawn with `embedded-graphics` (its fonts and primitives) on the image.

use super::palette::{shade, viridis, BLACK};
use embedded_graphics::mono_font::{ascii, MonoFont, MonoTextStyle};
use embedded_graphics::pixelcolor::Rgb888;
use embedded_graphics::prelude::*;
use embedded_graphics::primitives::{
    Circle, Line, PrimitiveStyle, PrimitiveStyleBuilder, Rectangle, Triangle,
};
use embedded_graphics::text::{Baseline, Text};
use image::{Rgb, RgbImage};
use std::convert::Infallible;

/// The panel's background: light grey, so white marks and the scene's white (nothing) show.
const PANEL: Rgb<u8> = Rgb([232, 232, 232]);

/// An image as a drawing target; colours are laid over the pixels with opacity `alpha`.
pub struct Target<'a> {
    pub img: &'a mut RgbImage,
    pub alpha: f32,
}

impl Target<'_> {
    pub fn opaque(img: &mut RgbImage) -> Target<'_> {
        Target { img, alpha: 1.0 }
    }
}

impl OriginDimensions for Target<'_> {
    fn size(&self) -> Size {
        let (w, h) = self.img.dimensions();
        Size::new(w, h)
    }
}

impl DrawTarget for Target<'_> {
    type Color = Rgb888;
    type Error = Infallible;
    fn draw_iter<I: IntoIterator<Item = Pixel<Rgb888>>>(
        &mut self,
        pixels: I,
    ) -> Result<(), Infallible> {
        let (w, h) = self.img.dimensions();
        for Pixel(p, c) in pixels {
            if p.x < 0 || p.y < 0 || p.x as u32 >= w || p.y as u32 >= h {
                continue;
            }
            let px = self.img.get_pixel_mut(p.x as u32, p.y as u32);
            let new = [c.r(), c.g(), c.b()];
            *px = if self.alpha >= 1.0 {
                Rgb(new)
            } else {
                super::palette::mix(*px, Rgb(new), self.alpha)
            };
        }
        Ok(())
    }
}

pub fn rgb(c: Rgb<u8>) -> Rgb888 {
    Rgb888::new(c.0[0], c.0[1], c.0[2])
}

/// How a legend entry shows its colour.
#[derive(Clone, Debug, PartialEq)]
pub enum Mark {
    /// A filled square (an area colour).
    Swatch,
    /// A filled square with dark diagonal stripes.
    Hatch,
    /// A filled disc with a black edge (a point marker).
    Disc,
    /// A ring (an outlined point).
    Ring,
    /// A thick line (a path).
    Line,
    /// A viridis bar from the low label to the high one.
    Ramp(String, String),
}

/// One legend entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Key {
    pub mark: Mark,
    pub colour: Rgb<u8>,
    pub label: String,
}

impl Key {
    pub fn swatch(colour: Rgb<u8>, label: impl Into<String>) -> Key {
        Key {
            mark: Mark::Swatch,
            colour,
            label: label.into(),
        }
    }
    pub fn hatch(colour: Rgb<u8>, label: impl Into<String>) -> Key {
        Key {
            mark: Mark::Hatch,
            colour,
            label: label.into(),
        }
    }
    pub fn disc(colour: Rgb<u8>, label: impl Into<String>) -> Key {
        Key {
            mark: Mark::Disc,
            colour,
            label: label.into(),
        }
    }
    pub fn ring(colour: Rgb<u8>, label: impl Into<String>) -> Key {
        Key {
            mark: Mark::Ring,
            colour,
            label: label.into(),
        }
    }
    pub fn line(colour: Rgb<u8>, label: impl Into<String>) -> Key {
        Key {
            mark: Mark::Line,
            colour,
            label: label.into(),
        }
    }
    /// A viridis ramp: `label` names the value, `lo` and `hi` its ends.
    pub fn ramp(label: impl Into<String>, lo: impl Into<String>, hi: impl Into<String>) -> Key {
        Key {
            mark: Mark::Ramp(lo.into(), hi.into()),
            colour: BLACK,
            label: label.into(),
        }
    }
}

/// The panel's font: larger on larger pictures.
fn font(map_height: u32) -> &'static MonoFont<'static> {
    if map_height >= 700 {
        &ascii::FONT_9X15
    } else {
        &ascii::FONT_6X10
    }
}

/// Longest label in characters the panel wraps at.
const LABEL_CHARS: usize = 30;

/// `map` with the panel to its right: `title`, `keys`, a scale bar for `px` pixels a metre and a
/// north arrow (north is -z, the top of the picture; +x runs right).
pub fn attach(map: &RgbImage, title: &str, keys: &[Key], px: f32) -> RgbImage {
    let f = font(map.height());
    let (cw, ch) = (
        f.character_size.width as i32,
        f.character_size.height as i32,
    );
    let line_h = ch + ch / 2;
    let pad = cw;
    let swatch = ch;
    let panel_w = (2 * pad + swatch + cw + LABEL_CHARS as i32 * cw) as u32;
    let lines: usize = 2 + keys
        .iter()
        .map(|k| wrap(&k.label).len() + usize::from(matches!(k.mark, Mark::Ramp(..))))
        .sum::<usize>();
    let needed = (lines as i32 * line_h + 6 * line_h + 4 * ch) as u32;
    let (w, h) = (map.width() + panel_w, map.height().max(needed));
    let mut out = RgbImage::from_pixel(w, h, PANEL);
    image::imageops::replace(&mut out, map, 0, 0);
    let mut t = Target::opaque(&mut out);
    let x0 = map.width() as i32 + pad;
    let text = MonoTextStyle::new(f, Rgb888::BLACK);
    let mut y = pad;
    for line in wrap(title) {
        let _ = Text::with_baseline(&line, Point::new(x0, y), text, Baseline::Top).draw(&mut t);
        y += line_h;
    }
    y += line_h / 2;
    for k in keys {
        draw_mark(&mut t, k, Point::new(x0, y), swatch as u32);
        let tx = x0 + swatch + cw;
        if let Mark::Ramp(lo, hi) = &k.mark {
            let _ =
                Text::with_baseline(&k.label, Point::new(x0, y), text, Baseline::Top).draw(&mut t);
            y += line_h;
            let bar_w = (panel_w as i32 - 2 * pad) as u32;
            for dx in 0..bar_w {
                let c = rgb(viridis(dx as f32 / (bar_w - 1).max(1) as f32));
                let _ = Line::new(
                    Point::new(x0 + dx as i32, y),
                    Point::new(x0 + dx as i32, y + ch / 2),
                )
                .into_styled(PrimitiveStyle::with_stroke(c, 1))
                .draw(&mut t);
            }
            y += ch / 2 + 2;
            let _ = Text::with_baseline(lo, Point::new(x0, y), text, Baseline::Top).draw(&mut t);
            let hx = x0 + bar_w as i32 - hi.len() as i32 * cw;
            let _ = Text::with_baseline(hi, Point::new(hx, y), text, Baseline::Top).draw(&mut t);
            y += line_h;
            continue;
        }
        for line in wrap(&k.label) {
            let _ = Text::with_baseline(&line, Point::new(tx, y), text, Baseline::Top).draw(&mut t);
            y += line_h;
        }
    }
    y += line_h;
    scale_bar(&mut t, Point::new(x0, y), px, panel_w as i32 - 2 * pad, f);
    y += 3 * line_h;
    north_arrow(&mut t, Point::new(x0, y), 3 * ch, f);
    out
}

fn draw_mark(t: &mut Target<'_>, k: &Key, p: Point, s: u32) {
    let c = rgb(k.colour);
    let edge = PrimitiveStyleBuilder::new()
        .fill_color(c)
        .stroke_color(Rgb888::BLACK)
        .stroke_width(1)
        .build();
    let centre = p + Point::new(s as i32 / 2, s as i32 / 2);
    let _ = match &k.mark {
        Mark::Swatch => Rectangle::new(p, Size::new(s, s)).into_styled(edge).draw(t),
        Mark::Hatch => {
            let _ = Rectangle::new(p, Size::new(s, s)).into_styled(edge).draw(t);
            let dark = rgb(shade(k.colour, 0.55));
            for o in (0..2 * s as i32).step_by(5) {
                let a = p + Point::new(o.min(s as i32 - 1), (o - s as i32 + 1).max(0));
                let b = p + Point::new((o - s as i32 + 1).max(0), o.min(s as i32 - 1));
                let _ = Line::new(a, b)
                    .into_styled(PrimitiveStyle::with_stroke(dark, 1))
                    .draw(t);
            }
            Ok(())
        }
        Mark::Disc => Circle::with_center(centre, s).into_styled(edge).draw(t),
        // Black under the colour, as on the map, so white marks show on the panel.
        Mark::Ring => {
            let ring = Circle::with_center(centre, s - 2);
            let _ = ring
                .into_styled(PrimitiveStyle::with_stroke(Rgb888::BLACK, 5))
                .draw(t);
            ring.into_styled(PrimitiveStyle::with_stroke(c, 3)).draw(t)
        }
        Mark::Line => {
            let line = Line::new(
                p + Point::new(0, s as i32 / 2),
                p + Point::new(s as i32, s as i32 / 2),
            );
            let _ = line
                .into_styled(PrimitiveStyle::with_stroke(Rgb888::BLACK, 5))
                .draw(t);
            line.into_styled(PrimitiveStyle::with_stroke(c, 3)).draw(t)
        }
        Mark::Ramp(..) => Ok(()),
    };
}

/// A bar of a round length (10 m unless that does not fit in `max_w` pixels or is tiny),
/// labelled.
fn scale_bar(t: &mut Target<'_>, p: Point, px: f32, max_w: i32, f: &'static MonoFont<'static>) {
    let metres = [
        10.0f32, 5.0, 2.0, 1.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0,
    ]
    .into_iter()
    .find(|&m| {
        let w = m * px;
        w <= max_w as f32 && (w >= 24.0 || m >= 1000.0)
    })
    .unwrap_or(1.0);
    let w = (metres * px).round() as i32;
    let ch = f.character_size.height as i32;
    let black = PrimitiveStyle::with_fill(Rgb888::BLACK);
    let _ = Rectangle::new(
        p + Point::new(0, ch / 2),
        Size::new(w as u32, (ch / 3).max(3) as u32),
    )
    .into_styled(black)
    .draw(t);
    for x in [0, w - 2] {
        let _ = Rectangle::new(
            p + Point::new(x, ch / 4),
            Size::new(2, (ch / 2 + ch / 3) as u32),
        )
        .into_styled(black)
        .draw(t);
    }
    let label = format!("{metres} m");
    let _ = Text::with_baseline(
        &label,
        p + Point::new(0, ch),
        MonoTextStyle::new(f, Rgb888::BLACK),
        Baseline::Top,
    )
    .draw(t);
}

/// An arrow pointing up with an "N" beside it.
fn north_arrow(t: &mut Target<'_>, p: Point, size: i32, f: &'static MonoFont<'static>) {
    let half = size / 3;
    let tip = p + Point::new(half, 0);
    let _ = Triangle::new(tip, p + Point::new(0, size), p + Point::new(2 * half, size))
        .into_styled(PrimitiveStyle::with_fill(Rgb888::BLACK))
        .draw(t);
    let _ = Text::with_baseline(
        "N (-z)",
        p + Point::new(2 * half + f.character_size.width as i32, size / 3),
        MonoTextStyle::new(f, Rgb888::BLACK),
        Baseline::Top,
    )
    .draw(t);
}

/// `s` cut into lines of at most [`LABEL_CHARS`] characters at spaces.
fn wrap(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in s.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > LABEL_CHARS {
            out.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() || out.is_empty() {
        out.push(line);
    }
    out
}
