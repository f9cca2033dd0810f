//! Verifying the grid's choices ([`super::SensorGridParams::verify`]): per query, the nearest
//! hidden, reachable sensors in order of path length (at most [`MAX_VERIFIED`]), each at the
//! highest posture whose whole body hides ([`crate::cover::body`]) and the template also
//! hides; the first whose intervis humanoid shows no pixel is the choice.
//!
//! One decision, two ways of feeding it, as the dense search has:
//! - lazily (the CPU backend): every query's next missing check, for all queries together,
//!   one engine call a round;
//! - speculatively (the GPU): the body sample and the intervis humanoid of every candidate
//!   that can still be among the first [`MAX_VERIFIED`] ride in the search's last engine call,
//!   so verification costs no wait of its own.
//!
//! Both decide with the same function over the same measurements, so they choose alike.

use super::search::{run_with, Job, Outcome, Search};
use super::{length_key, path_length, CoverAnswer, CoverChoice, CoverQuery, SensorReport};
use crate::cover::body::BodyParams;
use crate::cover::verify::{
    body_segments, body_shares, Candidate, Check, IntervisCalls, Rejection,
};
use crate::cover::Posture;
use crate::{Engine, Result, Scene};
use glam::Vec3;
use std::collections::HashMap;

/// Candidates tried per query, nearest first.
pub const MAX_VERIFIED: usize = 8;

/// Body-sample segments a speculative verification may add to one engine call (about 300 MB
/// while they are built; `dungeon.obj` needs about 4,700 a query with 4 observers, so some
/// 1,800 agents fit); the candidates of queries beyond it are checked in later rounds, each
/// one more wait.
const SPECULATION_SEGMENTS: usize = 1 << 23;

/// A check to run: query, sensor (layout index), posture, and the sensor's ground.
#[derive(Clone, Copy, Debug)]
pub struct Ask {
    query: usize,
    sensor: usize,
    posture: Posture,
    ground: Vec3,
}

type Key = (usize, usize, Posture);

/// Measurements so far, per (query, sensor, posture).
#[derive(Clone, Debug, Default)]
pub struct Checks {
    body: HashMap<Key, Vec<f32>>,
    pixels: HashMap<Key, Vec<u32>>,
}

/// What a query's verification needs next, or its end.
enum Next {
    Body(usize, Vec<Posture>),
    Intervis(usize, Posture),
    Chosen(CoverChoice),
    Nothing,
}

impl Checks {
    /// Traces `jobs` with `body` and `pixels` riding along in one engine call, keeps the
    /// measurements and returns the jobs' outcomes.
    pub fn round(
        &mut self,
        engine: &Engine,
        scene: &Scene,
        queries: &[CoverQuery],
        jobs: &[Job],
        body: &[Ask],
        pixels: &[Ask],
    ) -> Result<Vec<Outcome>> {
        let candidate = |a: &Ask| Candidate {
            agent: &queries[a.query].agent,
            ground: a.ground,
            posture: a.posture,
            observers: &queries[a.query].observers,
            mask: queries[a.query].mask,
        };
        let bodies: Vec<Candidate> = body.iter().map(candidate).collect();
        let (segs, counts) = body_segments(&bodies, &BodyParams::standard());
        let calls = IntervisCalls::new(&pixels.iter().map(candidate).collect::<Vec<_>>());
        let (out, blocked, records) = run_with(engine, scene, jobs, &segs, &calls.views())?;
        let key = |a: &Ask| (a.query, a.sensor, a.posture);
        for (a, e) in body.iter().zip(body_shares(&bodies, &counts, &blocked)) {
            self.body.insert(key(a), e);
        }
        for (a, px) in pixels.iter().zip(calls.pixels(records)) {
            self.pixels.insert(key(a), px);
        }
        Ok(out)
    }

    /// Decides every answer, measuring lazily whatever the measurements so far lack (one
    /// engine call a round).
    pub fn verify(
        &mut self,
        engine: &Engine,
        scene: &Scene,
        queries: &[CoverQuery],
        answers: &mut [CoverAnswer],
    ) -> Result<()> {
        loop {
            let (mut body, mut pixels) = (Vec::new(), Vec::new());
            for (qi, a) in answers.iter().enumerate() {
                let ask = |sensor: usize, posture| Ask {
                    query: qi,
                    sensor,
                    posture,
                    ground: a.sensors[sensor].position,
                };
                match self.decide(qi, a).0 {
                    Next::Body(i, postures) => body.extend(postures.iter().map(|&p| ask(i, p))),
                    Next::Intervis(i, p) => pixels.push(ask(i, p)),
                    Next::Chosen(_) | Next::Nothing => {}
                }
            }
            if body.is_empty() && pixels.is_empty() {
                break;
            }
            self.round(engine, scene, queries, &[], &body, &pixels)?;
        }
        for (qi, a) in answers.iter_mut().enumerate() {
            let (next, rejected) = self.decide(qi, a);
            a.choice = match next {
                Next::Chosen(c) => Some(c),
                _ => None,
            };
            a.rejected = rejected;
        }
        Ok(())
    }

    /// Walks query `qi`'s candidates in order until one passes, one lacks a measurement, or
    /// none is left; returns that and the candidates turned down on the way.
    fn decide(&self, qi: usize, a: &CoverAnswer) -> (Next, Vec<Rejection>) {
        let mut rejected = Vec::new();
        for i in candidates(a) {
            let s = &a.sensors[i];
            let postures = hidden_postures(s);
            let body: Option<Vec<&Vec<f32>>> = (postures.iter())
                .map(|&p| self.body.get(&(qi, i, p)))
                .collect();
            let Some(body) = body else {
                return (Next::Body(i, postures), rejected);
            };
            let best = (postures.iter().zip(body).rev()).find(|(_, e)| e.iter().all(|&x| x == 0.0));
            let Some((&p, e)) = best else {
                rejected.push(rejection(
                    s,
                    *postures.last().unwrap(),
                    Check::Body,
                    Vec::new(),
                ));
                continue;
            };
            let Some(px) = self.pixels.get(&(qi, i, p)) else {
                return (Next::Intervis(i, p), rejected);
            };
            if px.iter().any(|&n| n > 0) {
                rejected.push(rejection(s, p, Check::Intervis, px.clone()));
                continue;
            }
            let path = s.path.clone().unwrap_or_default();
            let choice = CoverChoice {
                sensor: i,
                position: s.position,
                posture: p,
                path_length: path_length(&path),
                path,
                exposure: Some(e.clone()),
                intervis_exposed: Some(px.clone()),
                decided_by: Check::Intervis,
            };
            return (Next::Chosen(choice), rejected);
        }
        (Next::Nothing, rejected)
    }
}

fn rejection(s: &SensorReport, posture: Posture, by: Check, exposed: Vec<u32>) -> Rejection {
    Rejection {
        position: s.position,
        posture,
        by,
        exposed,
    }
}

fn hidden_postures(s: &SensorReport) -> Vec<Posture> {
    Posture::ALL
        .into_iter()
        .filter(|&p| s.hidden[p as usize])
        .collect()
}

/// A query's candidates: hidden, reachable sensors by path length (then index), the first
/// [`MAX_VERIFIED`].
fn candidates(a: &CoverAnswer) -> Vec<usize> {
    let mut c: Vec<usize> = (0..a.sensors.len())
        .filter(|&i| matches!(a.sensors[i].fate, super::SensorFate::Hidden(_)))
        .collect();
    let len = |i: usize| path_length(a.sensors[i].path.as_deref().unwrap_or(&[]));
    c.sort_by_key(|&i| (length_key(len(i)), i));
    c.truncate(MAX_VERIFIED);
    c
}

/// Before the search's last step: every check a verification may need, for the body sample
/// and for the intervis humanoid (every hidden posture, the body's verdict being unknown yet).
/// A hidden sensor's path length is known where it is reached straight and bounded below by
/// its nearest via otherwise; a sensor that at least [`MAX_VERIFIED`] known candidates
/// certainly precede is never tried and is left out. Stops adding queries' candidates at
/// [`SPECULATION_SEGMENTS`] body segments.
pub fn speculative(search: &Search) -> Vec<Ask> {
    // Per query: (path length or its bound, sensor, reached straight, ground, hidden).
    type HiddenSensor = (f32, usize, bool, Vec3, [bool; 3]);
    let mut per_query: Vec<Vec<HiddenSensor>> = vec![Vec::new(); search.queries.len()];
    for s in &search.sensors {
        let (Some(g), true, Some(_)) = (s.ground, s.standable, s.fit) else {
            continue;
        };
        if !s.hidden.iter().any(|&h| h) {
            continue;
        }
        let len = match &s.path {
            Some(p) if s.straight => path_length(p),
            _ => match (search.vias[s.query].iter())
                .map(|v| path_length(v) + v.last().unwrap().distance(g))
                .min_by(f32::total_cmp)
            {
                Some(l) => l,
                None => continue,
            },
        };
        per_query[s.query].push((len, s.index, s.straight, g, s.hidden));
    }
    let body = BodyParams::standard();
    let mut asks = Vec::new();
    let mut segments = 0;
    for (qi, cands) in per_query.iter().enumerate() {
        let q = &search.queries[qi];
        for &(len, i, _, g, hidden) in cands {
            let before = (cands.iter())
                .filter(|c| c.2 && c.1 != i && (length_key(c.0), c.1) < (length_key(len), i))
                .count();
            if before >= MAX_VERIFIED {
                continue;
            }
            for p in Posture::ALL.into_iter().filter(|&p| hidden[p as usize]) {
                segments += body.points(&q.agent, p) * q.observers.len();
                asks.push(Ask {
                    query: qi,
                    sensor: i,
                    posture: p,
                    ground: g,
                });
            }
        }
        if segments > SPECULATION_SEGMENTS {
            break;
        }
    }
    asks
}
