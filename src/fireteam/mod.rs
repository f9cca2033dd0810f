//! Fireteam movement (Darken, McCue and Guerrero, "Movement"): a team path by cover-weighted
//! A*, staggered look-ahead plans per member against an ETA manager, a catch-up fallback,
//! destination selection and assignment at the goal, and visual search on the team's threat
//! map while it moves.
//!
//! - [`World`]: the nav graph, line of sight between its nodes (a table computed on the
//!   graph), and each node's cover; [`PathSearch`] finds team paths and plain shortest paths.
//! - [`Planner`]: one member's greedy fixed-depth look-ahead over (node, time), priced by the
//!   seed's cost functions ([`plan`](mod@plan) lists them), refused where the [`Eta`] manager
//!   says another member holds a node.
//! - [`choose_destinations`] and [`assign`]: one node per member near the goal, assigned by
//!   Kuhn-Munkres on path lengths.
//! - [`Simulation`]: any number of teams (a squad of three fireteams, as the seed's
//!   prototype) in one event-driven run, deterministic from a seed; a [`Frame`] each time a
//!   member reaches a node.

pub mod dest;
pub mod eta;
pub mod plan;
pub mod sim;
pub mod world;

pub use dest::{assign, choose_destinations, set_score, DestParams};
pub use eta::{Eta, Stop};
pub use plan::{Plan, PlanParams, Planner, Route, Task, Terms, Weights};
pub use sim::{Frame, MemberFrame, Order, Outcome, SimParams, SimReport, Simulation};
pub use world::{
    distances_from, nearest_nodes, string_pull_point, CoverParams, Path, PathSearch, World,
};
