//! Nav graphs in user files: JSON or CSV, read and written.
//!
//! **JSON**: `{"nodes": [[x, y, z], ...], "edges": [[a, b], ...]}` (node indices, 0-based),
//! with optional per-edge arrays `"kinds"` (`"stairs+water"`, `""` for none) and `"lengths"`
//! (metres of ground walked; the straight distance when absent). Other keys (those
//! [`NavGraph::to_json`] adds: costs, components) are ignored on reading.
//!
//! **CSV**: one record per line, `node,x,y,z` or `edge,a,b[,kinds[,length]]` (node indices
//! count the `node` rows from 0; kinds as in JSON, `+`, `;`, `|` or spaces between names).
//! Blank lines and lines starting with `#` are skipped; a first line starting with the field
//! name `type` is a header.
//!
//! Errors name the file and the line (CSV) or element (JSON) and say what was expected.

use super::{CostParams, Edge, EdgeKinds, NavGraph, MAX_EDGES, MAX_NODES};
use crate::{Error, Result};
use glam::Vec3;
use serde_json::{json, Value};
use std::path::Path;

/// Largest graph file read (bytes).
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// Reads a graph file: JSON when the first non-blank character is `{`, else CSV.
pub fn read_graph(path: impl AsRef<Path>, costs: &CostParams) -> Result<NavGraph> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let fail = |message: String| Error::load(name.clone(), message);
    let size = std::fs::metadata(path)
        .map_err(|e| fail(format!("cannot read the graph file: {e}")))?
        .len();
    if size > MAX_FILE_BYTES {
        return Err(fail(format!(
            "{size} bytes is more than the {MAX_FILE_BYTES} a graph file may have"
        )));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| fail(format!("cannot read the graph file: {e}")))?;
    let (nodes, edges) = if text.trim_start().starts_with('{') {
        parse_graph_json(&text, &name)?
    } else {
        parse_graph_csv(&text, &name)?
    };
    if nodes.is_empty() {
        return Err(fail(
            "no nodes: expected `node,x,y,z` lines or a JSON graph".into(),
        ));
    }
    NavGraph::new(nodes, edges, costs).map_err(|e| fail(e.to_string()))
}

fn straight(nodes: &[Vec3], a: u32, b: u32) -> f32 {
    nodes[a as usize].distance(nodes[b as usize])
}

fn check_refs(nodes: &[Vec3], edges: &mut [Edge], given_length: &[bool]) -> Result<(), String> {
    if nodes.is_empty() {
        return Err("the graph has no nodes: expected at least one node".into());
    }
    for (k, e) in edges.iter_mut().enumerate() {
        let n = nodes.len() as u32;
        if e.a >= n || e.b >= n || e.a == e.b {
            return Err(format!(
                "edge {k} ({}, {}) must join two different nodes below {n}",
                e.a, e.b
            ));
        }
        if !given_length[k] {
            e.length = straight(nodes, e.a, e.b);
        }
    }
    Ok(())
}

/// Parses a JSON graph (see the module docs) into nodes and edges.
pub fn parse_graph_json(text: &str, source: &str) -> Result<(Vec<Vec3>, Vec<Edge>)> {
    json_graph(text).map_err(|m| Error::load(source, m))
}

/// The nodes and edges of a JSON graph, or a message saying what is wrong with it.
fn json_graph(text: &str) -> Result<(Vec<Vec3>, Vec<Edge>), String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let obj = v
        .as_object()
        .ok_or("expected a JSON object {\"nodes\": [...], \"edges\": [...]}")?;
    let array = |key: &str| -> Result<&Vec<Value>, String> {
        obj.get(key)
            .ok_or_else(|| format!("missing \"{key}\""))?
            .as_array()
            .ok_or_else(|| format!("\"{key}\" must be an array"))
    };
    let (jn, je) = (array("nodes")?, array("edges")?);
    if jn.len() > MAX_NODES || je.len() > MAX_EDGES {
        return Err(format!(
            "{} nodes and {} edges: at most {MAX_NODES} nodes and {MAX_EDGES} edges",
            jn.len(),
            je.len()
        ));
    }
    let nodes = json_nodes(jn)?;
    let optional = |key: &str| -> Result<Option<&Vec<Value>>, String> {
        match obj.get(key) {
            None => Ok(None),
            Some(a) => {
                let a = a
                    .as_array()
                    .ok_or_else(|| format!("\"{key}\" must be an array"))?;
                if a.len() != je.len() {
                    return Err(format!(
                        "\"{key}\" has {} entries for {} edges",
                        a.len(),
                        je.len()
                    ));
                }
                Ok(Some(a))
            }
        }
    };
    let (kinds, lengths) = (optional("kinds")?, optional("lengths")?);
    let edges: Result<Vec<Edge>, String> = je
        .iter()
        .enumerate()
        .map(|(k, e)| json_edge(k, e, kinds, lengths))
        .collect();
    let mut edges = edges?;
    check_refs(&nodes, &mut edges, &vec![lengths.is_some(); je.len()])?;
    Ok((nodes, edges))
}

/// The `nodes` array: `[x, y, z]` each, finite and within the coordinate limit.
fn json_nodes(jn: &[Value]) -> Result<Vec<Vec3>, String> {
    jn.iter()
        .enumerate()
        .map(|(k, p)| {
            let lim = f64::from(crate::limits::MAX_COORDINATE);
            let c = numbers(p)
                .filter(|c| c.len() == 3 && c.iter().all(|x| x.abs() <= lim))
                .ok_or_else(|| {
                    format!(
                        "nodes[{k}]: expected [x, y, z] with three finite numbers within {lim:e}"
                    )
                })?;
            Ok(Vec3::new(c[0] as f32, c[1] as f32, c[2] as f32))
        })
        .collect()
}

/// Edge `k` of the `edges` array (`[a, b]`), with its kinds and length from the optional
/// `kinds` and `lengths` arrays (none and 0 without them).
fn json_edge(
    k: usize,
    e: &Value,
    kinds: Option<&Vec<Value>>,
    lengths: Option<&Vec<Value>>,
) -> Result<Edge, String> {
    let ends = numbers(e)
        .filter(|c| c.len() == 2 && c.iter().all(|&x| x >= 0.0 && x.fract() == 0.0))
        .ok_or_else(|| format!("edges[{k}]: expected [a, b] with two node indices"))?;
    let kind = match kinds.map(|a| &a[k]) {
        None => EdgeKinds::NONE,
        Some(Value::String(s)) => EdgeKinds::parse(s).map_err(|e| format!("kinds[{k}]: {e}"))?,
        Some(_) => {
            return Err(format!(
                "kinds[{k}]: expected a string like \"stairs+water\""
            ))
        }
    };
    let length = match lengths.map(|a| &a[k]) {
        None => 0.0,
        Some(l) => l
            .as_f64()
            .filter(|l| l.is_finite() && *l >= 0.0)
            .ok_or_else(|| format!("lengths[{k}]: expected a length >= 0 in metres"))?
            as f32,
    };
    Ok(Edge {
        a: ends[0].min(f64::from(u32::MAX)) as u32,
        b: ends[1].min(f64::from(u32::MAX)) as u32,
        kinds: kind,
        length,
    })
}

/// The numbers of a JSON array, `None` unless every element is a finite number.
fn numbers(v: &Value) -> Option<Vec<f64>> {
    v.as_array()?
        .iter()
        .map(|x| x.as_f64().filter(|f| f.is_finite()))
        .collect()
}

/// Parses a CSV graph (see the module docs) into nodes and edges. Errors name `source` and
/// the 1-based line.
pub fn parse_graph_csv(text: &str, source: &str) -> Result<(Vec<Vec3>, Vec<Edge>)> {
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    let mut given = Vec::new();
    for (line, fields) in crate::csv::records(text) {
        let at = |e: String| Error::load_at(source, line, format!("{e} in `{}`", fields.join(",")));
        match fields[0] {
            "node" => {
                let c = crate::csv::numbers::<3>(&fields[1..])
                    .map_err(|e| at(format!("expected node,x,y,z: {e}")))?;
                nodes.push(Vec3::from(c));
            }
            "edge" => {
                if !(3..=5).contains(&fields.len()) {
                    return Err(at("expected edge,a,b[,kinds[,length]]".into()));
                }
                let idx = |f: &str| {
                    f.parse::<u32>()
                        .map_err(|_| at(format!("`{f}` is not a node index")))
                };
                let kinds = match fields.get(3) {
                    Some(t) => EdgeKinds::parse(t).map_err(&at)?,
                    None => EdgeKinds::NONE,
                };
                let length = match fields.get(4) {
                    Some(t) => t
                        .parse::<f32>()
                        .ok()
                        .filter(|l| l.is_finite() && *l >= 0.0)
                        .ok_or_else(|| at(format!("`{t}` is not a length >= 0")))?,
                    None => 0.0,
                };
                edges.push(Edge {
                    a: idx(fields[1])?,
                    b: idx(fields[2])?,
                    kinds,
                    length,
                });
                given.push(fields.len() == 5);
            }
            other => {
                return Err(at(format!(
                    "unknown record `{other}`: expected `node` or `edge`"
                )))
            }
        }
        if nodes.len() > MAX_NODES || edges.len() > MAX_EDGES {
            return Err(at(format!(
                "more than {MAX_NODES} nodes or {MAX_EDGES} edges"
            )));
        }
    }
    check_refs(&nodes, &mut edges, &given).map_err(|m| Error::load(source, m))?;
    Ok((nodes, edges))
}

impl NavGraph {
    /// The graph as JSON (module docs), with each edge's cost and each node's component.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let comps = self.components();
        json!({
            "nodes": self.nodes().iter().map(|p| [p.x, p.y, p.z]).collect::<Vec<_>>(),
            "edges": self.edges().iter().map(|e| [e.a, e.b]).collect::<Vec<_>>(),
            "kinds": self.edges().iter().map(|e| e.kinds.names()).collect::<Vec<_>>(),
            "lengths": self.edges().iter().map(|e| e.length).collect::<Vec<_>>(),
            "costs": self.costs(),
            "components": comps.label,
            "component_sizes": comps.sizes,
        })
    }

    /// The graph as CSV (module docs), lengths included.
    #[must_use]
    pub fn to_csv(&self) -> String {
        let mut s = String::from("type,a,b,c,d\n");
        for p in self.nodes() {
            s += &format!("node,{},{},{}\n", p.x, p.y, p.z);
        }
        for e in self.edges() {
            s += &format!("edge,{},{},{},{}\n", e.a, e.b, e.kinds.names(), e.length);
        }
        s
    }
}
