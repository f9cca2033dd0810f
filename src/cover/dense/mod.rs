//! The dense cover search: the nearest spot, by walking distance around obstacles, where the
//! agent's whole body is hidden from every observer.
//!
//! Candidates are the cells of a world-aligned grid (`cell`, 0.25 m by default: the cover
//! field's grid) within `radius` of the agent. A Dijkstra search over the grid grows outward
//! from the agent by path length, and asks the engine only about the cells it reaches, in
//! batches (waves): what every query needs next goes to the engine together, so a thousand
//! agents cost the same few engine calls per wave as one.
//!
//! - **Ground** of a cell: the floor of the kept walk surface ([`Surface`]) within
//!   `step_height` of the cell it is entered from, nearest to it (walkable material, slope
//!   within `max_slope`).
//! - **Fit**: the highest posture whose whole disc is clear there (also from the walk surface).
//!   The agent moves crouching or standing, so a cell where only lying down fits can be the
//!   destination but is not walked through. A diagonal step needs both cells beside it.
//! - **Hidden**: the whole body ([`super::body`]) of a fitting posture is hidden from every
//!   observer under the query's mask. The prone body is tested first (its head centre, then its
//!   whole sample; on the CPU the sample's two ends before the rest): no higher posture hides
//!   where lying down does not, so that is the test a cell must pass to be a candidate;
//!   crouching and standing are traced for candidates only.
//! - **Choice**: the nearest candidate by path length; among those within `posture_tie` metres
//!   more, the highest hidden posture. The chosen spot is then measured with the intervis
//!   humanoid ([`super::verify::intervis_exposure`]); any exposed pixel rejects it and the search
//!   goes on to the next candidate, up to `max_rejections` times.
//! - **Path**: the grid path, string-pulled (a corner is dropped when the straight line between
//!   its neighbours crosses only cells the search has found walkable), from the agent's feet.
//!
//! Backends give identical answers: every test goes through the engine's kernels (GPU or CPU),
//! which agree bit for bit. Ground, clearance and visibility are cached per cell for the whole
//! batch, so agents that share observers share the work.

mod eager;
mod local;
mod queue;
mod shared;
mod surface;
#[cfg(test)]
mod tests;

pub use surface::{Floor, Surface, SurfaceStats, MAX_NEW_TILES, TILE};

use super::body::BodyParams;
use super::field::CellCover;
use super::verify::{intervis_exposure, Candidate, Check, Rejection};
use super::{Agent, Posture};
use crate::scene::{Mask, Scene};
use crate::{Engine, Error, Result};
use glam::Vec3;
use local::{Local, Phase};
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use shared::{Shared, Wave};

/// Dense search settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DenseParams {
    /// Grid cell side (metres). Default 0.25 m, the cover field's.
    pub cell: f32,
    /// Cells farther than this from the agent (horizontally) are not searched. Default 20 m: the
    /// cover field's 40 m square.
    pub radius: f32,
    /// Highest step up or down between neighbouring cells (metres). Default 0.3 m.
    pub step_height: f32,
    /// Steepest standable slope (radians). Default 45 degrees.
    pub max_slope: f32,
    /// Among candidates at most this much farther (metres of path) than the nearest, the highest
    /// hidden posture wins (nearest first, posture second). Default 0.25 m: one cell.
    pub posture_tie: f32,
    /// How far ahead the CPU's lazy search traces bodies: a cell's prone head is asked for when
    /// the search first reaches the cell, and each next stage in the wave after, but a whole
    /// body (tens of rays) only for cells up to this much path length beyond the nearest open
    /// one. Default 0.25 m (one cell): on the CPU a wave costs no wait, so the narrowest band
    /// traces least. The GPU's strategy traces up front and does not use it.
    pub band: f32,
    /// The body sample.
    pub body: BodyParams,
    /// Measure the chosen spot with the intervis humanoid. Default on.
    pub verify_intervis: bool,
    /// Intervis rejections before a query gives up. Default 32.
    pub max_rejections: usize,
    /// Return every cell the search closed in [`DenseAnswer::explored`] (pictures, checks).
    /// Default off: a game asks for the choice, and the list is about 9,000 cells (180 KB) a
    /// `village` query; the answer keeps their count in [`DenseAnswer::explored_cells`].
    pub explored: bool,
}

impl DenseParams {
    /// The defaults (see each field).
    #[must_use]
    pub const fn standard() -> DenseParams {
        DenseParams {
            cell: 0.25,
            radius: 20.0,
            step_height: 0.3,
            max_slope: std::f32::consts::FRAC_PI_4,
            posture_tie: 0.25,
            band: 0.25,
            body: BodyParams::standard(),
            verify_intervis: true,
            max_rejections: 32,
            explored: false,
        }
    }
}

impl Default for DenseParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// Largest grid a query may search: `(2 * radius / cell)^2` cells.
pub const MAX_CELLS: f64 = crate::limits::MAX_GRID_CELLS as f64;
/// Largest number of queries in one call.
pub const MAX_QUERIES: usize = 1 << 20;

/// One agent's question.
#[derive(Clone, Debug)]
pub struct DenseQuery {
    pub agent: Agent,
    /// Observers' eyes.
    pub observers: Vec<Vec3>,
    /// `Mask::SIGHT` for concealment, `Mask::FIRE` for cover.
    pub mask: Mask,
}

/// The chosen spot.
#[derive(Clone, Debug, PartialEq)]
pub struct DenseChoice {
    /// Ground point at the cell's centre.
    pub position: Vec3,
    /// The highest posture whose whole body is hidden there (and fits).
    pub posture: Posture,
    /// From the agent's feet to the spot, string-pulled.
    pub path: Vec<Vec3>,
    pub path_length: f32,
    /// Per observer: the share of the body sample seen (0 for every observer: hidden).
    pub exposure: Vec<f32>,
    /// Per observer: exposed pixels of the intervis humanoid, when measured.
    pub intervis_exposed: Option<Vec<u32>>,
    /// The last check that passed: `Intervis` when measured, else `Body`.
    pub decided_by: Check,
}

/// A cell the search reached, for pictures and checks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Explored {
    pub position: Vec3,
    /// Path length from the agent.
    pub path_length: f32,
    /// `Exposed`, or `Hidden(p)` (p the highest hidden posture where it was worked out,
    /// else prone).
    pub cover: CellCover,
}

/// The answer to one [`DenseQuery`].
#[derive(Clone, Debug, PartialEq)]
pub struct DenseAnswer {
    pub choice: Option<DenseChoice>,
    pub rejected: Vec<Rejection>,
    /// The cells the search closed, in order, when [`DenseParams::explored`] is on; else
    /// empty.
    pub explored: Vec<Explored>,
    /// How many cells the search closed (kept either way).
    pub explored_cells: usize,
    /// Rays this query asked for (work shared with other queries counts once, for the first).
    pub rays: usize,
}

/// Queries whose search state is held at once (each holds a square of cells around its agent);
/// a larger batch is answered in chunks of this many, sharing the caches.
const CHUNK: usize = 64;

/// Candidates per query measured with the intervis humanoid in one call on a GPU, nearest
/// first (as the search would try them, each assumed turned down): one wait covers the
/// usual rejections (in a `village` batch of 1,000 a fifth of the answers hold one, 9 hold
/// two or three), and each spot measured that a query does not need costs a view per
/// observer and a stretch of search. The CPU measures one at a time (no wait to save).
pub const INTERVIS_AHEAD: usize = 3;

/// Candidates measured ahead on a GPU in each later call, for the queries whose first
/// [`INTERVIS_AHEAD`] were all turned down: they are few, so measuring many costs little,
/// and each further call would be a wait for the whole batch.
pub const INTERVIS_AHEAD_AGAIN: usize = 8;

/// Intervis verdicts known so far: (observer group, spot, posture) -> exposed pixels per
/// observer. The measurement depends on the body, the observers and the mask, which a group
/// shares, so agents of a group that come to the same spot share its verdict.
type Verdicts = FxHashMap<(u32, [u32; 3], u8), Vec<u32>>;

fn verdict_key(group: u32, at: Vec3, posture: Posture) -> (u32, [u32; 3], u8) {
    (group, at.to_array().map(f32::to_bits), posture as u8)
}

/// Answers many dense cover queries; see the module docs. Queries with the same observers, mask
/// and body share visibility work. Builds a walk surface for this call; keep one
/// ([`find_cover_on`]) to answer later queries without tracing ground or clearance again.
pub fn find_cover(
    engine: &Engine,
    scene: &Scene,
    queries: &[DenseQuery],
    params: &DenseParams,
) -> Result<Vec<DenseAnswer>> {
    find_cover_on(engine, scene, &mut Surface::new(), queries, params)
}

/// [`find_cover`] on a kept walk surface: the tiles the queries need are built (or rebuilt
/// where the scene changed) first, then only visibility is traced.
///
/// On a GPU every reachable cell's prone head, then the nearest hidden heads' whole bodies,
/// are traced for the whole batch up front (`dense/eager.rs`), and the intervis measurement takes
/// the first [`INTERVIS_AHEAD`] candidates of every query at once: three waits for a batch of
/// any size when nothing is missing, a fourth where a query has those all turned down. The CPU
/// searches lazily, the cells it reaches wave by wave. Both choose alike: the same search runs
/// over the same cached results.
pub fn find_cover_on(
    engine: &Engine,
    scene: &Scene,
    surface: &mut Surface,
    queries: &[DenseQuery],
    params: &DenseParams,
) -> Result<Vec<DenseAnswer>> {
    let eager = engine.backend() == crate::Backend::Gpu;
    answer(engine, scene, surface, queries, params, eager)
}

/// [`find_cover_on`] with the strategy named: `eager` (the GPU's) traces up front and
/// measures several spots a query at once, else the CPU's lazy search. Both choose alike.
fn answer(
    engine: &Engine,
    scene: &Scene,
    surface: &mut Surface,
    queries: &[DenseQuery],
    params: &DenseParams,
    gpu: bool,
) -> Result<Vec<DenseAnswer>> {
    validate(queries, params)?;
    let agents: Vec<Agent> = queries.iter().map(|q| q.agent).collect();
    surface.prepare(engine, scene, &agents, params)?;
    let mut d = Driver {
        engine,
        scene,
        queries,
        params,
        surface,
        shared: Shared::new(queries),
        rays: vec![0; queries.len()],
        verdicts: Verdicts::default(),
        gpu,
    };
    if gpu {
        eager::prefill(
            engine,
            scene,
            surface,
            queries,
            params,
            &mut d.shared,
            &mut d.rays,
        )?;
    }
    let mut answers: Vec<Option<DenseAnswer>> = vec![None; queries.len()];
    for round in 0.. {
        let open: Vec<usize> = (0..queries.len())
            .filter(|&q| answers[q].is_none())
            .collect();
        let (mut asks, mut specs) = (Vec::new(), Vec::new());
        let ahead = match (gpu, round) {
            (false, _) => 1,
            (true, 0) => INTERVIS_AHEAD,
            (true, _) => INTERVIS_AHEAD_AGAIN,
        };
        let (mut wave, mut waiting) = d.pass(&open, ahead, &mut answers, &mut asks, &mut specs)?;
        // The GPU gathers every search's needs of a pass into one wave.
        while !wave.is_empty() {
            log::debug!(
                "dense cover: a gathered wave of {} requests for {} queries",
                wave.len(),
                waiting.len()
            );
            wave.trace(engine, scene, queries, params, &mut d.shared, &mut d.rays)?;
            (wave, waiting) = d.pass(&waiting, ahead, &mut answers, &mut asks, &mut specs)?;
        }
        if asks.is_empty() {
            break;
        }
        log::debug!(
            "dense cover: {} spots of {} queries to the intervis measurement",
            asks.len(),
            open.len()
        );
        let groups = &d.shared.group_of;
        measure(engine, scene, queries, groups, &asks, &mut d.verdicts)?;
        for spec in specs {
            let qi = spec.qi;
            answers[qi] = spec.resolve(groups[qi], &d.verdicts, d.rays[qi]);
        }
    }
    Ok(answers
        .into_iter()
        .map(|a| a.expect("every query answered"))
        .collect())
}

/// Where one search stands after a pass.
enum Outcome {
    Waiting(usize),
    Done(usize, DenseAnswer),
    Asks(Speculation),
}

/// What one call of [`find_cover_on`] works with.
struct Driver<'a> {
    engine: &'a Engine,
    scene: &'a Scene,
    queries: &'a [DenseQuery],
    params: &'a DenseParams,
    surface: &'a Surface,
    shared: Shared,
    rays: Vec<usize>,
    verdicts: Verdicts,
    gpu: bool,
}

impl Driver<'_> {
    /// Runs the `open` searches from the start, in chunks, as far as the caches and verdicts
    /// allow: a finished one is answered, one awaiting an unknown verdict adds its next spots
    /// to `asks`. The CPU traces each chunk's waves as they come; the GPU gathers them into
    /// the returned wave, with the queries that wait on it (run again once it is traced).
    fn pass(
        &mut self,
        open: &[usize],
        ahead: usize,
        answers: &mut [Option<DenseAnswer>],
        asks: &mut Vec<(usize, Vec3, Posture)>,
        specs: &mut Vec<Speculation>,
    ) -> Result<(Wave, Vec<usize>)> {
        let mut gathered = Wave::default();
        let mut waiting = Vec::new();
        for chunk in open.chunks(CHUNK) {
            let mut states: Vec<Local> = chunk
                .iter()
                .map(|&qi| {
                    let mut s = Local::new(
                        qi,
                        &self.queries[qi],
                        self.params,
                        &self.shared,
                        self.surface,
                    );
                    s.eager = self.gpu;
                    s.all_eyes = self.queries.len() > CHUNK;
                    s
                })
                .collect();
            if self.gpu {
                self.run_all(&mut states, &mut gathered);
            } else {
                self.settle(&mut states)?;
            }
            let outcomes: Vec<Outcome> = states
                .into_par_iter()
                .map(|s| self.outcome(s, ahead))
                .collect();
            for o in outcomes {
                match o {
                    Outcome::Waiting(qi) => waiting.push(qi),
                    Outcome::Done(qi, a) => answers[qi] = Some(a),
                    Outcome::Asks(spec) => {
                        asks.extend(spec.asks());
                        specs.push(spec);
                    }
                }
            }
        }
        Ok((gathered, waiting))
    }

    /// Runs every search as far as what is known allows, in parallel; what they ask for goes
    /// into `wave` in query order.
    fn run_all(&self, states: &mut [Local], wave: &mut Wave) {
        if let ([s], true) = (&mut *states, wave.is_empty()) {
            // One search (a query alone) into an empty wave: no threads to wake, and its
            // requests go straight into `wave`, whose lists keep their room from the last
            // one. (A wave holding others' requests merges, which drops repeats.)
            run(s, self.params, &self.shared, &self.verdicts, wave);
            return;
        }
        let asked: Vec<Wave> = states
            .par_iter_mut()
            .map(|s| {
                let mut w = Wave::default();
                run(s, self.params, &self.shared, &self.verdicts, &mut w);
                w
            })
            .collect();
        for w in asked {
            wave.absorb(w);
        }
    }

    /// Where a search stands after a run: waiting for a wave, answered, or awaiting verdicts
    /// on its next spots.
    fn outcome(&self, s: Local, ahead: usize) -> Outcome {
        if s.waiting() {
            return Outcome::Waiting(s.qi);
        }
        if s.phase == Phase::Done {
            let qi = s.qi;
            let mut a = s.answer;
            a.rays = self.rays[qi];
            return Outcome::Done(qi, a);
        }
        let (p, sh, v) = (self.params, &self.shared, &self.verdicts);
        Outcome::Asks(speculate(s, p, sh, v, ahead))
    }

    /// Runs the searches to their answers, tracing what they ask for in waves and measuring
    /// each awaited spot as it comes (the CPU: no wait to save, and the searches go on from
    /// where they stand instead of starting again).
    fn settle(&mut self, states: &mut [Local]) -> Result<()> {
        loop {
            self.search(states)?;
            let asks: Vec<(usize, Vec3, Posture)> = states
                .iter()
                .filter_map(|s| s.pending_choice().map(|(at, p)| (s.qi, at, p)))
                .collect();
            if asks.is_empty() {
                return Ok(());
            }
            let groups = &self.shared.group_of;
            measure(
                self.engine,
                self.scene,
                self.queries,
                groups,
                &asks,
                &mut self.verdicts,
            )?;
        }
    }

    /// Runs the searches as far as the verdicts known allow, tracing what they ask for in
    /// waves.
    fn search(&mut self, states: &mut [Local]) -> Result<()> {
        let mut wave = Wave::default();
        loop {
            wave.clear();
            self.run_all(states, &mut wave);
            if wave.is_empty() {
                return Ok(());
            }
            log::debug!(
                "dense cover: a lazy wave of {} visibility requests (head, body, higher postures: {:?})",
                wave.len(),
                wave.stages()
            );
            wave.trace(
                self.engine,
                self.scene,
                self.queries,
                self.params,
                &mut self.shared,
                &mut self.rays,
            )?;
            for s in states.iter_mut() {
                s.sync(&self.shared);
            }
        }
    }
}

/// Advances one search, applying known verdicts, until it is done, needs visibility (asked
/// for in `wave`) or awaits an unknown verdict.
fn run(s: &mut Local, params: &DenseParams, shared: &Shared, verdicts: &Verdicts, wave: &mut Wave) {
    loop {
        s.advance(params, shared, wave);
        let Some((at, posture)) = s.pending_choice() else {
            return;
        };
        match verdicts.get(&verdict_key(s.group, at, posture)) {
            Some(px) => s.verified(px.clone(), params),
            None => return,
        }
    }
}

/// One spot a search would measure next, every spot before it assumed turned down.
struct Step {
    at: Vec3,
    posture: Posture,
    /// The choice if this spot shows no pixel (its pixels are filled in then).
    choice: DenseChoice,
    /// Cells explored and spots turned down when the search came to this one.
    explored: usize,
    rejected: usize,
}

/// What a search will answer once its next spots are measured, worked out before they are, so
/// the search need not run again after the measurement when one of them passes.
struct Speculation {
    qi: usize,
    steps: Vec<Step>,
    /// The search's answer as it stood after every step was turned down.
    after: DenseAnswer,
    /// Whether that ended the search.
    done: bool,
}

impl Speculation {
    /// The spots to measure.
    fn asks(&self) -> impl Iterator<Item = (usize, Vec3, Posture)> + '_ {
        self.steps.iter().map(|st| (self.qi, st.at, st.posture))
    }

    /// The answer, given the verdicts on the steps; `None` when every step is turned down and
    /// the search goes on (or a verdict is missing).
    fn resolve(self, group: u32, verdicts: &Verdicts, rays: usize) -> Option<DenseAnswer> {
        let mut a = self.after;
        a.rays = rays;
        for st in self.steps {
            let px = verdicts.get(&verdict_key(group, st.at, st.posture))?;
            if px.iter().all(|&n| n == 0) {
                let mut choice = st.choice;
                choice.intervis_exposed = Some(px.clone());
                a.choice = Some(choice);
                a.explored.truncate(st.explored);
                a.explored_cells = st.explored;
                a.rejected.truncate(st.rejected);
                return Some(a);
            }
            a.rejected[st.rejected].exposed.clone_from(px);
        }
        self.done.then_some(a)
    }
}

/// The next `n` spots search `s` would measure, each assumed turned down, as far as the cache
/// holds what they need, with the answer each would give.
fn speculate(
    mut s: Local,
    params: &DenseParams,
    shared: &Shared,
    verdicts: &Verdicts,
    n: usize,
) -> Speculation {
    let mut steps = Vec::new();
    while steps.len() < n {
        let (Some((at, posture)), Some(choice)) = (s.pending_choice(), s.choice_if_hidden(params))
        else {
            break;
        };
        steps.push(Step {
            at,
            posture,
            choice,
            explored: s.answer.explored_cells,
            rejected: s.answer.rejected.len(),
        });
        s.verified(vec![u32::MAX], params);
        let mut scratch = Wave::default();
        run(&mut s, params, shared, verdicts, &mut scratch);
        if !scratch.is_empty() {
            break;
        }
    }
    Speculation {
        qi: s.qi,
        steps,
        done: s.phase == Phase::Done,
        after: s.answer,
    }
}

/// Measures spots with the intervis humanoid, in one call, and files the verdicts; a spot
/// asked for twice in a group, or known already, is measured once.
fn measure(
    engine: &Engine,
    scene: &Scene,
    queries: &[DenseQuery],
    group_of: &[u32],
    asks: &[(usize, Vec3, Posture)],
    verdicts: &mut Verdicts,
) -> Result<()> {
    let key = |&(qi, at, posture): &(usize, Vec3, Posture)| verdict_key(group_of[qi], at, posture);
    let mut seen = rustc_hash::FxHashSet::default();
    let asks: Vec<(usize, Vec3, Posture)> = asks
        .iter()
        .filter(|a| {
            let k = key(a);
            !verdicts.contains_key(&k) && seen.insert(k)
        })
        .copied()
        .collect();
    let cands: Vec<Candidate> = asks
        .iter()
        .map(|&(qi, ground, posture)| Candidate {
            agent: &queries[qi].agent,
            ground,
            posture,
            observers: &queries[qi].observers,
            mask: queries[qi].mask,
        })
        .collect();
    let pixels = intervis_exposure(engine, scene, &cands)?;
    for (a, px) in asks.iter().zip(pixels) {
        verdicts.insert(key(a), px);
    }
    Ok(())
}

fn validate(queries: &[DenseQuery], p: &DenseParams) -> Result<()> {
    if queries.len() > MAX_QUERIES {
        return Err(Error::InvalidInput(format!(
            "{} cover queries in one call, over the limit of {MAX_QUERIES}; split the batch",
            queries.len()
        )));
    }
    validate_params(p)?;
    check_memory(queries.len(), p)?;
    for (i, q) in queries.iter().enumerate() {
        q.agent.validate(i)?;
        if let Some(o) = q.observers.iter().find(|o| !o.is_finite()) {
            return Err(Error::InvalidInput(format!(
                "cover query {i}: observer {o} is not finite"
            )));
        }
        p.body.validate(&q.agent)?;
    }
    Ok(())
}

/// Refuses a batch whose search state (a square of cells per query held at once, [`CHUNK`]
/// queries at a time) and, with [`DenseParams::explored`] on, whose lists of closed cells (at
/// most the square's cells per query) this machine's available memory cannot hold.
fn check_memory(queries: usize, p: &DenseParams) -> Result<()> {
    let cells = local::square_cells(p);
    let held = queries.min(CHUNK) as u64 * cells * local::CELL_BYTES;
    let listed = if p.explored {
        queries as u64 * cells * std::mem::size_of::<Explored>() as u64
    } else {
        0
    };
    crate::limits::check_memory(
        "the dense cover search's cells",
        held.saturating_add(listed),
        if p.explored {
            "turn DenseParams::explored off (the answers keep explored_cells), answer fewer \
             agents per call, or use a smaller radius or larger cells"
        } else {
            "use a smaller radius or larger cells"
        },
    )
}

/// Checks the settings before anything is sized from them.
fn validate_params(p: &DenseParams) -> Result<()> {
    let bad = |m: String| Err(Error::InvalidInput(m));
    let positive = |x: f32| x.is_finite() && x > 0.0;
    if !(positive(p.cell) && positive(p.radius) && positive(p.band)) {
        return bad(format!(
            "cell {}, radius {} and band {} must be positive metres (defaults 0.25, 20, 0.25)",
            p.cell, p.radius, p.band
        ));
    }
    let cells = (2.0 * f64::from(p.radius) / f64::from(p.cell)).powi(2);
    if cells > MAX_CELLS {
        return bad(format!(
            "a {} m radius of {} m cells is {cells:.0} cells, over the limit of {MAX_CELLS}; \
             use larger cells or a smaller radius",
            p.radius, p.cell
        ));
    }
    if !(p.step_height.is_finite() && p.step_height >= 0.0)
        || !(p.posture_tie.is_finite() && p.posture_tie >= 0.0)
        || p.max_slope.is_nan()
    {
        return bad(
            "step_height and posture_tie must be finite metres >= 0, max_slope radians".into(),
        );
    }
    Ok(())
}
