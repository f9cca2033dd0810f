//! Terrain reasoning on the waypoint graph (van der Sterren).
pub mod props;
