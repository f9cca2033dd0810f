//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// The folder holding the real test meshes (`dungeon.obj`, `nav_test.obj`): `$SIGHTLINE_DATA`,
/// else `../shared/data` next to the crate. Panics with a clear message if it does not exist:
/// tests that need real data must not silently pass without it.
pub fn data_dir() -> PathBuf {
    let dir = std::env::var_os("SIGHTLINE_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data")));
    assert!(
        dir.is_dir(),
        "test data folder {} does not exist; set SIGHTLINE_DATA to the folder holding dungeon.obj and nav_test.obj",
        dir.display()
    );
    dir
}
