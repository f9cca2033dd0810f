//! Documented limits on every size a caller controls, and the memory check made before large
//! allocations.
//!
//! Each limit is checked before anything is allocated; going over it is an
//! [`Error::TooLarge`] naming the size, the limit and what to change. Sizes under their limit
//! are still checked against the memory this machine has available ([`Error::OutOfMemory`]),
//! and the big buffers are reserved fallibly, so nothing aborts on allocation.

use crate::{Error, Result};

/// Largest coordinate magnitude (metres) a query, observer, waypoint or vertex may have. Beyond
/// it single-precision positions are coarser than 100 m and squared distances overflow.
pub const MAX_COORDINATE: f32 = 1.0e9;
/// Cells of one ground grid (viewshed, cover field, dense cover search, waypoint sampling): 16 M
/// (a 1 km square at 0.25 m).
pub const MAX_GRID_CELLS: u64 = 1 << 24;
/// Columns of the nav builder's fine grid (a quarter of the node spacing apart): 32 M.
pub const MAX_FINE_COLUMNS: u64 = 1 << 25;
/// Pixels of one picture the CLI writes: 64 M (8192 x 8192).
pub const MAX_PICTURE_PIXELS: u64 = 1 << 26;
/// Longest side of one picture, in pixels.
pub const MAX_PICTURE_SIDE: u32 = 16_384;
/// Triangles a scene may hold (ids are 32-bit; the BVH needs 64 bytes per two triangles).
pub const MAX_TRIANGLES: u64 = 1 << 28;
/// Vertices one loaded mesh (or glTF accessor) may claim.
pub const MAX_VERTICES: u64 = 1 << 28;
/// Procedural detail level (triangles grow with its square).
pub const MAX_DETAIL: u32 = 32;
/// Shards a table may be split into.
pub const MAX_SHARDS: u32 = 1 << 16;
/// Waypoints (or nav nodes) one table or graph may hold.
pub const MAX_WAYPOINTS: u64 = 1 << 22;
/// Edges one nav graph may hold.
pub const MAX_EDGES: u64 = 1 << 26;
/// Bytes of a scene name stored in a table file.
pub const MAX_SCENE_NAME: u64 = 4096;

/// Memory the operating system says is available, in bytes (`MemAvailable` on Linux); `None`
/// where it cannot tell.
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// Allocations below this are not checked against the available memory: reading the
/// system's figures costs more than a small call (a single cover query makes several), and a
/// reservation that fails still reports [`Error::OutOfMemory`].
const UNCHECKED_BELOW: u64 = 64 << 20;

/// Refuses an allocation of `bytes` that this machine's available memory cannot hold.
pub fn check_memory(what: &str, bytes: u64, fix: &str) -> Result<()> {
    if bytes < UNCHECKED_BELOW {
        return Ok(());
    }
    match available_memory() {
        Some(available) if bytes > available => Err(Error::OutOfMemory {
            what: what.to_string(),
            needed: bytes,
            available,
            fix: fix.to_string(),
        }),
        _ => Ok(()),
    }
}

/// Refuses `requested` over `limit` with [`Error::TooLarge`].
pub fn check_size(what: &str, requested: u64, limit: u64, fix: &str) -> Result<()> {
    if requested > limit {
        return Err(Error::too_large(what, requested, limit, fix));
    }
    Ok(())
}

/// A vector of `len` copies of `value`, after checking the bytes against available memory, and
/// reserved fallibly: an allocation failure is [`Error::OutOfMemory`], not an abort. A large
/// one is filled in parallel: the first write to each fresh page costs the kernel a page
/// fault (about 15 ms for 32 MB on the two-core development machine), and the threads share
/// them.
pub fn vec_filled<T: Clone + Send + Sync>(
    len: usize,
    value: T,
    what: &str,
    fix: &str,
) -> Result<Vec<T>> {
    let mut v = vec_with_capacity(len, what, fix)?;
    if len * std::mem::size_of::<T>() >= 1 << 20 {
        use rayon::prelude::*;
        v.par_extend(rayon::iter::repeat_n(value, len));
    } else {
        v.resize(len, value);
    }
    Ok(v)
}

/// An empty vector with room for `len` elements, checked and reserved like [`vec_filled`].
pub fn vec_with_capacity<T>(len: usize, what: &str, fix: &str) -> Result<Vec<T>> {
    let bytes = (len as u64).saturating_mul(std::mem::size_of::<T>() as u64);
    check_memory(what, bytes, fix)?;
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Error::OutOfMemory {
        what: what.to_string(),
        needed: bytes,
        available: available_memory().unwrap_or(0),
        fix: fix.to_string(),
    })?;
    advise_huge_pages(&mut v);
    Ok(v)
}

/// Asks the kernel to back the allocation of `v` with huge pages where it spans whole 2 MiB
/// pages, before its first write (Linux's transparent huge pages, where the system grants
/// them on request): the first writes to a fresh buffer of many megabytes then fault once
/// every 2 MiB instead of every 4 KiB (on the two-core development machine, a guest whose
/// faults are dear, page faults were a quarter of the underlay's time). Advice only:
/// refused, it changes nothing.
pub fn advise_huge_pages<T>(v: &mut Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let size = std::mem::size_of::<T>();
        let start = v.as_mut_ptr() as usize;
        let end = start + v.capacity() * size;
        let (a, b) = (start.next_multiple_of(HUGE), end / HUGE * HUGE);
        if b > a {
            // SAFETY: `a..b` lies within this vector's allocation, and the advice changes
            // neither its contents nor its mapping's permissions, only how pages are backed.
            unsafe { libc::madvise(a as *mut libc::c_void, b - a, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}

/// Cells of a grid covering `extent` (metres, per axis) at `cell` metres, checked against
/// `limit` before any arithmetic can overflow. `name` is the parameter a user sets.
pub fn grid_cells(extent: [f32; 2], cell: f32, name: &'static str, limit: u64) -> Result<[u32; 2]> {
    if !(cell.is_finite() && cell > 0.0) {
        return Err(Error::param(
            name,
            cell,
            "a finite cell size above 0 metres",
        ));
    }
    let mut dims = [0u32; 2];
    for (d, e) in dims.iter_mut().zip(extent) {
        if !(e.is_finite() && e >= 0.0) {
            return Err(Error::InvalidInput(format!(
                "the area to grid is {e} m across; pass finite coordinates within {MAX_COORDINATE:e} m"
            )));
        }
        let n = (f64::from(e) / f64::from(cell)).ceil().max(1.0);
        *d = n.min(f64::from(u32::MAX)) as u32;
    }
    let cells = u64::from(dims[0]) * u64::from(dims[1]);
    if cells > limit {
        let smallest = (f64::from(extent[0]) * f64::from(extent[1]) / limit as f64).sqrt();
        return Err(Error::too_large(
            format!(
                "a {:.0} x {:.0} m grid at {name} {cell} m ({} x {} cells)",
                extent[0], extent[1], dims[0], dims[1]
            ),
            cells,
            limit,
            format!(
                "use {name} {:.3} or more, or a smaller area",
                smallest * 1.001
            ),
        ));
    }
    Ok(dims)
}

/// `n` bytes in words a person reads (KiB, MiB, GiB).
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} bytes")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_over_the_limit_names_the_fix() {
        let e = grid_cells([100_000.0, 100_000.0], 0.25, "--cell", MAX_GRID_CELLS).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, Error::TooLarge { limit, .. } if limit == MAX_GRID_CELLS));
        assert!(msg.contains("--cell"), "{msg}");
        assert_eq!(
            grid_cells([10.0, 5.0], 0.5, "--cell", 1000).unwrap(),
            [20, 10]
        );
        assert!(grid_cells([10.0, 5.0], 0.0, "--cell", 1000).is_err());
        assert!(grid_cells([f32::INFINITY, 5.0], 1.0, "--cell", 1000).is_err());
    }

    #[test]
    fn memory_check_refuses_what_cannot_fit() {
        if available_memory().is_some() {
            let e = vec_filled(usize::MAX / 8, 0u64, "a test buffer", "ask for less").unwrap_err();
            assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
        }
        assert_eq!(vec_filled(3, 1u8, "x", "y").unwrap(), vec![1, 1, 1]);
        assert_eq!(bytes(3 << 30), "3.0 GiB");
    }
}
