//! The simulation: teams move by staggered look-ahead plans against one ETA manager, search
//! with their threat maps as they go, choose and take destinations at the goal.

use super::dest::{assign, choose_destinations, path_lengths, DestParams};
use super::eta::{Eta, Stop};
use super::plan::{plain_path, timed_path, PlanParams, Planner, Route, Task};
use super::world::{PathSearch, World};
use crate::tpm::{Member, SearchParams, Searcher, TpmParams, TpmSet};
use crate::{Error, Result};
use glam::Vec3;

/// Most members in one simulation.
pub const MAX_MEMBERS: usize = 4096;

/// One team's order: where its members stand and where it goes.
#[derive(Clone, Debug, PartialEq)]
pub struct Order {
    /// Each member's start node, the leader first.
    pub start: Vec<u32>,
    /// The node the team moves to.
    pub goal: u32,
    /// The sector to watch from the goal: yaws in degrees (from +x toward +z), swept from the
    /// first to the second.
    pub sector: Option<(f32, f32)>,
}

/// Everything a simulation is run with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SimParams {
    pub plan: PlanParams,
    pub dest: DestParams,
    pub search: SearchParams,
    pub tpm: TpmParams,
    /// Cover weight of the team path: stepping onto a node costs the edge's cost times
    /// `1 + cover_weight * exposure`. Default 1.
    pub cover_weight: f32,
    /// The target sector's nodes lie within this distance of the goal. Default 60 m.
    pub sector_range: f32,
    /// The simulation stops here if the teams have not all arrived. Default 900 s.
    pub max_seconds: f32,
}

impl SimParams {
    /// The defaults (see each field).
    #[must_use]
    pub const fn standard() -> SimParams {
        SimParams {
            plan: PlanParams::standard(),
            dest: DestParams::standard(),
            search: SearchParams::standard(),
            tpm: TpmParams::standard(),
            cover_weight: 1.0,
            sector_range: 60.0,
            max_seconds: 900.0,
        }
    }
}

impl Default for SimParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// One member in a frame.
#[derive(Clone, Debug, PartialEq)]
pub struct MemberFrame {
    pub team: u32,
    /// The node it last reached.
    pub node: u32,
    /// Where it is (part-way along an edge while walking).
    pub position: Vec3,
    /// Its last gaze (radians from +x toward +z).
    pub gaze_yaw: f32,
    /// Its forecast from the node it last reached on.
    pub plan: Vec<u32>,
}

/// The state of every member when one of them reaches a node.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    pub t: f32,
    /// Every member of every team, in the same order in every frame.
    pub members: Vec<MemberFrame>,
    /// Highest and mean threat over every team's map.
    pub tpm_max: f32,
    pub tpm_mean: f32,
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SimReport {
    /// Look-ahead plans made, and how many found no action at all (the member kept its forecast).
    pub plans: usize,
    pub refused: usize,
    /// Catch-up plans made, in all and by each member.
    pub catch_ups: usize,
    pub catch_ups_by_member: Vec<usize>,
    /// Destinations swapped between a member and the teammate blocking its way there.
    pub swaps: usize,
    /// Teammates sent ahead along a catch-up path they stood on.
    pub pushes: usize,
    /// Search frames, and member-frames within the dispersion band (nearest teammate at least
    /// `min_distance` away, farthest at most `max_distance`) before destinations were chosen.
    pub search_frames: usize,
    pub band_samples: usize,
    pub in_band: usize,
    /// Simulated seconds.
    pub seconds: f32,
}

impl SimReport {
    /// Share of member-frames in the dispersion band (1 when none were sampled).
    #[must_use]
    pub fn band_share(&self) -> f64 {
        if self.band_samples == 0 {
            1.0
        } else {
            self.in_band as f64 / self.band_samples as f64
        }
    }
}

struct MemberState {
    team: u32,
    /// Index in its track of the stop it last reached.
    cur: usize,
    /// What it makes progress along, and its string-pull index into it.
    route: std::sync::Arc<Route>,
    spp: usize,
    destination: Option<u32>,
    done: bool,
    next_replan: f32,
    gaze: f32,
    history: Vec<Stop>,
    /// The best progress (`StringPullCost` at a node reached) so far, and when it was made.
    progress: f32,
    progress_at: f32,
    /// Makes no plan before this time: held back ([`Simulation::hold`]), or following a
    /// catch-up path to its end.
    held_until: f32,
}

struct TeamState {
    members: Vec<u32>,
    goal: u32,
    path: Vec<u32>,
    sector_view: Option<Vec<f32>>,
    destinations: Option<Vec<u32>>,
}

/// Several fireteams moving at once over one [`World`].
pub struct Simulation<'w> {
    world: &'w World,
    params: SimParams,
    teams: Vec<TeamState>,
    members: Vec<MemberState>,
    eta: Eta,
    planner: Planner,
    search: PathSearch,
    tpm: TpmSet,
    searcher: Searcher,
    now: f32,
    next_frame: f32,
    frames: Vec<Frame>,
    report: SimReport,
    arrived: bool,
    finished: bool,
}

/// A finished run.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// Per team: its path (leader's start to goal).
    pub team_paths: Vec<Vec<u32>>,
    /// Per team: each member's destination (empty if never chosen).
    pub destinations: Vec<Vec<u32>>,
    pub arrived: bool,
    pub frames: Vec<Frame>,
    /// Per member: every stop it made or still forecasts, in order.
    pub stops: Vec<Vec<Stop>>,
    /// Per team: its threat map at the end.
    pub tpm: Vec<Vec<f32>>,
    pub report: SimReport,
}

const EPS: f32 = 1e-4;

/// Checks the orders and the parameters against a graph of `n` nodes: at least one team, none
/// empty, at most [`MAX_MEMBERS`] members, parameters in range, nodes in the graph and no two
/// members on one node. Returns the number of members.
fn check_orders(orders: &[Order], params: &SimParams, n: usize) -> Result<usize> {
    let total: usize = orders.iter().map(|o| o.start.len()).sum();
    if orders.is_empty() || orders.iter().any(|o| o.start.is_empty()) || total > MAX_MEMBERS {
        return Err(Error::InvalidInput(format!(
            "{} teams of {total} members in all: give at least one team of at least one \
             member, at most {MAX_MEMBERS} members",
            orders.len()
        )));
    }
    if !(params.max_seconds.is_finite()
        && params.max_seconds > 0.0
        && params.max_seconds <= 1e6
        && params.cover_weight.is_finite()
        && params.cover_weight >= 0.0
        && params.sector_range > 0.0
        && params.dest.radius > 0.0
        && params.dest.trigger >= 0.0)
    {
        return Err(Error::InvalidInput(
            "simulation: max seconds must be in (0, 1e6], cover weight >= 0, sector range \
             and destination radius positive"
                .into(),
        ));
    }
    let mut seen = vec![false; n];
    for o in orders {
        for &s in o.start.iter().chain([&o.goal]) {
            if s as usize >= n {
                return Err(Error::InvalidInput(format!(
                    "node {s} is out of range: the graph has {n} nodes"
                )));
            }
        }
        for &s in &o.start {
            if std::mem::replace(&mut seen[s as usize], true) {
                return Err(Error::InvalidInput(format!(
                    "two members start at node {s}: give each member its own node"
                )));
            }
        }
    }
    Ok(total)
}

/// The teams and members as they start: each team's path from its leader to its goal, and
/// the node each member stands on.
struct Start {
    teams: Vec<TeamState>,
    members: Vec<MemberState>,
    nodes: Vec<u32>,
}

impl Start {
    /// Finds each team's path (an error names a team whose goal its leader cannot reach) and
    /// staggers the members' first replans over one replan period.
    fn new(
        world: &World,
        orders: &[Order],
        params: &SimParams,
        search: &mut PathSearch,
        total: usize,
    ) -> Result<Start> {
        let mut teams = Vec::new();
        let mut members = Vec::new();
        let mut nodes = Vec::new();
        let stagger = params.plan.replan_seconds / total as f32;
        for (t, o) in orders.iter().enumerate() {
            let path = search
                .find(world, o.start[0], o.goal, params.cover_weight)
                .ok_or_else(|| {
                    Error::InvalidInput(format!(
                        "team {t}: the goal node {} cannot be reached from the leader's node {}",
                        o.goal, o.start[0]
                    ))
                })?
                .nodes;
            let route = std::sync::Arc::new(Route::new(world, path.clone()));
            let ids: Vec<u32> =
                (members.len() as u32..(members.len() + o.start.len()) as u32).collect();
            for &s in &o.start {
                let spp = route.pull_point(world, s, 0);
                members.push(MemberState {
                    team: t as u32,
                    cur: 0,
                    route: route.clone(),
                    spp,
                    destination: None,
                    done: false,
                    next_replan: members.len() as f32 * stagger,
                    gaze: 0.0,
                    progress: f32::INFINITY,
                    progress_at: 0.0,
                    history: Vec::new(),
                    held_until: 0.0,
                });
                nodes.push(s);
            }
            let sector_view = o
                .sector
                .map(|s| sector_view(world, o.goal, s, params.sector_range))
                .transpose()?;
            teams.push(TeamState {
                members: ids,
                goal: o.goal,
                path,
                sector_view,
                destinations: None,
            });
        }
        Ok(Start {
            teams,
            members,
            nodes,
        })
    }
}

impl<'w> Simulation<'w> {
    /// Teams at their start nodes; the search's ties are broken from `seed`.
    pub fn new(world: &'w World, orders: &[Order], params: SimParams, seed: u64) -> Result<Self> {
        params.plan.validate()?;
        let n = world.graph().len();
        let total = check_orders(orders, &params, n)?;
        let mut search = PathSearch::new();
        let start = Start::new(world, orders, &params, &mut search, total)?;
        let tpm = TpmSet::new(world.graph(), start.teams.len(), params.tpm)?;
        let searcher = Searcher::new(params.search, seed)?;
        let mut sim = Simulation {
            world,
            params,
            teams: start.teams,
            members: start.members,
            eta: Eta::new(n, &start.nodes),
            planner: Planner::new(),
            search,
            tpm,
            searcher,
            now: 0.0,
            next_frame: params.search.frame_seconds,
            frames: Vec::new(),
            report: SimReport {
                catch_ups_by_member: vec![0; total],
                ..SimReport::default()
            },
            arrived: false,
            finished: false,
        };
        sim.push_frame();
        Ok(sim)
    }

    /// The ETA manager (every member's forecast).
    #[must_use]
    pub fn eta(&self) -> &Eta {
        &self.eta
    }

    /// The simulated time.
    #[must_use]
    pub fn now(&self) -> f32 {
        self.now
    }

    /// What happened so far.
    #[must_use]
    pub fn report(&self) -> &SimReport {
        &self.report
    }

    /// Keeps member `m` where it stands until `until` (seconds): it makes no plan before then
    /// (a member pinned down by fire, or a test of the catch-up).
    pub fn hold(&mut self, m: u32, until: f32) {
        if let Some(s) = self.members.get_mut(m as usize) {
            s.held_until = until;
        }
    }

    /// Runs until every member stands at its destination or `max_seconds` pass.
    pub fn run(mut self) -> Result<Outcome> {
        while self.advance()? {}
        Ok(self.finish())
    }

    /// Processes the next moment anything happens (an arrival, a plan, a search frame);
    /// `false` once every member stands at its destination or `max_seconds` have passed.
    pub fn advance(&mut self) -> Result<bool> {
        if self.finished {
            return Ok(false);
        }
        let t = self.next_event();
        if t > self.params.max_seconds {
            self.now = self.params.max_seconds;
            self.finished = true;
        } else {
            self.arrived = self.step(t)?;
            self.finished = self.arrived;
        }
        self.report.seconds = self.now;
        Ok(!self.finished)
    }

    /// The threat maps (one per team).
    #[must_use]
    pub fn tpm(&self) -> &TpmSet {
        &self.tpm
    }

    /// The frames so far.
    #[must_use]
    pub fn frames(&self) -> &[Frame] {
        &self.frames
    }

    /// What the run did, as it stands.
    #[must_use]
    pub fn finish(self) -> Outcome {
        let stops = self
            .members
            .iter()
            .enumerate()
            .map(|(m, s)| {
                let mut all = s.history.clone();
                all.extend_from_slice(self.eta.track(m as u32));
                all
            })
            .collect();
        Outcome {
            team_paths: self.teams.iter().map(|t| t.path.clone()).collect(),
            destinations: self
                .teams
                .iter()
                .map(|t| t.destinations.clone().unwrap_or_default())
                .collect(),
            arrived: self.arrived,
            frames: self.frames,
            stops,
            tpm: (0..self.teams.len() as u32)
                .map(|t| self.tpm.values(t))
                .collect(),
            report: self.report,
        }
    }

    /// The next time anything happens: an arrival, a plan, a search frame.
    fn next_event(&self) -> f32 {
        let mut t = self.next_frame;
        for (m, s) in self.members.iter().enumerate() {
            let track = self.eta.track(m as u32);
            if let Some(next) = track.get(s.cur + 1) {
                t = t.min(next.arrive);
            }
            let due = s.next_replan.max(s.held_until);
            if !s.done && due <= track[s.cur].depart {
                t = t.min(due.max(self.now));
            }
        }
        t
    }

    /// Processes everything at time `t`; returns whether every member has arrived.
    fn step(&mut self, mut t: f32) -> Result<bool> {
        let nodes = self.world.graph().nodes();
        let mut reached = false;
        let start = t;
        for (m, s) in self.members.iter_mut().enumerate() {
            let track = self.eta.track(m as u32);
            while s.cur + 1 < track.len() && track[s.cur + 1].arrive <= start + EPS {
                s.cur += 1;
                // Arrivals within `EPS` are one moment: the latest of them.
                t = t.max(track[s.cur].arrive);
                reached = true;
                let node = track[s.cur].node;
                // Standing on the path, it has come at least that far along it.
                if let Some(j) = s.route.nodes.iter().position(|&v| v == node) {
                    s.spp = s.spp.max(j);
                }
                s.spp = s.route.pull_point(self.world, node, s.spp);
                let progress = s.route.pull_cost(self.world, node, s.spp);
                if progress < s.progress - 1.0 {
                    s.progress = progress;
                    s.progress_at = t;
                }
            }
        }
        self.now = t;
        for m in 0..self.members.len() {
            let s = &self.members[m];
            let at_node = self.eta.track(m as u32)[s.cur].depart >= t - EPS;
            if !s.done && at_node && s.next_replan <= t + EPS && s.held_until <= t + EPS {
                self.replan(m as u32);
                let s = &mut self.members[m];
                while s.next_replan <= t + EPS {
                    s.next_replan += self.params.plan.replan_seconds;
                }
            }
        }
        for team in 0..self.teams.len() {
            if self.teams[team].destinations.is_none() {
                let goal = nodes[self.teams[team].goal as usize];
                let near = self.teams[team].members.iter().any(|&m| {
                    self.eta.position(m, t, nodes).distance(goal) <= self.params.dest.trigger
                });
                if near {
                    self.choose(team)?;
                }
            }
        }
        if t + EPS >= self.next_frame {
            self.search_frame()?;
            self.next_frame += self.params.search.frame_seconds;
        }
        if reached {
            self.push_frame();
        }
        Ok(self.members.iter().all(|s| s.done))
    }

    /// A new forecast for member `m`, standing at a node now.
    fn replan(&mut self, m: u32) {
        let s = &self.members[m as usize];
        let here = self.eta.track(m)[s.cur];
        let leader = self.teams[s.team as usize].members[0];
        if s.destination == Some(here.node) && self.stay(m, here) {
            return;
        }
        let mut plan = self.catch_up(m, here.node, leader);
        let caught_up_at = plan
            .as_ref()
            .map(|stops| stops.last().expect("a stop").arrive);
        if plan.is_none() {
            plan = self.look_ahead(m, here.node, leader);
        }
        if let Some(stops) = plan {
            self.commit(m, stops, caught_up_at);
        }
    }

    /// Member `m`, at its destination (`here`), stays there for good if nobody is due there
    /// later; returns whether it did.
    fn stay(&mut self, m: u32, here: Stop) -> bool {
        let stay = vec![Stop {
            depart: f32::INFINITY,
            ..here
        }];
        if self.eta.free(here.node, here.arrive, f32::INFINITY, m) {
            self.commit(m, stay, None);
            self.members[m as usize].done = true;
            return true;
        }
        false
    }

    /// Member `m`'s timed walk from `from` to the place it must catch up with (a settled
    /// teammate in its way swaps with it), counted in the report; `None` when it need not
    /// catch up or cannot.
    fn catch_up(&mut self, m: u32, from: u32, leader: u32) -> Option<Vec<Stop>> {
        let world = self.world;
        let mut target = self.catch_up_target(m)?;
        if self.members[m as usize].destination == Some(target) {
            // On its way to its destination: a settled teammate in the way swaps with it.
            self.unblock(m, from);
            target = self.members[m as usize].destination.unwrap_or(target);
        }
        let mut path = plain_path(&mut self.search, world, from, target)?;
        let s = &mut self.members[m as usize];
        if s.destination == Some(target) {
            // Its look-ahead follows the same way on after this walk.
            s.route = std::sync::Arc::new(Route::new(world, path.nodes.clone()));
            s.spp = 0;
        }
        if s.destination.is_none() && m != leader {
            path.nodes.pop(); // the leader stands there
        }
        if path.nodes.len() <= 1 {
            return None;
        }
        self.push_ahead(m, &path.nodes);
        let p = &self.params.plan;
        let plan = timed_path(
            world,
            &self.eta,
            m,
            &path,
            self.now,
            p,
            path.nodes.len(),
            p.lookahead as usize,
        );
        if plan.is_some() {
            self.report.catch_ups += 1;
            self.report.catch_ups_by_member[m as usize] += 1;
        }
        plan
    }

    /// Member `m`'s look-ahead plan from `start` along its route, counted in the report (as
    /// refused when every first action is).
    fn look_ahead(&mut self, m: u32, start: u32, leader: u32) -> Option<Vec<Stop>> {
        let s = &self.members[m as usize];
        let team = &self.teams[s.team as usize];
        let task = Task {
            world: self.world,
            eta: &self.eta,
            member: m,
            team: &team.members,
            leader,
            route: &s.route,
            spp: s.spp,
            sector_view: team.sector_view.as_deref(),
            start,
            now: self.now,
        };
        self.report.plans += 1;
        let plan = self.planner.plan(&task, &self.params.plan).map(|p| p.stops);
        if plan.is_none() {
            self.report.refused += 1;
        }
        plan
    }

    /// Replaces member `m`'s forecast from the stop it stands at (`stops[0]`, whose arrival
    /// is kept); with `held`, it follows this forecast to that time before planning again.
    fn commit(&mut self, m: u32, mut stops: Vec<Stop>, held: Option<f32>) {
        let s = &mut self.members[m as usize];
        let track = self.eta.track(m);
        stops[0].arrive = track[s.cur].arrive;
        if let Some(end) = held {
            s.held_until = s.held_until.max(end);
            s.progress_at = s.progress_at.max(end);
        }
        s.history.extend_from_slice(&track[..s.cur]);
        s.cur = 0;
        self.eta.set(m, stops);
    }

    /// Before member `m` walks `path` by a plain plan: teammates standing on it (not at their
    /// destinations) walk ahead of it along the rest of the path, the farthest first, so a
    /// column in a one-node-wide corridor turns around instead of blocking its own way out.
    fn push_ahead(&mut self, m: u32, path: &[u32]) {
        let world = self.world;
        let team = self.members[m as usize].team as usize;
        let mut blockers: Vec<(usize, u32)> = Vec::new();
        for &o in &self.teams[team].members {
            let os = &self.members[o as usize];
            let stop = self.eta.track(o)[os.cur];
            // Standing (not walking an edge) and not settled at its destination.
            if o == m || os.done || stop.depart < self.now {
                continue;
            }
            if let Some(i) = path.iter().skip(1).position(|&v| v == stop.node) {
                blockers.push((i + 1, o));
            }
        }
        blockers.sort_unstable();
        for &(i, o) in blockers.iter().rev() {
            let ahead = super::world::Path {
                nodes: path[i..].to_vec(),
                cost: 0.0,
            };
            if ahead.nodes.len() < 2 {
                continue;
            }
            let p = &self.params.plan;
            if let Some(stops) = timed_path(
                world,
                &self.eta,
                o,
                &ahead,
                self.now,
                p,
                ahead.nodes.len(),
                p.lookahead as usize,
            ) {
                let end = stops.last().expect("a stop").arrive;
                self.commit(o, stops, Some(end));
                self.report.pushes += 1;
            }
        }
    }

    /// Member `m`, stalled on its way to its destination: when a teammate who already stands
    /// at its own destination blocks `m`'s path there (a one-node-wide alley), they swap
    /// destinations, so the one in front walks on and the one behind takes its place. The
    /// total path length of the team is unchanged when the blocker's node lies on the path.
    fn unblock(&mut self, m: u32, at: u32) {
        let Some(d) = self.members[m as usize].destination else {
            return;
        };
        let Some(path) = self.search.find(self.world, at, d, 0.0) else {
            return;
        };
        let team = self.members[m as usize].team as usize;
        let blocker = path.nodes[1..].iter().find_map(|&v| {
            self.teams[team].members.iter().copied().find(|&o| {
                let os = &self.members[o as usize];
                o != m && os.done && os.destination == Some(v)
            })
        });
        let Some(o) = blocker else {
            return;
        };
        let theirs = self.members[o as usize]
            .destination
            .expect("done at a destination");
        let world = self.world;
        for (who, to) in [(m, theirs), (o, d)] {
            let from = self.eta.track(who)[self.members[who as usize].cur].node;
            let path = self
                .search
                .find(world, from, to, 0.0)
                .map_or_else(|| vec![from], |p| p.nodes);
            let s = &mut self.members[who as usize];
            s.route = std::sync::Arc::new(Route::new(world, path));
            s.spp = 0;
            s.destination = Some(to);
            s.done = false;
            s.next_replan = s.next_replan.min(self.now);
        }
        let t = &mut self.teams[team];
        let i = t.members.iter().position(|&x| x == m);
        let j = t.members.iter().position(|&x| x == o);
        if let (Some(dests), Some(i), Some(j)) = (&mut t.destinations, i, j) {
            dests.swap(i, j);
        }
        self.report.swaps += 1;
    }

    /// Where member `m` must go by a plain path instead of its look-ahead, if anywhere: to its
    /// leader when it is too far away or stalled behind it; along the team path when it leads
    /// and is stalled with nobody straggling; to its destination when stalled on the way there.
    fn catch_up_target(&self, m: u32) -> Option<u32> {
        let world = self.world;
        let nodes = world.graph().nodes();
        let p = &self.params.plan;
        let s = &self.members[m as usize];
        let here = self.eta.track(m)[s.cur];
        let team = &self.teams[s.team as usize];
        let leader = team.members[0];
        let still = self.now - here.arrive >= p.stall_seconds;
        let circling = self.now - s.progress_at >= p.progress_seconds;
        if let Some(d) = s.destination {
            return (still || circling).then_some(d);
        }
        let pos = |o: u32| self.eta.position(o, self.now, nodes);
        let progress = |o: u32| {
            let st = &self.members[o as usize];
            let node = self.eta.track(o)[st.cur].node;
            st.route.pull_cost(world, node, st.spp)
        };
        if m != leader {
            let far = pos(m).distance(pos(leader)) > p.catch_up_distance;
            let behind = (still || circling) && progress(m) > progress(leader);
            let ls = &self.members[leader as usize];
            return (far || behind).then(|| self.eta.track(leader)[ls.cur].node);
        }
        let straggler = team
            .members
            .iter()
            .any(|&o| pos(o).distance(pos(m)) > p.max_distance);
        let path = &s.route.nodes;
        ((circling || (still && !straggler)) && here.node != path[path.len() - 1])
            .then(|| path[(s.spp + 2).min(path.len() - 1)])
    }

    /// Destination selection and assignment for `team`; each member then makes progress along
    /// its own path to its destination.
    fn choose(&mut self, team: usize) -> Result<()> {
        let world = self.world;
        let taken: Vec<u32> = self
            .teams
            .iter()
            .filter_map(|t| t.destinations.as_ref())
            .flatten()
            .copied()
            .collect();
        let t = &self.teams[team];
        let dests = choose_destinations(
            world,
            t.goal,
            t.members.len(),
            &taken,
            t.sector_view.as_deref(),
            &self.params.plan,
            &self.params.dest,
        )?;
        let at: Vec<u32> = t
            .members
            .iter()
            .map(|&m| self.eta.track(m)[self.members[m as usize].cur].node)
            .collect();
        let lengths = path_lengths(world, &mut self.search, &at, &dests);
        let pick = assign(&lengths);
        let ids = t.members.clone();
        let mut chosen = Vec::with_capacity(ids.len());
        for (k, &m) in ids.iter().enumerate() {
            let d = dests[pick[k]];
            chosen.push(d);
            let path = self
                .search
                .find(world, at[k], d, 0.0)
                .map(|p| p.nodes)
                .unwrap_or_else(|| vec![at[k]]);
            let s = &mut self.members[m as usize];
            s.route = std::sync::Arc::new(Route::new(world, path));
            s.spp = 0;
            s.destination = Some(d);
            s.next_replan = s.next_replan.min(self.now);
        }
        self.teams[team].destinations = Some(chosen);
        Ok(())
    }

    /// Every member looks toward its most threatening sector from the node it last reached;
    /// the maps advance by one frame. Samples the dispersion band.
    fn search_frame(&mut self) -> Result<()> {
        let world = self.world;
        let nodes = world.graph().nodes();
        let mut views = Vec::with_capacity(self.members.len());
        for (m, s) in self.members.iter().enumerate() {
            let node = self.eta.track(m as u32)[s.cur].node;
            views.push(world.view(node)?);
        }
        let members: Vec<Member<'_>> = self
            .members
            .iter()
            .zip(&views)
            .map(|(s, v)| Member {
                tpm: s.team,
                view: v,
            })
            .collect();
        let gazes = self.searcher.frame(&mut self.tpm, nodes, &members)?;
        for (s, g) in self.members.iter_mut().zip(gazes) {
            s.gaze = g.yaw;
        }
        self.report.search_frames += 1;
        let p = &self.params.plan;
        for t in &self.teams {
            if t.destinations.is_some() || t.members.len() < 2 {
                continue;
            }
            for &a in &t.members {
                let pa = self.eta.position(a, self.now, nodes);
                let (mut near, mut far) = (f32::INFINITY, 0.0f32);
                for &b in &t.members {
                    if a != b {
                        let d = pa.distance(self.eta.position(b, self.now, nodes));
                        near = near.min(d);
                        far = far.max(d);
                    }
                }
                self.report.band_samples += 1;
                if near >= p.min_distance && far <= p.max_distance {
                    self.report.in_band += 1;
                }
            }
        }
        Ok(())
    }

    fn push_frame(&mut self) {
        let nodes = self.world.graph().nodes();
        let raw = self.tpm.raw();
        let (max, sum) = raw
            .iter()
            .fold((0.0f32, 0.0f64), |(m, s), &v| (m.max(v), s + f64::from(v)));
        let members = self
            .members
            .iter()
            .enumerate()
            .map(|(m, s)| {
                let track = self.eta.track(m as u32);
                MemberFrame {
                    team: s.team,
                    node: track[s.cur].node,
                    position: self.eta.position(m as u32, self.now, nodes),
                    gaze_yaw: s.gaze,
                    plan: track[s.cur..].iter().map(|x| x.node).collect(),
                }
            })
            .collect();
        self.frames.push(Frame {
            t: self.now,
            members,
            tpm_max: max,
            tpm_mean: (sum / raw.len().max(1) as f64) as f32,
        });
    }
}

/// Share of the sector's nodes (within `range` of the goal, their yaw from the goal swept from
/// `sector.0` to `sector.1` degrees) each node sees.
fn sector_view(world: &World, goal: u32, sector: (f32, f32), range: f32) -> Result<Vec<f32>> {
    let (a, b) = sector;
    if !(a.is_finite() && b.is_finite()) {
        return Err(Error::InvalidInput(format!(
            "sector {a},{b}: give two finite yaws in degrees"
        )));
    }
    let nodes = world.graph().nodes();
    let g = nodes[goal as usize];
    let width = (b - a).rem_euclid(360.0);
    let width = if width == 0.0 { 360.0 } else { width };
    let inside: Vec<u32> = (0..nodes.len() as u32)
        .filter(|&j| {
            let d = nodes[j as usize] - g;
            let flat = glam::Vec2::new(d.x, d.z);
            if flat.length() > range || flat.length() < 0.5 {
                return false;
            }
            let yaw = d.z.atan2(d.x).to_degrees();
            (yaw - a).rem_euclid(360.0) <= width
        })
        .collect();
    let mut count = vec![0u32; nodes.len()];
    for &s in &inside {
        count[s as usize] += 1;
        for &j in world.los().sees(s) {
            count[j as usize] += 1;
        }
    }
    let total = inside.len().max(1) as f32;
    Ok(count.iter().map(|&c| c as f32 / total).collect())
}
