//! In-game experience (van der Sterren, "Using In-Game Sniping Feedback to Rate Sniping Spots",
//! "Better Tactical Understanding From Game Play Experience" and "Implementing Reinforcement
//! Learning"): what players and AI did at each waypoint, recorded during rounds, used to adjust
//! precomputed ratings and to re-run them with traffic, and kept in a file across runs.
//!
//! Per waypoint and direction, per actor (player, AI): seconds spent sniping, damage issued and
//! damage taken. Per waypoint and heading, per actor: seconds of traffic (time spent moving
//! through it). After a round the paper aggregates
//!
//! ```text
//! sniping experience(w, d) = player time + AI time + player damage issued + AI damage issued
//!                            - player damage taken - AI damage taken
//! sniping quality(w, d)    = precomputed quality(w, d) + sniping experience(w, d)
//! ```
//!
//! with player activity weighed above the AI's ("the player activity should be valued more than
//! the combined AI activities") and aggregates levelled with log or sqrt, which keeps their
//! order ([`ExperienceParams`]).

use super::{Direction, SECTORS};
use crate::{Error, Result};
use glam::Vec3;
use serde_json::{json, Value};
use std::path::Path;

/// Who acted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Actor {
    Player,
    Ai,
}

impl Actor {
    fn index(self) -> usize {
        match self {
            Actor::Player => 0,
            Actor::Ai => 1,
        }
    }
    fn name(self) -> &'static str {
        ["player", "ai"][self.index()]
    }
    fn parse(s: &str) -> Option<Actor> {
        match s {
            "player" => Some(Actor::Player),
            "ai" => Some(Actor::Ai),
            _ => None,
        }
    }
}

/// Sniping activity at a waypoint in one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Activity {
    /// Seconds spent static with a sniping weapon, aiming in the direction.
    pub seconds: f32,
    /// Damage caused from the spot in the direction.
    pub issued: f32,
    /// Damage taken while sniping there.
    pub taken: f32,
}

/// How the paper's levelling function flattens aggregates while keeping their order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Levelling {
    /// `sign(x) ln(1 + |x|)`.
    Log,
    /// `sign(x) sqrt(|x|)`.
    Sqrt,
    /// No levelling.
    None,
}

impl Levelling {
    /// The levelled value: strictly increasing, odd, 0 at 0.
    #[must_use]
    pub fn apply(self, x: f32) -> f32 {
        match self {
            Levelling::Log => x.signum() * x.abs().ln_1p(),
            Levelling::Sqrt => x.signum() * x.abs().sqrt(),
            Levelling::None => x,
        }
    }
}

/// Weights of the experience formula.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExperienceParams {
    /// Weight of the player's activity (default 3: the player counts for more than the combined
    /// AI of a typical squad of two or three).
    pub player: f32,
    /// Weight of the AI's activity (default 1).
    pub ai: f32,
    /// Experience per second of sniping (default 0.05: a minute of sniping counts as 3).
    pub per_second: f32,
    /// Experience per point of damage, issued or taken (default 0.02: a 100-point kill counts
    /// as 2).
    pub per_damage: f32,
    /// Levelling of aggregates (default log).
    pub levelling: Levelling,
    /// Scale of the levelled experience added to a precomputed rating (default 50, about a
    /// quarter of the spread of sniping scores on the built-in levels).
    pub scale: f32,
}

impl ExperienceParams {
    /// The defaults (see each field).
    #[must_use]
    pub const fn standard() -> ExperienceParams {
        ExperienceParams {
            player: 3.0,
            ai: 1.0,
            per_second: 0.05,
            per_damage: 0.02,
            levelling: Levelling::Log,
            scale: 50.0,
        }
    }
}

impl Default for ExperienceParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// Recorded experience over a set of waypoints.
#[derive(Clone, Debug, PartialEq)]
pub struct Experience {
    digest: u64,
    /// `[waypoint][direction][actor]`.
    sniping: Vec<[[Activity; 2]; SECTORS]>,
    /// `[waypoint][heading][actor]`: seconds moving through the waypoint.
    traffic: Vec<[[f32; 2]; SECTORS]>,
}

impl Experience {
    /// Empty experience over `waypoints` (their digest is kept, so a file is only read back
    /// for the same waypoints).
    pub fn new(waypoints: &[Vec3]) -> Result<Experience> {
        crate::limits::check_size(
            "experience waypoints",
            waypoints.len() as u64,
            crate::limits::MAX_WAYPOINTS,
            "use fewer waypoints",
        )?;
        Ok(Experience {
            digest: crate::tables::waypoint_digest(waypoints),
            sniping: vec![Default::default(); waypoints.len()],
            traffic: vec![Default::default(); waypoints.len()],
        })
    }

    /// Number of waypoints.
    #[must_use]
    pub fn len(&self) -> usize {
        self.sniping.len()
    }
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.sniping.is_empty()
    }

    fn check(&self, w: u32, values: &[f32]) -> Result<()> {
        if w as usize >= self.len() {
            return Err(Error::InvalidInput(format!(
                "waypoint {w} is out of range ({} waypoints)",
                self.len()
            )));
        }
        if let Some(v) = values
            .iter()
            .find(|v| !(v.is_finite() && **v >= 0.0 && **v < 1e9))
        {
            return Err(Error::InvalidInput(format!(
                "experience values must be finite, non-negative and below 1e9, found {v}"
            )));
        }
        Ok(())
    }

    /// Adds sniping activity at waypoint `w` aiming in direction `d`.
    pub fn record_sniping(&mut self, w: u32, d: Direction, who: Actor, a: Activity) -> Result<()> {
        self.check(w, &[a.seconds, a.issued, a.taken])?;
        let slot = &mut self.sniping[w as usize][d.index()][who.index()];
        slot.seconds += a.seconds;
        slot.issued += a.issued;
        slot.taken += a.taken;
        Ok(())
    }

    /// Adds `seconds` of movement through waypoint `w` heading in direction `heading`.
    pub fn record_traffic(
        &mut self,
        w: u32,
        heading: Direction,
        who: Actor,
        seconds: f32,
    ) -> Result<()> {
        self.check(w, &[seconds])?;
        self.traffic[w as usize][heading.index()][who.index()] += seconds;
        Ok(())
    }

    /// The sniping activity recorded at `(w, d)` for `who`.
    ///
    /// # Panics
    /// If `w` is not a waypoint index (like slice indexing); recording checks its index.
    #[must_use]
    pub fn activity(&self, w: u32, d: Direction, who: Actor) -> Activity {
        self.sniping[w as usize][d.index()][who.index()]
    }

    /// The paper's sniping experience at `(w, d)`, actors weighted, then levelled.
    #[must_use]
    pub fn sniping_experience(&self, w: u32, d: Direction, p: &ExperienceParams) -> f32 {
        let raw: f32 = [Actor::Player, Actor::Ai]
            .iter()
            .map(|&who| {
                let a = self.activity(w, d, who);
                let weight = if who == Actor::Player { p.player } else { p.ai };
                weight * (p.per_second * a.seconds + p.per_damage * (a.issued - a.taken))
            })
            .sum();
        p.levelling.apply(raw)
    }

    /// Precomputed ratings in direction `d` adjusted with the experience:
    /// `rating + scale x levelled experience`.
    #[must_use]
    pub fn adjust(&self, ratings: &[f32], d: Direction, p: &ExperienceParams) -> Vec<f32> {
        ratings
            .iter()
            .enumerate()
            .map(|(w, r)| r + p.scale * self.sniping_experience(w as u32, d, p))
            .collect()
    }

    /// Weighted traffic seconds through `w` in each heading.
    #[must_use]
    pub fn traffic_by_heading(&self, w: u32, p: &ExperienceParams) -> [f32; SECTORS] {
        let t = &self.traffic[w as usize];
        std::array::from_fn(|h| p.player * t[h][0] + p.ai * t[h][1])
    }

    /// Levelled traffic per waypoint (all headings), the input of the traffic re-run.
    #[must_use]
    pub fn traffic(&self, p: &ExperienceParams) -> Vec<f32> {
        (0..self.len() as u32)
            .map(|w| {
                p.levelling
                    .apply(self.traffic_by_heading(w, p).iter().sum())
            })
            .collect()
    }

    /// Whether any traffic was recorded.
    #[must_use]
    pub fn has_traffic(&self) -> bool {
        self.traffic.iter().flatten().flatten().any(|&t| t > 0.0)
    }

    /// The experience as JSON: only entries with activity are written.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut sniping = Vec::new();
        let mut traffic = Vec::new();
        for w in 0..self.len() {
            for d in Direction::all() {
                for who in [Actor::Player, Actor::Ai] {
                    let a = self.sniping[w][d.index()][who.index()];
                    if a != Activity::default() {
                        sniping.push(
                            json!({"waypoint": w, "direction": d.name(), "actor": who.name(),
                            "seconds": a.seconds, "issued": a.issued, "taken": a.taken}),
                        );
                    }
                    let t = self.traffic[w][d.index()][who.index()];
                    if t != 0.0 {
                        traffic.push(json!({"waypoint": w, "heading": d.name(), "actor": who.name(), "seconds": t}));
                    }
                }
            }
        }
        json!({
            "format": "sightline-experience",
            "version": 1,
            "waypoints": self.len(),
            "waypoint_digest": format!("{:016x}", self.digest),
            "sniping": sniping,
            "traffic": traffic,
        })
    }

    /// Writes the experience file (JSON).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let text = serde_json::to_string_pretty(&self.to_json()).map_err(|e| {
            Error::InvalidInput(format!("experience could not be written as JSON: {e}"))
        })?;
        std::fs::write(path, text)
            .map_err(|e| Error::load(path.display(), format!("cannot write: {e}")))
    }

    /// Reads an experience file written by [`Experience::save`] for these `waypoints`; a file
    /// for other waypoints (count or digest) is refused.
    pub fn load(path: impl AsRef<Path>, waypoints: &[Vec3]) -> Result<Experience> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::load(path.display(), format!("cannot read: {e}")))?;
        Experience::parse(&text, waypoints).map_err(|m| Error::load(path.display(), m))
    }

    /// Parses experience JSON for `waypoints`; errors are messages for [`Error::load`].
    pub fn parse(text: &str, waypoints: &[Vec3]) -> std::result::Result<Experience, String> {
        let doc: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        if doc["format"] != "sightline-experience" || doc["version"] != 1 {
            return Err(
                "not a sightline experience file (format \"sightline-experience\", \
                        version 1)"
                    .into(),
            );
        }
        let mut exp = Experience::new(waypoints).map_err(|e| e.to_string())?;
        let digest = format!("{:016x}", exp.digest);
        if doc["waypoints"].as_u64() != Some(waypoints.len() as u64)
            || doc["waypoint_digest"].as_str() != Some(digest.as_str())
        {
            return Err(format!(
                "recorded for other waypoints ({} waypoints, digest {}); these are {} \
                 waypoints with digest {digest}: record experience on the same nav graph",
                doc["waypoints"],
                doc["waypoint_digest"],
                waypoints.len()
            ));
        }
        let entries = |key: &str| -> std::result::Result<Vec<Value>, String> {
            match &doc[key] {
                Value::Array(a) => Ok(a.clone()),
                _ => Err(format!("`{key}` must be a list")),
            }
        };
        for (i, e) in entries("sniping")?.iter().enumerate() {
            let (w, d, who) =
                entry_key(e, "direction").map_err(|m| format!("sniping[{i}]: {m}"))?;
            let num = |k: &str| number(e, k).map_err(|m| format!("sniping[{i}]: {m}"));
            let a = Activity {
                seconds: num("seconds")?,
                issued: num("issued")?,
                taken: num("taken")?,
            };
            exp.record_sniping(w, d, who, a)
                .map_err(|m| format!("sniping[{i}]: {m}"))?;
        }
        for (i, e) in entries("traffic")?.iter().enumerate() {
            let (w, d, who) = entry_key(e, "heading").map_err(|m| format!("traffic[{i}]: {m}"))?;
            let s = number(e, "seconds").map_err(|m| format!("traffic[{i}]: {m}"))?;
            exp.record_traffic(w, d, who, s)
                .map_err(|m| format!("traffic[{i}]: {m}"))?;
        }
        Ok(exp)
    }
}

fn number(e: &Value, key: &str) -> std::result::Result<f32, String> {
    e[key]
        .as_f64()
        .map(|v| v as f32)
        .ok_or_else(|| format!("`{key}` must be a number"))
}

fn entry_key(e: &Value, dir_key: &str) -> std::result::Result<(u32, Direction, Actor), String> {
    let w = e["waypoint"]
        .as_u64()
        .filter(|&w| w <= u64::from(u32::MAX))
        .ok_or("`waypoint` must be a waypoint index")? as u32;
    let d = e[dir_key]
        .as_str()
        .ok_or(format!("`{dir_key}` must be a direction name"))
        .and_then(|s| Direction::parse(s).map_err(|m| m.to_string()))?;
    let who = e["actor"]
        .as_str()
        .and_then(Actor::parse)
        .ok_or("`actor` must be \"player\" or \"ai\"")?;
    Ok((w, d, who))
}
