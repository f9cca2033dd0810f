//! A level surveyed once for terrain reasoning: the relations between its waypoints and what is
//! known about each waypoint (light, movement, key locations, areas), the preprocessing step of
//! van der Sterren's "Processing Steps".

use super::props::{
    find_areas, find_key_locations, light_levels, movement_types, AreaParams, Areas, KeyKind,
    KeyLocation, KeyParams, LightParams, Movement,
};
use super::sniping::Site;
use super::{RelationParams, Relations};
use crate::nav::NavGraph;
use crate::{Engine, Result, Scene};

/// How a level is surveyed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SurveyParams {
    pub relations: RelationParams,
    pub light: LightParams,
    pub keys: KeyParams,
    pub areas: AreaParams,
    /// Waypoints within this many metres of a door need to deal with it (movement type).
    pub door_radius: f32,
    /// A key location counts as overlooked through its nearest waypoint within this many
    /// metres; farther ones are reported, not used.
    pub key_reach: f32,
}

impl SurveyParams {
    /// The parts' defaults; doors affect waypoints within 1.5 m, keys reach 3 m.
    #[must_use]
    pub const fn standard() -> SurveyParams {
        SurveyParams {
            relations: RelationParams::standard(),
            light: LightParams::standard(),
            keys: KeyParams::standard(),
            areas: AreaParams::standard(),
            door_radius: 1.5,
            key_reach: 3.0,
        }
    }
}

impl Default for SurveyParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// The relations and per-waypoint properties of a level.
#[derive(Clone, Debug)]
pub struct Survey {
    pub relations: Relations,
    /// Light level per waypoint, in `[0, 1]`.
    pub light: Vec<f32>,
    pub movement: Vec<Movement>,
    /// Doors and windows (found, or given).
    pub keys: Vec<KeyLocation>,
    /// The waypoint standing for each key location that has one within `key_reach`.
    pub key_nodes: Vec<u32>,
    /// Key locations with no waypoint within `key_reach` (not used by the ratings).
    pub keys_unreached: usize,
    pub areas: Areas,
}

impl Survey {
    /// Surveys `graph` on `scene`: relations ([`Relations::compute`]), light at every
    /// waypoint, key locations (`keys`, or found in the geometry), movement types, and areas
    /// (`areas`, or found from the graph). Every part traces its rays in batches.
    pub fn compute(
        engine: &Engine,
        scene: &Scene,
        graph: &NavGraph,
        p: &SurveyParams,
        keys: Option<Vec<KeyLocation>>,
        areas: Option<Areas>,
    ) -> Result<Survey> {
        Survey::compute_with_progress(engine, scene, graph, p, keys, areas, |_, _| {})
    }

    /// [`Survey::compute`], calling `progress(done, total)` while the relations are traced
    /// (the long part).
    #[allow(clippy::too_many_arguments)]
    pub fn compute_with_progress(
        engine: &Engine,
        scene: &Scene,
        graph: &NavGraph,
        p: &SurveyParams,
        keys: Option<Vec<KeyLocation>>,
        areas: Option<Areas>,
        progress: impl FnMut(u64, u64),
    ) -> Result<Survey> {
        let relations =
            Relations::compute_with_progress(engine, scene, graph, &p.relations, progress)?;
        let light = light_levels(engine, scene, graph.nodes(), &p.light)?;
        let keys = match keys {
            Some(k) => k,
            None => find_key_locations(engine, scene, graph, &p.keys)?,
        };
        if let Some(a) = &areas {
            if a.of_node.len() != graph.len() {
                return Err(crate::Error::InvalidInput(format!(
                    "the areas label {} waypoints, the graph has {}; give one area per waypoint",
                    a.of_node.len(),
                    graph.len()
                )));
            }
        }
        let areas = match areas {
            Some(a) => a,
            None => find_areas(engine, scene, graph, &keys, &p.areas)?,
        };
        let movement = movement_types(graph, &keys, p.door_radius);
        let mut key_nodes = Vec::new();
        let mut keys_unreached = 0;
        for k in &keys {
            match graph.nearest(k.position) {
                Some(w) if graph.nodes()[w as usize].distance(k.position) <= p.key_reach => {
                    key_nodes.push(w);
                }
                _ => keys_unreached += 1,
            }
        }
        key_nodes.sort_unstable();
        key_nodes.dedup();
        Ok(Survey {
            relations,
            light,
            movement,
            keys,
            key_nodes,
            keys_unreached,
            areas,
        })
    }

    /// What the sniping formula reads per waypoint, with `traffic` (levelled, one per
    /// waypoint) or none (empty).
    #[must_use]
    pub fn site(&self, traffic: Vec<f32>) -> Site {
        Site {
            light: self.light.clone(),
            free: self.movement.iter().map(|m| m.is_plain()).collect(),
            keys: self.key_nodes.clone(),
            traffic,
        }
    }

    /// Number of doors and windows.
    #[must_use]
    pub fn key_counts(&self) -> (usize, usize) {
        let doors = self.keys.iter().filter(|k| k.kind == KeyKind::Door).count();
        (doors, self.keys.len() - doors)
    }
}
